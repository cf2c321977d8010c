// Package main is the wrapshim binary, installed by the manager as each store's browser-use command.
//
// It starts on every agent call, so it keeps the runtime from starting what it does not need:
// updatemaxprocs=0 spares it the goroutine that follows CPU-limit changes to adjust GOMAXPROCS (a call's
// few goroutines need no such tuning).
//
//go:debug updatemaxprocs=0
package main

import (
	"os"

	"vibebrowser/wrapshim"
)

func main() {
	os.Exit(exitCode(wrapshim.Main(os.Args[1:], exitCode)))
}
