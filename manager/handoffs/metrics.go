package handoffs

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"vibebrowser/state"
)

// handoffMetrics counts the handoffs in state by status (vibe_handoffs), read at each scrape: the counts
// survive restarts, as the handoffs do.
type handoffMetrics struct {
	db   *state.DB
	desc *prometheus.Desc
}

// Metrics is the vibe_handoffs collector.
func Metrics(db *state.DB) prometheus.Collector {
	return handoffMetrics{db: db, desc: prometheus.NewDesc("vibe_handoffs",
		"Handoffs (agents' requests for a person's help) in state, by status: pending, done, cant_help, timed_out, cancelled.",
		[]string{"status"}, nil)}
}

func (c handoffMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c handoffMetrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := c.db.CountHandoffs(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, s := range state.HandoffStatuses {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[s]), string(s))
	}
}
