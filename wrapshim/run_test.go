package wrapshim

import (
	"os/exec"
	"slices"
	"testing"
)

func TestDedupEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		want    []string
		wantErr bool
	}{
		{"none", nil, []string{}, false},
		{"distinct", []string{"A=1", "B=2"}, []string{"A=1", "B=2"}, false},
		{"last wins, in its place", []string{"A=1", "B=2", "A=3"}, []string{"B=2", "A=3"}, false},
		{"empty value counts", []string{"A=1", "A="}, []string{"A="}, false},
		{"case matters", []string{"a=1", "A=2"}, []string{"a=1", "A=2"}, false},
		{"a name starting with =", []string{"=C:=x", "=C:=y", "C:=z"}, []string{"=C:=y", "C:=z"}, false},
		{"an empty name", []string{"=x", "A=1", "=y"}, []string{"A=1", "=y"}, false},
		{"no = kept, empty dropped", []string{"junk", "", "A=1", "junk"}, []string{"junk", "A=1", "junk"}, false},
		{"NUL refused", []string{"A=1", "B=x\x00y"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dedupEnv(slices.Clone(tt.env)) // it compacts its argument in place
			if (err != nil) != tt.wantErr || (!tt.wantErr && !slices.Equal(got, tt.want)) {
				t.Errorf("dedupEnv(%q) = %q, %v; want %q (error %v)", tt.env, got, err, tt.want, tt.wantErr)
			}
			// What the child sees is what os/exec, which the shim used before, would have given it.
			if cmd := (&exec.Cmd{Env: tt.env}); tt.env != nil && !tt.wantErr && !slices.Equal(got, cmd.Environ()) {
				t.Errorf("dedupEnv(%q) = %q; os/exec gives %q", tt.env, got, cmd.Environ())
			}
		})
	}
}
