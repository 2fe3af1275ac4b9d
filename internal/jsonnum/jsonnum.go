// Package jsonnum is the library's one reading of the numbers of JSON
// content (unstructured objects, decoded managedFields): which Go values
// are numbers, when they are integers, and when two are equal. JSON decoded
// by apimachinery holds int64 and float64 only; the other types come from
// content built by hand in Go (map[string]any{"replicas": 3}), and are
// accepted alike: int, int32, int64, float32 and float64.
//
// Integers compare exactly, so two int64 above 2^53 that a float64 cannot
// tell apart are different; a float is an integer when it has no fraction
// and is below 2^53 in magnitude, where float64 is exact.
//
// It is internal plumbing shared by packages compare, drift (through
// internal/managedfields) and health; it imports only the standard library.
package jsonnum

import "math"

// maxExact is 2^53: below it every integer is exactly a float64.
const maxExact = 1 << 53

// Int returns v as an integer when it is one: an int, int32 or int64, or a
// float32 or float64 with no fraction below 2^53 in magnitude.
func Int(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < maxExact {
			return int64(v), true
		}
	case float32:
		if f := float64(v); f == math.Trunc(f) && math.Abs(f) < maxExact {
			return int64(f), true
		}
	}
	return 0, false
}

// Float returns v as a float64 when it is a number: an int, int32, int64,
// float32 or float64. An int64 beyond 2^53 is rounded; compare numbers with
// [Equal], which does not round integers.
func Float(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case float32:
		return float64(v), true
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case int32:
		return float64(v), true
	}
	return 0, false
}

// Equal compares a and b as numbers. numbers is false when either is not a
// number (then equal is false too). Two integers (see [Int]) compare
// exactly; otherwise the two compare as float64, NaN equal to NaN (a value
// is equal to itself, as the same content read twice must be).
func Equal(a, b any) (equal, numbers bool) {
	if x, ok := Int(a); ok {
		if y, ok := Int(b); ok {
			return x == y, true
		}
	}
	x, ok := Float(a)
	if !ok {
		return false, false
	}
	y, ok := Float(b)
	if !ok {
		return false, false
	}
	return x == y || math.IsNaN(x) && math.IsNaN(y), true
}

// IsZero reports whether v is a number equal to zero.
func IsZero(v any) bool {
	f, ok := Float(v)
	return ok && f == 0
}
