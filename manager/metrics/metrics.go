// Package metrics is the daemon's Prometheus series and the quotas its tasks meet.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the daemon's Prometheus series, on a registry of its own (GET /metrics); the fleet's own are
// registered beside them.
type Metrics struct {
	Registry      *prometheus.Registry
	EnsureSeconds prometheus.Histogram   // the shims' ensure calls
	Events        *prometheus.CounterVec // by kind
	quota         *prometheus.CounterVec
}

// The quotas an agent's task meets (vibe_quota_hits_total's label): each refusal or cut names its knob.
const (
	QuotaReportCut = "call_report_cut"   // a call report's code or output cut to SPEC §15's bounds
	QuotaTimeline  = "timeline_bytes"    // VIBE_TIMELINE_MAX_MB: a call report refused, a step not kept
	QuotaDownloads = "download_bytes"    // VIBE_DOWNLOAD_MAX_MB: a download cancelled
	QuotaHandoffs  = "open_handoffs"     // VIBE_HANDOFF_MAX: a handoff refused
	QuotaEvents    = "events_per_minute" // VIBE_TASK_EVENTS_PER_MIN: a report or handoff refused
	QuotaAgentConn = "agent_connections" // VIBE_AGENT_CONN_MAX: an agent.sock connection closed at once
)

// quotaNames are every quota, so that each series exists (at 0) from the start.
var quotaNames = []string{QuotaReportCut, QuotaTimeline, QuotaDownloads, QuotaHandoffs, QuotaEvents, QuotaAgentConn}

// New is the daemon's series, with the fleet's registered beside them.
func New(fleet ...prometheus.Collector) *Metrics {
	reg := prometheus.NewRegistry()
	mt := &Metrics{
		Registry: reg,
		EnsureSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vibe_ensure_seconds", Help: "Latency of session ensure calls (the shim's call).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .05, .25, 1, 5, 30, 120},
		}),
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
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
	reg.MustRegister(mt.EnsureSeconds, mt.Events, mt.quota,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(fleet...)
	return mt
}

// Handler serves the series (GET /metrics).
func (mt *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(mt.Registry, promhttp.HandlerOpts{})
}

// QuotaHit counts one meeting of quota q.
func (mt *Metrics) QuotaHit(q string) { mt.quota.WithLabelValues(q).Inc() }
