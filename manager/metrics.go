package manager

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the daemon's Prometheus series, on a registry of its own (GET /metrics).
type metrics struct {
	registry      *prometheus.Registry
	starts        *prometheus.CounterVec
	startFailures *prometheus.CounterVec
	ensureSeconds prometheus.Histogram
	events        *prometheus.CounterVec
}

func newMetrics(m *Manager) *metrics {
	reg := prometheus.NewRegistry()
	mt := &metrics{
		registry: reg,
		starts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vibe_browser_starts_total", Help: "Browsers started, by backend.",
		}, []string{"backend"}),
		startFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vibe_browser_start_failures_total", Help: "Browser starts that failed, by backend.",
		}, []string{"backend"}),
		ensureSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vibe_ensure_seconds", Help: "Latency of session ensure calls (the shim's call).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .05, .25, 1, 5, 30, 120},
		}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vibe_events_total", Help: "Events, by kind: shims' reports and the manager's own (GET /v1/events lists the recent ones).",
		}, []string{"kind"}),
	}
	for _, backend := range []string{"chrome", "cdp", "ziniao"} { // present at 0 from the start
		mt.starts.WithLabelValues(backend)
		mt.startFailures.WithLabelValues(backend)
	}
	running := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vibe_browsers_running", Help: "Browsers running under this manager.",
	}, func() float64 {
		n := 0
		for _, b := range m.slots() {
			if b.current() != nil {
				n++
			}
		}
		return float64(n)
	})
	clients := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vibe_mux_clients", Help: "Connected mux clients over every browser.",
	}, func() float64 {
		n := 0
		for _, b := range m.slots() {
			if l := b.current(); l != nil {
				n += l.mux.Stats().Clients
			}
		}
		return float64(n)
	})
	reg.MustRegister(mt.starts, mt.startFailures, mt.ensureSeconds, mt.events, running, clients,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return mt
}

func (mt *metrics) handler() http.Handler {
	return promhttp.HandlerFor(mt.registry, promhttp.HandlerOpts{})
}
