package doctor

import (
	"fmt"
	"path/filepath"
)

// state reports whether state.db can be read (read-only: a running manager is not disturbed).
func (m *machine) state() Check {
	path := filepath.Join(m.cfg.Home, "state.db")
	switch {
	case m.noState:
		return ok("state", path+" does not exist yet; vibe-browser serve creates it")
	case m.stateErr != nil:
		return fail("state", m.stateErr.Error(), "follow the message: move the file aside or use the vibe-browser that wrote it")
	}
	return ok("state", fmt.Sprintf("%s: readable, stores: %d", path, len(m.stores)))
}
