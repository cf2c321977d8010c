package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"testing"

	"vibebrowser/wrapshim"
)

// pinnedExitCodes are the codes agents and prompts already depend on: never renumbered.
var pinnedExitCodes = map[string]int{"EndUsage": 2, "EndUnavailable": 69, "EndWedged": 75, "EndConfig": 78,
	"EndNoRealCLI": 127, "EndTimeout": 142, "EndNoAnswer": 79, "EndCantHelp": 80}

// TestExitCodesAreOneList reads exitcodes.go, the one list: every code there is unique, the pinned ones
// keep their numbers, the handoff codes are in it, and the README's table documents each.
func TestExitCodesAreOneList(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "exitcodes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int{}
	byNumber := map[int]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		pair, ok := n.(*ast.CompositeLit)
		if !ok || pair.Type != nil || len(pair.Elts) != 2 {
			return true
		}
		sel, isSel := pair.Elts[0].(*ast.SelectorExpr)
		lit, isLit := pair.Elts[1].(*ast.BasicLit)
		if !isSel || !isLit {
			t.Fatalf("exit code entry {%T, %T} is not a wrapshim ending and a plain number", pair.Elts[0], pair.Elts[1])
		}
		name := sel.Sel.Name
		n2, _ := strconv.Atoi(lit.Value)
		if other, dup := byNumber[n2]; dup {
			t.Errorf("exit code %d is both %s and %s", n2, other, name)
		}
		if _, dup := codes[name]; dup {
			t.Errorf("%s has two exit codes", name)
		}
		codes[name], byNumber[n2] = n2, name
		return false
	})
	for name, n := range pinnedExitCodes {
		if codes[name] != n {
			t.Errorf("%s = %d in exitcodes.go; want %d (agents depend on it)", name, codes[name], n)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range codes {
		if !regexp.MustCompile(`(?m)^\| ` + strconv.Itoa(n) + ` \|`).Match(readme) {
			t.Errorf("the README's exit code table has no row for %d (%s)", n, name)
		}
	}
}

// TestExitCode: the real CLI's own status passes on as it is; each of the shim's endings has its code.
func TestExitCode(t *testing.T) {
	for _, status := range []int{0, 1, 3, 130, 143} {
		if got := exitCode(wrapshim.Ending(status)); got != status {
			t.Errorf("exitCode(Ending(%d)) = %d; want %d (passed on)", status, got, status)
		}
	}
	for _, c := range exitCodes {
		if got := exitCode(c.end); got != c.code || c.code == 0 {
			t.Errorf("exitCode(%d) = %d; want %d, not 0", c.end, got, c.code)
		}
	}
	for end := wrapshim.Ending(-1); end >= wrapshim.EndCantHelp; end-- {
		if exitCode(end) == 0 {
			t.Errorf("exitCode(%d) = 0; every ending of the shim's needs its code in exitCodes", end)
		}
	}
}
