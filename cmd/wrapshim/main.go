// Package main is the wrapshim binary, installed by the manager as each store's browser-use command.
package main

import (
	"os"

	"vibebrowser/wrapshim"
)

func main() {
	os.Exit(wrapshim.Main(os.Args[1:]))
}
