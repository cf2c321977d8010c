// Package clientid is the one definition of a mux client id, shared by the shim, the manager's API and the mux.
package clientid

import "strings"

// Form describes a valid client id, for messages.
const Form = "[A-Za-z0-9_-]{1,80}"

// MaxLen is the longest client id.
const MaxLen = 80

// Valid reports whether s has the form Form describes. (Hand-written rather than a regexp: the shim checks it
// on every agent call, and compiling a regexp at start-up costs more than the check.)
func Valid(s string) bool {
	if len(s) < 1 || len(s) > MaxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// OwnerDir is the folder, under a store's downloads, that client id's files go to: a task's --worker slot
// (<task>-wN, the form the shim gives it) shares its task's folder; every other client (a task, aux, manual,
// human, a discovery client) has the folder of its own id. id must be Valid, so the result is one safe path
// element.
func OwnerDir(id string) string {
	i := strings.LastIndex(id, "-w")
	if i <= 0 {
		return id
	}
	n := id[i+2:]
	if n == "" || n[0] == '0' {
		return id
	}
	for j := 0; j < len(n); j++ {
		if n[j] < '0' || n[j] > '9' {
			return id
		}
	}
	return id[:i]
}
