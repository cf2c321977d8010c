package doctor

import (
	"runtime"
	"strings"

	"vibebrowser/state"
)

// display reports whether Chromium browsers get a window, and fails when one is set to run headed where
// there is no display to open it on (it could never start).
func (m *machine) display() Check {
	getenv := m.o.Getenv
	var where string
	switch {
	case runtime.GOOS == "darwin":
		where = "the macOS desktop"
	case getenv("WAYLAND_DISPLAY") != "":
		where = "WAYLAND_DISPLAY=" + getenv("WAYLAND_DISPLAY")
	case getenv("DISPLAY") != "":
		where = "DISPLAY=" + getenv("DISPLAY")
	}
	defaultHeadless := m.cfg.HeadlessByDefault()
	var headed []string
	if !defaultHeadless {
		headed = append(headed, "the web browser")
	}
	for _, s := range m.stores {
		if s.Backend != state.BackendChrome {
			continue
		}
		if f, err := m.cfg.StoreFacts(s); err == nil && !f.Headless {
			headed = append(headed, "store "+s.Slug)
		}
	}
	mode := "Chromium stores run headed unless added with --headless"
	if defaultHeadless {
		mode = "Chromium stores run headless unless added with --headed"
	}
	if where == "" {
		if len(headed) > 0 {
			return fail("display", "no display (DISPLAY and WAYLAND_DISPLAY are unset), but "+strings.Join(headed, ", ")+
				" would run headed: Chromium cannot open its window", "run the manager where there is a display, or set "+
				"VIBE_HEADLESS=1 (a store added with --headed keeps its own setting: remove and re-add it with --headless)")
		}
		return ok("display", "no display: "+mode)
	}
	return ok("display", where+": "+mode)
}
