package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The shim starts on every agent call, and what it links and initialises before main is paid on each
// (issue 33; SPEC §8 measures it in `task bench -- -only shim`). These tests keep it from growing unnoticed:
// by what they count, not by a clock, so they do not flake.

// TestShimDependenciesStaySmall keeps the shim quick to start: no database, logger, CLI framework or websocket,
// and not even net, net/http or net/url, whose init and memory cost the shim milliseconds on every agent call;
// nor os/exec, whose first start forks a throwaway child to probe for pidfd (the shim forks with
// syscall.ForkExec); nor anything that compiles, templates or logs.
func TestShimDependenciesStaySmall(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "vibebrowser/cmd/wrapshim").Output()
	if err != nil {
		t.Fatal(err)
	}
	// maxDeps bounds the packages outside the runtime's own (37 when issue 33's fast path was measured): a new
	// one must earn its place on every agent call, and this says so when it comes.
	const maxDeps = 37
	deps := 0
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"sqlite", "zerolog", "gorilla", "alecthomas/kong", "prometheus", "crypto/",
			"compress/", "database/", "protobuf", "time/tzdata"} {
			if strings.Contains(dep, banned) {
				t.Errorf("cmd/wrapshim depends on %s; the shim must not link %s", dep, banned)
			}
		}
		switch dep {
		case "net", "net/http", "crypto/tls", "net/url", "net/netip":
			t.Errorf("cmd/wrapshim depends on %s; the shim talks to the manager over a raw unix socket", dep)
		case "os/exec":
			t.Errorf("cmd/wrapshim depends on os/exec; the shim forks its one child with syscall.ForkExec")
		case "regexp", "text/template", "html/template", "log", "log/slog", "encoding/xml", "flag", "mime":
			t.Errorf("cmd/wrapshim depends on %s; the shim's few strings need none of it", dep)
		}
		if !strings.HasPrefix(dep, "internal/") && !strings.HasPrefix(dep, "runtime") && dep != "unsafe" &&
			!strings.HasPrefix(dep, "vendor/") {
			deps++
		}
	}
	if deps > maxDeps {
		t.Errorf("cmd/wrapshim depends on %d packages outside the runtime's; want at most %d: each adds to every "+
			"agent call's start (go list -deps vibebrowser/cmd/wrapshim)", deps, maxDeps)
	}
}

// TestShimInitStaysLight keeps the work the shim's packages do before main small, as the runtime itself
// reports it (GODEBUG=inittrace=1): their allocations and bytes, which are exact for a given environment (the
// shim runs here with GODEBUG alone). This module's own packages allocate nothing at all: a map or a
// computed table in a package variable is built on every call (a fixed array or a switch is not).
func TestShimInitStaysLight(t *testing.T) {
	// 41 allocations and 3368 bytes, all the standard library's, when issue 33's fast path was measured
	// (Go 1.26): internal/godebug 12, os 9, syscall 5, encoding/base64 and unicode 4 each, …
	const maxAllocs, maxBytes = 44, 4 << 10
	bin := filepath.Join(t.TempDir(), "wrapshim")
	if out, err := exec.Command("go", "build", "-o", bin, "vibebrowser/cmd/wrapshim").CombinedOutput(); err != nil {
		t.Fatalf("build the shim: %v\n%s", err, out)
	}
	cmd := exec.Command(bin) // with no config beside it, it stops right after init
	cmd.Env = []string{"GODEBUG=inittrace=1"}
	out, _ := cmd.CombinedOutput()
	var allocs, bytes int
	var pkgs []string
	for line := range strings.Lines(string(out)) {
		// init internal/godebug @0.63 ms, 0.48 ms clock, 312 bytes, 7 allocs
		var pkg string
		var at, ms float64
		var b, a int
		if n, _ := fmt.Sscanf(line, "init %s @%f ms, %f ms clock, %d bytes, %d allocs", &pkg, &at, &ms, &b, &a); n != 5 {
			continue
		}
		allocs, bytes = allocs+a, bytes+b
		if a > 0 {
			pkgs = append(pkgs, fmt.Sprintf("%s (%d allocs, %d bytes)", pkg, a, b))
		}
		if a > 0 && (pkg == "main" || strings.HasPrefix(pkg, "vibebrowser/")) {
			t.Errorf("package %s allocates %d times (%d bytes) at init; want none: the shim's own packages "+
				"keep their tables fixed (arrays, switches), not built at start", pkg, a, b)
		}
	}
	if len(pkgs) == 0 {
		t.Fatalf("no init trace in the shim's output:\n%s", out)
	}
	if allocs > maxAllocs || bytes > maxBytes {
		t.Errorf("the shim's package init: %d allocations, %d bytes; want at most %d, %d bytes. Packages that "+
			"allocate: %s", allocs, bytes, maxAllocs, maxBytes, strings.Join(pkgs, ", "))
	}
}
