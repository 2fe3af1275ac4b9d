// Package fresh is a library package only the working tree (v2) has.
package fresh

// New is exported.
func New() {}
