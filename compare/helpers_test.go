package compare_test

import (
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/reconcilekit/reconcilekit/compare"
)

// testOwner is the field owner whose entry the testdata's managedFields
// hold (captured by package drift's tests, which write as it), and
// withOwner the option that names it.
const testOwner = "drift-test"

var withOwner = compare.WithFieldOwner(testOwner)

// kube are the options package drift's writers give every comparison: the
// built-in rules and a scheme of the built-in kinds.
var kube = []compare.Option{compare.Rules(compare.KubernetesRules()...), compare.WithScheme(clientgoscheme.Scheme)}

// kdiff is compare.Diff with kube before opts: the comparison a drift
// Writer makes.
func kdiff(desired, actual any, opts ...compare.Option) (compare.Comparison, error) {
	return compare.Diff(desired, actual, append(kube[:len(kube):len(kube)], opts...)...)
}
