package manager

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the daemon's Prometheus series, on a registry of its own (GET /metrics); the fleet's own are
// registered beside them.
type metrics struct {
	registry      *prometheus.Registry
	ensureSeconds prometheus.Histogram
	events        *prometheus.CounterVec
}

func newMetrics(fleet ...prometheus.Collector) *metrics {
	reg := prometheus.NewRegistry()
	mt := &metrics{
		registry: reg,
		ensureSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vibe_ensure_seconds", Help: "Latency of session ensure calls (the shim's call).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .05, .25, 1, 5, 30, 120},
		}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vibe_events_total", Help: "Events, by kind: shims' reports and the manager's own (GET /v1/events lists the recent ones).",
		}, []string{"kind"}),
	}
	reg.MustRegister(mt.ensureSeconds, mt.events,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(fleet...)
	return mt
}

func (mt *metrics) handler() http.Handler {
	return promhttp.HandlerFor(mt.registry, promhttp.HandlerOpts{})
}
