// Package wrapshim is the browser-use shim: it enforces the session rules, asks the manager for a browser and runs the real CLI bounded.
package wrapshim
