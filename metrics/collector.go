// Package metrics exports a dablooms store's numbers to Prometheus: a
// Collector for prometheus/client_golang that reads scaling.Stats at each
// scrape. It is a module of its own, so that the library's go.mod does not
// require client_golang. docs/METRICS.md lists the metrics; dabloomsctl
// inspect --prometheus prints the same ones for node_exporter's textfile
// collector.
//
//	f, _ := scaling.Open("spam.dbl", nil)
//	prometheus.MustRegister(metrics.NewCollector(f))
//	http.Handle("/metrics", promhttp.Handler())
package metrics

import (
	"time"

	"github.com/dablooms/dablooms/internal/statmetrics"
	"github.com/dablooms/dablooms/scaling"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector collects the metrics of one open store. Each sample has a
// label file: the store's path ("" in memory), so that one registry can
// hold the collectors of several stores.
type Collector struct {
	f   *scaling.Filter
	now func() time.Time
}

// NewCollector returns a Collector of f's metrics, read from f.Stats() at
// each scrape (a closed f gives dablooms_up 0).
func NewCollector(f *scaling.Filter) *Collector {
	return &Collector{f: f, now: time.Now}
}

// Describe sends nothing: the filters' samples come and go with the chain,
// so the Collector is unchecked (see prometheus.Collector).
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect sends the store's metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.f.Stats()
	ok := st.Path != "" || st.FileSize > 0 // a closed Filter's Stats are zero
	ms := []statmetrics.Metric{statmetrics.Up(ok)}
	if ok {
		ms = append(ms, statmetrics.FromStats(st, c.now())...)
	}
	for _, m := range ms {
		typ := prometheus.GaugeValue
		if m.Counter {
			typ = prometheus.CounterValue
		}
		for _, s := range m.Samples {
			names := []string{"file"}
			values := []string{st.Path}
			for _, l := range s.Labels {
				names = append(names, l.Name)
				values = append(values, l.Value)
			}
			desc := prometheus.NewDesc(m.Name, m.Help, names, nil)
			ch <- prometheus.MustNewConstMetric(desc, typ, s.Value, values...)
		}
	}
}
