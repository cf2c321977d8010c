// Package clientid is the one definition of a mux client id, shared by the shim, the manager's API and the mux.
package clientid

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
