package chrome

import (
	"errors"
	"fmt"
	"strings"

	"vibebrowser/mux/errdefs"
)

// Error classes. Callers check them with errors.Is.
var (
	// ErrNoBrowser: no browser binary was found (or the explicit one does not exist); of class
	// errdefs.ErrUnavailable.
	ErrNoBrowser = errdefs.Unavailable("browser not found")
	// ErrProfileInUse: a live Chromium holds the profile; of class errdefs.ErrConflict. The error is a
	// *ProfileInUseError naming the pid.
	ErrProfileInUse = errdefs.Conflict("profile in use")
	// ErrNotAdoptable: Adopt's identity check failed; the message says which check. The manager then
	// forgets the recorded browser instead of failing a request.
	ErrNotAdoptable = errors.New("not adoptable")
	// ErrLaunch: every launch attempt failed. The error is a *LaunchError with Chromium's last stderr lines.
	// The manager maps this to 502 start failed.
	ErrLaunch = errors.New("launch failed")
	// ErrInvalid: the caller passed options Launch does not accept (a bug in the caller).
	ErrInvalid = errors.New("invalid options")
	// ErrExited: Chromium (or its keeper) exited before it was ready, as it does on a profile it refuses. A
	// *LaunchError whose last attempt ended so wraps it.
	ErrExited = errors.New("chromium exited")
	// ErrProfileUnready: the profile could not be readied for a launch (a Singleton file that cannot be
	// cleared, Preferences that cannot be written). With ErrExited, what the manager takes for a profile that
	// no longer starts (SPEC §18).
	ErrProfileUnready = errors.New("the profile could not be readied")
)

// ProfileInUseError says which live process holds a profile directory.
type ProfileInUseError struct {
	ProfileDir string
	PID        int
}

func (e *ProfileInUseError) Error() string {
	return fmt.Sprintf("profile %s is in use by a running Chromium (pid %d)", e.ProfileDir, e.PID)
}

// Unwrap makes errors.Is(err, ErrProfileInUse) and errors.Is(err, errdefs.ErrConflict) true.
func (e *ProfileInUseError) Unwrap() error { return ErrProfileInUse }

// LaunchError is returned when every launch attempt failed.
type LaunchError struct {
	Attempts int      // attempts made
	Err      error    // why the last attempt failed
	Stderr   []string // last lines of the last attempt's stderr, oldest first
}

func (e *LaunchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chromium did not start after %d attempt(s): %v", e.Attempts, e.Err)
	if len(e.Stderr) > 0 {
		b.WriteString("; stderr:\n")
		b.WriteString(strings.Join(e.Stderr, "\n"))
	}
	return b.String()
}

// Is makes errors.Is(err, ErrLaunch) true.
func (e *LaunchError) Is(target error) bool { return target == ErrLaunch }

// Unwrap returns the last attempt's error.
func (e *LaunchError) Unwrap() error { return e.Err }
