// Package hostname is the rule for a cluster host's name, a leaf that the configuration checks VIBE_HOST with
// without linking the cluster's engine.
package hostname

import "fmt"

// Rule is the allowed form of a host name, for errors that refuse one.
const Rule = "1 to 63 letters, digits, '-' and '.', not starting with '-' or '.'"

// Check refuses a host name outside Rule: the name is a certificate's CN, a NATS server name and a KV key.
func Check(name string) error {
	ok := len(name) >= 1 && len(name) <= 63 && name[0] != '-' && name[0] != '.'
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.'
	}
	if !ok {
		return fmt.Errorf("host name %q: want %s", name, Rule)
	}
	return nil
}
