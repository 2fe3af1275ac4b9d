package follow

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// cached is the gauge reconcilekit_shard_cached_objects: the objects the
// running informers that follow a Holder's ranges hold, summed by group
// and kind (several managers in one process, as in tests, add up). It is
// registered with controller-runtime's registry, so the manager's /metrics
// serves it (docs/metrics.md).
var cached = func() *cachedCollector {
	c := &cachedCollector{
		desc: prometheus.NewDesc("reconcilekit_shard_cached_objects",
			"Objects held by the informers that follow the ranges this replica holds (follow.CacheOptions), by Member group and kind.",
			[]string{"group", "kind"}, nil),
		running: map[*follower]int{},
	}
	metrics.Registry.MustRegister(c)
	return c
}()

type cachedCollector struct {
	desc    *prometheus.Desc
	mu      sync.Mutex
	running map[*follower]int
}

func (c *cachedCollector) add(f *follower) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running[f]++
}

func (c *cachedCollector) remove(f *follower) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[f]--; c.running[f] <= 0 {
		delete(c.running, f)
	}
}

// Describe sends the gauge's description.
func (c *cachedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect sends the gauge's values.
func (c *cachedCollector) Collect(ch chan<- prometheus.Metric) {
	type series struct{ group, kind string }
	sums := map[series]int{}
	c.mu.Lock()
	for f := range c.running {
		sums[series{f.h.Group(), f.kind}] += f.cachedObjects()
	}
	c.mu.Unlock()
	for s, n := range sums {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), s.group, s.kind)
	}
}
