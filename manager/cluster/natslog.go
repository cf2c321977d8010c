package cluster

import (
	"fmt"
	"sync/atomic"

	"github.com/rs/zerolog"
)

// natsLog passes an embedded NATS server's log to the manager's zerolog: warnings and errors as such, its
// notices and debug lines at debug level (the server's start-up chatter is no manager news), its traces
// never. It also keeps the server's last fatal line, since the server reports a listener it could not open
// only there, and the adapter must not exit the process the way the server's own logger would.
type natsLog struct {
	log   zerolog.Logger
	fatal atomic.Pointer[string]
}

func (l *natsLog) Noticef(format string, v ...any) { l.log.Debug().Msgf(format, v...) }
func (l *natsLog) Warnf(format string, v ...any)   { l.log.Warn().Msgf(format, v...) }
func (l *natsLog) Errorf(format string, v ...any)  { l.log.Error().Msgf(format, v...) }
func (l *natsLog) Debugf(format string, v ...any)  { l.log.Debug().Msgf(format, v...) }
func (l *natsLog) Tracef(string, ...any)           {}

func (l *natsLog) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.fatal.Store(&msg)
	l.log.Error().Msg(msg)
}

// lastFatal is the server's last fatal line, or "".
func (l *natsLog) lastFatal() string {
	if p := l.fatal.Load(); p != nil {
		return *p
	}
	return ""
}
