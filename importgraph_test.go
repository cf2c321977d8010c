package vibebrowser_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// shimMayImport is everything of this module the shim may link: the API contract and leaf packages with no
// daemon code. Anything more drags the daemon's code (and start-up cost) into every agent call.
var shimMayImport = map[string]bool{"vibebrowser/manager/api": true, "vibebrowser/mux/clientid": true}

// browsersMayNot is what the browser lifecycle never imports: it knows the daemon only through its hooks
// (events, the wrapper, downloads), never its API handlers' neighbours, the UI or the CLI.
var browsersMayNot = []string{"vibebrowser/manager/ui", "vibebrowser/manager/cli", "vibebrowser/manager/doctor",
	"vibebrowser/manager/service", "vibebrowser/manager/wrapper", "vibebrowser/manager/notify", "vibebrowser/manager/reaper"}

// isWireLeaf reports whether pkg is one of the leaves under the mux that the keeper and the backends link
// without the mux: the CDP wire and the small system helpers.
func isWireLeaf(pkg string) bool {
	return pkg == "vibebrowser/mux/cdpwire" || strings.HasPrefix(pkg, "vibebrowser/mux/sys/")
}

// natsPrefix is the NATS client's and server's modules: only the cluster's engine imports them (SPEC §19).
const natsPrefix = "github.com/nats-io/"

// isClusterEngine reports whether pkg is the cluster package or one under it, the only ones that import NATS.
func isClusterEngine(pkg string) bool {
	return pkg == "vibebrowser/manager/cluster" || strings.HasPrefix(pkg, "vibebrowser/manager/cluster/")
}

// errdefs is the leaf of error classes every package may import, state included.
const errdefs = "vibebrowser/mux/errdefs"

// TestImportGraph keeps the arrows pointing one way: the manager never imports the shim, the shim imports
// only the API contract and leaf packages, the mux knows nothing of the manager or its state, the browser
// lifecycle knows nothing of the daemon around it, the CLI and doctor link no daemon (only its
// configuration), and state is a leaf: the daemon's storage knows no package of the daemon's but the error
// classes (mux/errdefs, itself a leaf that imports nothing of this module). The keeper, which must outlive the
// manager, links neither the mux core nor the manager's root, and the wire and system leaves under the mux
// import nothing of the module but each other. Only manager/cluster imports NATS, the configuration does not
// link it, and the mux, state and the shim never import the cluster.
func TestImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}} |{{range .Imports}} {{.}}{{end}}", "vibebrowser/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		all, imports, _ := strings.Cut(line, " |")
		fields := strings.Fields(all)
		pkg, deps := fields[0], fields[1:]
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, natsPrefix) && !isClusterEngine(pkg) {
				t.Errorf("%s imports %s; only manager/cluster talks to NATS, so single-host code never holds a NATS handle", pkg, imp)
			}
		}
		isShim := pkg == "vibebrowser/wrapshim" || pkg == "vibebrowser/cmd/wrapshim"
		isManager := pkg == "vibebrowser/manager" || strings.HasPrefix(pkg, "vibebrowser/manager/")
		isMux := pkg == "vibebrowser/mux" || strings.HasPrefix(pkg, "vibebrowser/mux/")
		isState := pkg == "vibebrowser/state"
		isBrowsers := pkg == "vibebrowser/manager/browsers"
		isKeeper := pkg == "vibebrowser/manager/keeper"
		isClient := pkg == "vibebrowser/manager/cli" || pkg == "vibebrowser/manager/doctor"
		if isShim || isManager {
			seen++
		}
		for _, dep := range deps {
			if isManager && dep == "vibebrowser/wrapshim" {
				t.Errorf("%s imports %s; the manager must not import the shim (the shim config lives in manager/api)", pkg, dep)
			}
			if pkg == "vibebrowser/manager/config" && strings.HasPrefix(dep, natsPrefix) {
				t.Errorf("%s links %s; the configuration links no NATS, so what reads it stays light (host names: manager/cluster/hostname)", pkg, dep)
			}
			if (isMux || isState || isShim) && isClusterEngine(dep) {
				t.Errorf("%s imports %s; the mux, state and the shim know nothing of the cluster", pkg, dep)
			}
			if isMux && (dep == "vibebrowser/state" || dep == "vibebrowser/manager" || strings.HasPrefix(dep, "vibebrowser/manager/")) {
				t.Errorf("%s imports %s; the mux must import neither the manager nor state", pkg, dep)
			}
			if isBrowsers && slices.Contains(browsersMayNot, dep) {
				t.Errorf("%s imports %s; the browser lifecycle knows the daemon only through its hooks", pkg, dep)
			}
			if isClient && dep == "vibebrowser/manager" {
				t.Errorf("%s imports %s; the CLI and doctor read the daemon's configuration from manager/config, never the daemon", pkg, dep)
			}
			if isKeeper && (dep == "vibebrowser/mux" || dep == "vibebrowser/manager") {
				t.Errorf("%s imports %s; the keeper links neither the mux core nor the manager (the wire is mux/cdpwire)", pkg, dep)
			}
			if isWireLeaf(pkg) && strings.HasPrefix(dep, "vibebrowser/") && !isWireLeaf(dep) {
				t.Errorf("%s imports %s; mux/cdpwire and mux/sys import nothing of the module but each other", pkg, dep)
			}
			if isState && strings.HasPrefix(dep, "vibebrowser/") && dep != errdefs {
				t.Errorf("%s imports %s; state must import nothing of this module but %s", pkg, dep, errdefs)
			}
			if pkg == errdefs && strings.HasPrefix(dep, "vibebrowser/") {
				t.Errorf("%s imports %s; the error classes must import nothing of this module", pkg, dep)
			}
			if isShim && strings.HasPrefix(dep, "vibebrowser/") && dep != "vibebrowser/wrapshim" && !shimMayImport[dep] {
				t.Errorf("%s imports %s; the shim may import only manager/api and mux/clientid", pkg, dep)
			}
		}
	}
	if seen < 3 {
		t.Fatalf("go list named %d shim or manager packages; want the whole module", seen)
	}
}
