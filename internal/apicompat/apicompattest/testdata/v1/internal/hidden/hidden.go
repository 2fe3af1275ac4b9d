// Package hidden is internal: not compared, whatever changes.
package hidden

// Changes changes between v1 and v2 without counting.
func Changesv1() {}
