package logins

import (
	"crypto/sha256"
	"time"

	"vibebrowser/manager/seal"
	"vibebrowser/mux/sys/osuser"
)

// ScriptEvery is how many checkpoint intervals apart a jar is read when only scripts ran: a client's
// command on a page may set a cookie (document.cookie), but an agent sends them without end and a read of a
// big jar costs the browser tens of milliseconds, so those are read at this slower pace. A login answer's
// Set-Cookie, a navigation, a cookie command or a takeover's end is read within one interval.
const ScriptEvery = 5

// Pace decides when a running browser's jar is read (SPEC §18): only after something may have changed it,
// at most once an interval (Due is asked once a tick), never while nothing happens. The counts are the mux's
// (mux.JarChanges and mux.JarScripts). Its zero value is ready.
type Pace struct {
	seen, seenScripts uint64    // the counts before the last read
	readAt            time.Time // the last read
	settle            bool      // the last read found a change: read once more, a Set-Cookie may land after its signal
}

// Due reports whether the jar is to be read at now, with the mux's counts changes and scripts, for a
// checkpoint every interval.
func (p *Pace) Due(now time.Time, interval time.Duration, changes, scripts uint64) bool {
	return p.settle || changes != p.seen ||
		scripts != p.seenScripts && now.Sub(p.readAt) >= ScriptEvery*interval
}

// Read records a read at now that began with the counts changes and scripts and found the jar changed or not.
func (p *Pace) Read(now time.Time, changes, scripts uint64, changed bool) {
	p.seen, p.seenScripts, p.readAt, p.settle = changes, scripts, now, changed
}

// Again makes the next Due true: the jar changed in a way the counts do not show (a restore).
func (p *Pace) Again() { p.settle = true }

// Checkpointer writes one store's checkpoints, each only when the jar differs from the one it last wrote.
type Checkpointer struct {
	Key   *seal.Key
	Home  string
	Slug  string
	Owner *osuser.User // the browser user, nil for the manager's own

	raw   [sha256.Size]byte // the bytes last read, as Chrome wrote them
	sum   [sha256.Size]byte // the jar last written (Sum)
	wrote bool
}

// Take writes raw, Chrome's JSON array of Network.Cookie read at now, as the checkpoint, unless it is the
// jar last written; it returns the bytes written, 0 when unchanged. A jar Chrome gives back byte for byte is
// not even decoded: a read of an unchanged big jar costs a hash.
func (c *Checkpointer) Take(raw []byte, now time.Time) (int, error) {
	rawSum := sha256.Sum256(raw)
	if c.wrote && rawSum == c.raw {
		return 0, nil
	}
	cookies, err := ParseCookies(raw)
	if err != nil {
		return 0, err
	}
	sum := Sum(cookies)
	if c.wrote && sum == c.sum {
		c.raw = rawSum
		return 0, nil
	}
	content := Encode(cookies, now)
	if err := WriteJar(c.Key, c.Home, c.Slug, content, c.Owner); err != nil {
		return 0, err
	}
	c.raw, c.sum, c.wrote = rawSum, sum, true
	return len(content), nil
}
