// Package gone is a library package the working tree (v2) no longer has.
package gone

// Here is exported.
func Here() {}
