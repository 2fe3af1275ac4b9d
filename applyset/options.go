package applyset

// Option changes one call of [Set.Apply].
type Option func(*options)

type options struct {
	plan bool
}

func newOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// Plan makes [Set.Apply] say what it would do and do none of it: the same
// reads (from the cache), the same comparisons (drift.Writer.Plan), the
// same waits and the same choice of what to prune, and no create, patch or
// delete sent, no event recorded and nothing counted. The Result is the
// plan; the same Apply without Plan, on the same objects, then sends
// exactly its writes (Result.Writes). A child that depends on a child the
// plan would write waits in the plan, as it does in the real run: what the
// server makes of a write is known only once it is made.
func Plan() Option {
	return func(o *options) { o.plan = true }
}
