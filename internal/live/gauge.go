package live

import "github.com/prometheus/client_golang/prometheus"

// NewGauge returns the collector of a gauge whose values values computes
// when the gauge is scraped: one per name of maps, labelled map=<name>, in
// that order, or a single value, unlabelled, when maps is empty. It is the
// shape of every reconcilekit_*_entries gauge: the size of what the live
// values of a Set remember, summed over them.
func NewGauge(name, help string, maps []string, values func() []int) prometheus.Collector {
	var labels []string
	if len(maps) > 0 {
		labels = []string{"map"}
	}
	return &gauge{desc: prometheus.NewDesc(name, help, labels, nil), maps: maps, values: values}
}

type gauge struct {
	desc   *prometheus.Desc
	maps   []string
	values func() []int
}

func (g *gauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *gauge) Collect(ch chan<- prometheus.Metric) {
	vs := g.values()
	if len(g.maps) == 0 {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(vs[0]))
		return
	}
	for i, m := range g.maps {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(vs[i]), m)
	}
}
