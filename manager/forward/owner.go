package forward

import (
	"net"

	"github.com/rs/zerolog"

	"vibebrowser/mux/sys/sockowner"
)

// ownerListener accepts only connections whose socket belongs to uid (sockowner.Of); uid < 0 accepts all.
type ownerListener struct {
	net.Listener
	uid int
	log zerolog.Logger
}

func (l *ownerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.uid < 0 {
			return c, err
		}
		owner, err := sockowner.Of(c)
		if err == nil && (owner == l.uid || owner == sockowner.Unknown) {
			return c, nil
		}
		ev := l.log.Warn().Str("peer", c.RemoteAddr().String()).Int("want_uid", l.uid)
		if err != nil {
			ev = ev.Err(err)
		} else {
			ev = ev.Int("uid", owner)
		}
		ev.Msg("forwarder: a connection from another user than the browser's: closed")
		c.Close()
	}
}
