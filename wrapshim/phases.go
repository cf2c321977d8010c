package wrapshim

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// PhasesEnv, set to the time the caller spawned the shim (Unix nanoseconds), makes the shim write how long
// each phase of its call took to stderr as it ends, one line: the benchmark's view inside a call
// (integration/bench). Unset, as for every agent, a phase mark is one branch.
const PhasesEnv = "VIBE_SHIM_PHASES"

// PhasesPrefix starts the line of phase durations: `PhasesPrefix name=ns name=ns …`.
const PhasesPrefix = "browser-use: phases:"

// phaseClock marks the end of each phase of a call; its zero value marks nothing.
type phaseClock struct {
	last  time.Time // zero: off
	names []string
	took  []time.Duration
}

// startPhases turns the clock on when environ asks for it, with a first phase "start": from the caller's
// spawn to Main (exec, the runtime's and the packages' init).
func startPhases(environ []string) *phaseClock {
	for _, kv := range environ {
		value, ok := strings.CutPrefix(kv, PhasesEnv+"=")
		if !ok {
			continue
		}
		ns, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return &phaseClock{}
		}
		c := &phaseClock{last: time.Unix(0, ns)}
		c.mark("start")
		return c
	}
	return &phaseClock{}
}

// mark ends the phase name at now.
func (c *phaseClock) mark(name string) {
	if c.last.IsZero() {
		return
	}
	now := time.Now()
	c.names, c.took = append(c.names, name), append(c.took, now.Sub(c.last))
	c.last = now
}

// print writes the phases to stderr, if the clock is on.
func (c *phaseClock) print() {
	if c.last.IsZero() {
		return
	}
	b := []byte(PhasesPrefix)
	for i, name := range c.names {
		b = append(b, ' ')
		b = append(b, name...)
		b = append(b, '=')
		b = strconv.AppendInt(b, c.took[i].Nanoseconds(), 10)
	}
	os.Stderr.Write(append(b, '\n'))
}
