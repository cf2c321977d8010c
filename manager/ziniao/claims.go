package ziniao

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"vibebrowser/mux/errdefs"
)

// ErrAccountBusy is Claims.Claim's error when another Ziniao account has stores starting or running on this
// machine; it is of class errdefs.ErrConflict.
var ErrAccountBusy = errdefs.Conflict("another Ziniao account is active")

// accountBusyError names the active account's stores; its text names no class, so a caller that wraps it in
// its own class reads as before.
type accountBusyError struct{ msg string }

func (e *accountBusyError) Error() string { return e.msg }

// Unwrap makes errors.Is(err, ErrAccountBusy) and errors.Is(err, errdefs.ErrConflict) true.
func (e *accountBusyError) Unwrap() error { return ErrAccountBusy }

// Claims holds which stores of which Ziniao account are starting or running: the Ziniao client serves one
// account per machine, while stores of one account run concurrently. A claim is held from before a start
// until Release, not a lock held across the start. The zero value holds no claims; it is safe for
// concurrent use.
type Claims struct {
	mu sync.Mutex // mu guards the field below
	// byAccount maps an account ("company/username") to its claimed stores, store key → store name.
	byAccount map[string]map[string]string
}

// Claim registers store key (called name in messages) under account, refusing with an error wrapping
// ErrAccountBusy, which names the other account's stores and how to stop them, when another account holds
// claims. Claiming a held key again is not an error.
func (c *Claims) Claim(account Account, key, name string) error {
	acct := accountKey(account)
	c.mu.Lock()
	defer c.mu.Unlock()
	for other, stores := range c.byAccount {
		if other == acct || len(stores) == 0 {
			continue
		}
		names := make([]string, 0, len(stores))
		for _, n := range stores {
			names = append(names, n)
		}
		sort.Strings(names)
		return &accountBusyError{fmt.Sprintf("Ziniao account %s is active on this machine (stores %s) and the Ziniao client serves one "+
			"account at a time; stop those stores first (vibe-browser browser stop STORE) to start %s of account %s",
			other, strings.Join(names, ", "), name, acct)}
	}
	if c.byAccount == nil {
		c.byAccount = map[string]map[string]string{}
	}
	if c.byAccount[acct] == nil {
		c.byAccount[acct] = map[string]string{}
	}
	c.byAccount[acct][key] = name
	return nil
}

// Release drops store key's claim under account; releasing an unclaimed key does nothing.
func (c *Claims) Release(account Account, key string) {
	acct := accountKey(account)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byAccount[acct], key)
	if len(c.byAccount[acct]) == 0 {
		delete(c.byAccount, acct)
	}
}

// accountKey names an account for the one-account-per-machine rule: the password is not part of who it is.
func accountKey(a Account) string { return a.Company + "/" + a.Username }
