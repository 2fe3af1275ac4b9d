package applyset

import (
	"fmt"
	"strings"

	"github.com/reconcilekit/reconcilekit/health"
)

// Action is what [Set.Apply] did to a child, or, with [Plan], would do. Its
// values complete the sentence "the Set will ..." of a plan.
type Action string

const (
	// ActionCreate: the child did not exist and is created.
	ActionCreate Action = "create"
	// ActionPatch: the child drifted and its drifted fields are patched
	// (Outcome.Paths).
	ActionPatch Action = "patch"
	// ActionUnchanged: the child is as desired: nothing is sent.
	ActionUnchanged Action = "unchanged"
	// ActionWait: nothing is sent: the child waits for a child it depends
	// on, for its kind to be installed, or, for a member that left the set,
	// for its deletion to finish. Outcome.Health says what it waits for.
	ActionWait Action = "wait"
	// ActionPrune: the child left the set and is deleted.
	ActionPrune Action = "prune"
)

// Outcome is what [Set.Apply] did to one child, or would do.
type Outcome struct {
	// Ref names the child.
	Ref Ref
	// Action is what was done, or planned.
	Action Action
	// Paths are the drifted fields of an ActionPatch (as compare.Diff
	// writes them), nil otherwise.
	Paths []string
	// Corrected are the Paths another field manager had changed: drift
	// someone else made, put back by the patch. A DriftCorrected event
	// names them, and reconcilekit_drift_corrected_total counts the child.
	// The rest of Paths is the operator's own change of what it wants.
	Corrected []string
	// Health is the child's health after the Apply: by its Child.Health
	// (health.Of by default); for ActionWait, InProgress with what it
	// waits for; for ActionPrune, the child as it was found.
	Health health.Health
}

// String returns "action Kind namespace/name", then ": " and the drifted
// paths of a patch, or what a wait waits for.
func (o Outcome) String() string {
	s := string(o.Action) + " " + o.Ref.String()
	switch {
	case o.Action == ActionPatch && len(o.Paths) > 0:
		s += ": " + strings.Join(o.Paths, ", ")
	case o.Action == ActionWait:
		s += ": " + o.Health.Message
	}
	return s
}

// Result is what [Set.Apply] did to a parent's set, or, with [Plan], would
// do.
type Result struct {
	// Children has one Outcome per desired child, in the order the Set
	// went through them (dependencies first, then by kind: Namespaces and
	// CustomResourceDefinitions first), then one per member that left the
	// set: pruned now, or waiting for its deletion to finish.
	Children []Outcome
	// Parent is ActionPatch when the parent's KEP-3659 labels and
	// annotations are written (ParentPaths names them), ActionUnchanged
	// otherwise.
	Parent Action
	// ParentPaths are the labels and annotations of the parent's patch.
	ParentPaths []string
	// Kept are objects that carry the parent's PartOfLabel but that the
	// Set did not write (its field owner does not own the label: someone
	// copied it), or that another owner controls: they are never deleted.
	Kept []Ref
}

// Health returns the health of the set as a parent reports it: the worst
// of its children's ([health.Summarize]), in the order of Children, so a
// child waiting for another, a kind not installed yet or a member whose
// deletion has not finished makes it InProgress, naming the child and what
// it waits for. Give it to reconcile.Progress.WithChildren, or health.Mark.
func (r Result) Health() health.Health {
	hs := make([]health.Health, len(r.Children))
	for i, o := range r.Children {
		hs[i] = o.Health
	}
	return health.Summarize(hs...)
}

// Writes returns how many writes the Apply sent, or, planned, would send:
// a create, a patch or a delete per child, and the parent's patch.
func (r Result) Writes() int {
	n := 0
	if r.Parent == ActionPatch {
		n++
	}
	for _, o := range r.Children {
		switch o.Action {
		case ActionCreate, ActionPatch, ActionPrune:
			n++
		}
	}
	return n
}

// String returns one line per child that is not unchanged (its Outcome's
// String), the parent's patch first, and "unchanged" when nothing is to
// be written or waited for: a plan to print.
func (r Result) String() string {
	var b strings.Builder
	if r.Parent == ActionPatch {
		fmt.Fprintf(&b, "patch parent: %s\n", strings.Join(r.ParentPaths, ", "))
	}
	for _, o := range r.Children {
		if o.Action != ActionUnchanged {
			b.WriteString(o.String())
			b.WriteByte('\n')
		}
	}
	if b.Len() == 0 {
		return "unchanged"
	}
	return strings.TrimSuffix(b.String(), "\n")
}
