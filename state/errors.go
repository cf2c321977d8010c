package state

import (
	"errors"
	"fmt"

	"vibebrowser/mux/errdefs"
)

// State's errors wrap the classes of errdefs: errdefs.ErrNotFound (the store, browser session, task, port or
// setting does not exist), errdefs.ErrConflict (a unique name, slug or id is held by another store, or the
// slug is reserved: a *ConflictError naming the holder), errdefs.ErrInvalid (a value the schema does not
// accept: name, slug, backend, status…) and errdefs.ErrUnavailable (no port at or above the base passed the
// caller's bind test). The two below are state's own: they say what is wrong with the file.
var (
	// ErrForeignFile: the state file is not SQLite, or is SQLite written by another application.
	// Open never re-creates such a file: the user moves it aside.
	ErrForeignFile = errors.New("not a vibe-browser state database")
	// ErrTooNew: the state file was migrated by a newer vibe-browser than this one.
	ErrTooNew = errors.New("state written by a newer vibe-browser")
)

// ConflictError says which unique value collided and who holds it.
// errors.Is(err, errdefs.ErrConflict) reports true for it.
type ConflictError struct {
	What      string // the contested field: "name", "slug" or "id"
	Value     string // the contested value
	Owner     string // the holder's id (a store id or a port registry key); empty when Rule is set
	OwnerName string // the holding store's name, when the holder is a store
	Rule      string // the reservation rule, when no store holds Value but the rules forbid it
}

func (e *ConflictError) Error() string {
	switch {
	case e.Rule != "":
		return fmt.Sprintf("%s %q is reserved: %s", e.What, e.Value, e.Rule)
	case e.OwnerName != "":
		return fmt.Sprintf("%s %q is taken by store %q (id %s)", e.What, e.Value, e.OwnerName, e.Owner)
	default:
		return fmt.Sprintf("%s %q is taken by %s", e.What, e.Value, e.Owner)
	}
}

// Is makes errors.Is(err, errdefs.ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == errdefs.ErrConflict }
