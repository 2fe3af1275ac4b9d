package applyset

import "k8s.io/apimachinery/pkg/types"

// WaitingFor returns the parents s remembers as waiting for a kind of
// group, sorted: what the tests of forgetting look at.
func WaitingFor(s *Set, group string) []types.NamespacedName {
	return s.waiting.waiting(group)
}
