package drift

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// config is the resolved set of Options.
type config struct {
	diff           diffConfig
	owner          client.Object
	optimisticLock bool
	hotLoops       *HotLoopDetector
	force          bool
	replaces       []string // Replaces
}

// newConfig resolves the options of a write.
func newConfig(opts []Option) *config {
	cfg := &config{}
	for _, o := range opts {
		o(cfg)
	}
	// Status belongs to the status subresource: Ensure never compares or
	// writes it through the main resource.
	cfg.diff.compareStatus = false
	if cfg.owner != nil {
		cfg.diff.compareOwnerRefs = true
	}
	return cfg
}

// check returns the error of an Ensure whose options cannot work: an
// invalid path, or no field owner.
func (c *config) check(verb string, obj client.Object) error {
	if c.diff.err != nil {
		return c.diff.err
	}
	return c.checkFieldOwner(verb, obj)
}

// Owner makes the owner the controller of the ensured object: the object is
// created with a controller reference to owner, and an existing object
// without it gets it patched in. An object controlled by another owner is an
// error. owner must be in the client's scheme and, for a namespaced object,
// be cluster-scoped or in the same namespace.
func Owner(owner client.Object) Option {
	return func(c *config) { c.owner = owner }
}

// OptimisticLock makes patches carry the live object's resourceVersion, so a
// patch fails with a Conflict when someone else wrote the object between the
// read and the write. Without it the patch touches only the drifted fields,
// which is safe without a lock for fields, maps and, in strategic merge
// patches of built-in types, keyed lists; a JSON merge patch (custom
// resources, unstructured objects) that carries a list replaces the list
// whole, so Ensure locks such a patch even without this option.
// [EnsureApplied] ignores it: server-side apply detects conflicting writers
// per field.
func OptimisticLock() Option {
	return func(c *config) { c.optimisticLock = true }
}

// DetectHotLoops makes Ensure report drifts to d, which stops patching an
// object whose same fields keep drifting back. One detector should be shared
// by all reconciles of a controller.
func DetectHotLoops(d *HotLoopDetector) Option {
	return func(c *config) { c.hotLoops = d }
}

// ForceOwnership makes [EnsureApplied] take over fields another field manager
// owns instead of failing with a conflict.
func ForceOwnership() Option {
	return func(c *config) { c.force = true }
}
