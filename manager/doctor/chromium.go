package doctor

import (
	"context"

	"vibebrowser/manager/chrome"
)

// chromium finds the browser the chrome backend would launch (chrome.Find: VIBE_CHROME, else PATH, else the
// macOS app) and asks its version.
func (m *machine) chromium(ctx context.Context) Check {
	path, err := chrome.Find(m.cfg.Chrome)
	if err != nil {
		fix := "install Chromium (Debian/Ubuntu: apt install chromium) or set VIBE_CHROME to its absolute path"
		if m.cfg.Chrome != "" {
			fix = "point VIBE_CHROME at an executable Chromium or Chrome, or unset it to search PATH"
		}
		return fail("chromium", err.Error(), fix)
	}
	where := path + " (on PATH)"
	if m.cfg.Chrome != "" {
		where = path + " (VIBE_CHROME)"
	}
	version, err := firstLine(ctx, path, "--version")
	if err != nil {
		return warn("chromium", where+": --version failed: "+err.Error(),
			"check that "+path+" starts at all (a missing library shows here), or point VIBE_CHROME at another build")
	}
	return ok("chromium", where+": "+version)
}
