package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

func TestKeepPassesItsArgvThrough(t *testing.T) {
	argv := []string{"--key", "k", "--run-dir", "/r", "--profile", "/p", "--", "/usr/bin/chromium", "--remote-debugging-pipe", "--user-data-dir=/p", "--help"}
	var cli CLI
	parser, err := kong.New(&cli, kong.Exit(func(int) {}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse(append([]string{"keep"}, argv...)); err != nil {
		t.Fatalf("parse keep %q: %v", argv, err)
	}
	if !slices.Equal(cli.Keep.Args, argv) {
		t.Errorf("keep's args = %q; want %q, unparsed", cli.Keep.Args, argv)
	}
}

func TestKeepIsHiddenAndExitsWithTheKeepersCode(t *testing.T) {
	_, out, _ := run(t, "--help")
	if strings.Contains(out, "keep") {
		t.Errorf("--help lists keep:\n%s", out)
	}
	// The keeper refuses a command line without Chromium with its usage code, 2; kong itself says nothing.
	for _, args := range [][]string{{"keep", "--key", "k"}, {"keep", "--key", "k", "--", "/c", "--help"}} {
		code, _, errOut := run(t, args...)
		if code != 2 || errOut != "" {
			t.Errorf("%q: exit %d, stderr %q; want the keeper's 2 and nothing from the CLI", args, code, errOut)
		}
	}
}
