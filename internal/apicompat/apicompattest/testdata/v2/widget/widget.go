// Package widget is the library package of the synthetic module the
// checker's tests compare: v1 is the release, v2 the working tree.
package widget

// Make makes a widget of a size: an incompatible change of signature.
func Make(name string, size int) string { return name }

// Box holds a widget; its Label field is gone and Open is gone.
type Box struct {
	Size int
}

// Keep does not change.
func Keep() {}

// Wrap is new: a compatible change.
func Wrap() {}
