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
	quota         *prometheus.CounterVec
}

// The quotas an agent's task meets (vibe_quota_hits_total's label): each refusal or cut names its knob.
const (
	quotaReportCut = "call_report_cut"   // a call report's code or output cut to SPEC §15's bounds
	quotaTimeline  = "timeline_bytes"    // VIBE_TIMELINE_MAX_MB: a call report refused, a step not kept
	quotaDownloads = "download_bytes"    // VIBE_DOWNLOAD_MAX_MB: a download cancelled
	quotaHandoffs  = "open_handoffs"     // VIBE_HANDOFF_MAX: a handoff refused
	quotaEvents    = "events_per_minute" // VIBE_TASK_EVENTS_PER_MIN: a report or handoff refused
	quotaAgentConn = "agent_connections" // VIBE_AGENT_CONN_MAX: an agent.sock connection closed at once
)

// quotaNames are every quota, so that each series exists (at 0) from the start.
var quotaNames = []string{quotaReportCut, quotaTimeline, quotaDownloads, quotaHandoffs, quotaEvents, quotaAgentConn}

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
		quota: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vibe_quota_hits_total",
			Help: "Times a task met a quota, by quota: a call report cut, a report, handoff or call report refused, a download cancelled, an agent.sock connection closed.",
		}, []string{"quota"}),
	}
	for _, q := range quotaNames {
		mt.quota.WithLabelValues(q)
	}
	reg.MustRegister(mt.ensureSeconds, mt.events, mt.quota,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(fleet...)
	return mt
}

func (mt *metrics) handler() http.Handler {
	return promhttp.HandlerFor(mt.registry, promhttp.HandlerOpts{})
}

// quotaHit counts one meeting of quota q.
func (mt *metrics) quotaHit(q string) { mt.quota.WithLabelValues(q).Inc() }
