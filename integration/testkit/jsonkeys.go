package testkit

import (
	"bytes"
	"encoding/json"
)

// HasDupKeys reports whether data, a JSON object, repeats a top-level key (or is no object), where
// encoding/json (last wins) and a first-match scanner may legitimately differ.
func HasDupKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return true
	}
	seen := map[string]bool{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return true
		}
		ks, _ := k.(string)
		if seen[ks] {
			return true
		}
		seen[ks] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return true
		}
	}
	return false
}
