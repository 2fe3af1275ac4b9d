package jsonnum_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/reconcilekit/reconcilekit/internal/jsonnum"
)

func TestInt(t *testing.T) {
	tests := []struct {
		in   any
		want int64
		ok   bool
	}{
		{int64(1<<53 + 1), 1<<53 + 1, true},
		{int64(math.MaxInt64), math.MaxInt64, true},
		{int(-7), -7, true},
		{int32(42), 42, true},
		{float64(3), 3, true},
		{float32(3), 3, true},
		{float32(-16777216), -16777216, true},
		{float64(2.5), 0, false},
		{float32(2.5), 0, false},
		{float64(1 << 53), 0, false}, // not exact any more: a float
		{math.NaN(), 0, false},
		{math.Inf(1), 0, false},
		{"3", 0, false},
		{true, 0, false},
		{nil, 0, false},
		{uint(3), 0, false}, // not a type JSON content holds
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%T(%v)", tt.in, tt.in), func(t *testing.T) {
			got, ok := jsonnum.Int(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Int = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestFloat(t *testing.T) {
	for _, in := range []any{int64(2), int(2), int32(2), float32(2), float64(2)} {
		if got, ok := jsonnum.Float(in); !ok || got != 2 {
			t.Errorf("Float(%T(2)) = %v, %v; want 2, true", in, got, ok)
		}
	}
	if got, ok := jsonnum.Float(float32(0.1)); !ok || got != float64(float32(0.1)) {
		t.Errorf("Float(float32(0.1)) = %v, %v", got, ok)
	}
	for _, in := range []any{"2", false, nil, []any{}, map[string]any{}} {
		if _, ok := jsonnum.Float(in); ok {
			t.Errorf("Float(%T) is a number", in)
		}
	}
}

// TestEqual: integers compare exactly, beyond 2^53 too; every number type
// of JSON content compares by value with every other, float32 included.
func TestEqual(t *testing.T) {
	big := int64(1<<53 + 1)
	tests := []struct {
		name        string
		a, b        any
		eq, numbers bool
	}{
		{"big int64s that a float64 rounds alike", big, big - 1, false, true},
		{"the same big int64", big, big, true, true},
		{"int64 and int", int64(80), int(80), true, true},
		{"int32 and float64", int32(80), float64(80), true, true},
		{"float32 and int64", float32(80), int64(80), true, true},
		{"float32 and float64 of a fraction", float32(0.5), float64(0.5), true, true},
		{"float32 and float64 of an inexact fraction", float32(0.1), float64(0.1), false, true},
		{"different floats", 0.5, 0.25, false, true},
		{"NaN is itself", math.NaN(), math.NaN(), true, true},
		{"NaN and a number", math.NaN(), 1.0, false, true},
		{"a number and a string", int64(1), "1", false, false},
		{"a string and a number", "1", int64(1), false, false},
		{"nil", nil, nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eq, numbers := jsonnum.Equal(tt.a, tt.b)
			if eq != tt.eq || numbers != tt.numbers {
				t.Errorf("Equal(%T(%v), %T(%v)) = %v, %v; want %v, %v", tt.a, tt.a, tt.b, tt.b, eq, numbers, tt.eq, tt.numbers)
			}
			if eq2, numbers2 := jsonnum.Equal(tt.b, tt.a); eq2 != eq || numbers2 != numbers {
				t.Errorf("Equal is not symmetric: %v, %v the other way", eq2, numbers2)
			}
		})
	}
}

func TestIsZero(t *testing.T) {
	for _, in := range []any{int64(0), int(0), int32(0), float32(0), float64(0), math.Copysign(0, -1)} {
		if !jsonnum.IsZero(in) {
			t.Errorf("IsZero(%T(%v)) = false", in, in)
		}
	}
	for _, in := range []any{int64(1), float32(0.5), "", false, nil} {
		if jsonnum.IsZero(in) {
			t.Errorf("IsZero(%T(%v)) = true", in, in)
		}
	}
}
