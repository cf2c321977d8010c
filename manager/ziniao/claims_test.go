package ziniao

import (
	"errors"
	"testing"

	"vibebrowser/mux/errdefs"
)

func TestClaims(t *testing.T) {
	shop := Account{Company: "acme", Username: "ops", Password: "p1"}
	other := Account{Company: "acme", Username: "night", Password: "p2"}
	var c Claims // the zero value is ready

	for _, s := range []struct{ key, name string }{{"k2", "zeta"}, {"k1", "alpha"}, {"k3", "mid"}} {
		if err := c.Claim(shop, s.key, s.name); err != nil {
			t.Fatalf("Claim(acme/ops, %s) = %v; want stores of one account to coexist", s.key, err)
		}
	}
	// The password is not part of the account's identity.
	if err := c.Claim(Account{Company: "acme", Username: "ops", Password: "rotated"}, "k4", "four"); err != nil {
		t.Fatalf("Claim(acme/ops with another password) = %v; want the same account", err)
	}
	c.Release(shop, "k4")

	err := c.Claim(other, "k9", "late")
	const want = "Ziniao account acme/ops is active on this machine (stores alpha, mid, zeta) and the Ziniao client serves one " +
		"account at a time; stop those stores first (vibe-browser browser stop STORE) to start late of account acme/night"
	if err == nil || err.Error() != want || !errors.Is(err, ErrAccountBusy) || !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("Claim(acme/night) = %v; want ErrAccountBusy (a conflict) %q", err, want)
	}

	c.Release(shop, "k1")
	c.Release(shop, "k2")
	if err := c.Claim(other, "k9", "late"); !errors.Is(err, ErrAccountBusy) {
		t.Fatalf("Claim(acme/night) with one acme/ops store left = %v; want ErrAccountBusy", err)
	}
	c.Release(shop, "k3")
	c.Release(shop, "k3") // twice is harmless
	if err := c.Claim(other, "k9", "late"); err != nil {
		t.Fatalf("Claim(acme/night) after every acme/ops store is released = %v; want nil", err)
	}
	if err := c.Claim(shop, "k1", "alpha"); !errors.Is(err, ErrAccountBusy) {
		t.Fatalf("Claim(acme/ops) while acme/night runs = %v; want ErrAccountBusy", err)
	}
}
