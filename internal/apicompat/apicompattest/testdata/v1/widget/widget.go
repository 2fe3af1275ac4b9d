// Package widget is the library package of the synthetic module the
// checker's tests compare: v1 is the release, v2 the working tree.
package widget

// Make makes a widget.
func Make(name string) string { return name }

// Box holds a widget.
type Box struct {
	Size  int
	Label string
}

// Open opens the box.
func (b *Box) Open() error { return nil }

// Keep does not change.
func Keep() {}
