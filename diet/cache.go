package diet

import (
	"maps"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheOptions returns base with every cache of the manager on the diet of
// [ManagedFields]: the one line an operator adds to its manager's options.
//
//	opts, err := diet.CacheOptions(cache.Options{ByObject: ...}, "app-controller")
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
//
// The transform becomes base's DefaultTransform (after base's own, when it
// has one), and runs after the Transform of every ByObject and
// DefaultNamespaces entry that has its own (a [Fields] transform among
// them: ManagedFields keeps the entry it leaves). base's maps are not
// changed. After ManagedFields, the strings many objects hold alike share
// one copy ([Intern]), and the parts [Fields] transforms leave are stored
// compact ([Compact]). fieldOwner is the name the operator's writers write
// under; an empty one is an error wrapping errors.ErrNoFieldOwner.
func CacheOptions(base cache.Options, fieldOwner string, opts ...Option) (cache.Options, error) {
	mf, err := ManagedFields(fieldOwner, opts...)
	if err != nil {
		return cache.Options{}, err
	}
	mf = then(mf, Intern())
	base.DefaultTransform = then(base.DefaultTransform, mf)
	if base.ByObject != nil {
		byObject := make(map[client.Object]cache.ByObject, len(base.ByObject))
		for obj, bo := range base.ByObject {
			if bo.Transform != nil {
				bo.Transform = then(bo.Transform, mf)
			}
			if bo.Namespaces != nil {
				bo.Namespaces = withTransform(bo.Namespaces, mf)
			}
			byObject[obj] = bo
		}
		base.ByObject = byObject
	}
	if base.DefaultNamespaces != nil {
		base.DefaultNamespaces = withTransform(base.DefaultNamespaces, mf)
	}
	return Compact(base), nil
}

// withTransform returns a copy of namespaces whose entries with a Transform
// of their own run mf after it.
func withTransform(namespaces map[string]cache.Config, mf toolscache.TransformFunc) map[string]cache.Config {
	out := maps.Clone(namespaces)
	for ns, c := range out {
		if c.Transform != nil {
			c.Transform = then(c.Transform, mf)
			out[ns] = c
		}
	}
	return out
}

// then returns a transform running first and then second; first may be
// nil.
func then(first, second toolscache.TransformFunc) toolscache.TransformFunc {
	if first == nil {
		return second
	}
	return func(in any) (any, error) {
		out, err := first(in)
		if err != nil {
			return nil, err
		}
		return second(out)
	}
}
