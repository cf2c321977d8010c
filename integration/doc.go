// Package integration holds the end-to-end suite that drives the real binaries, real Chromium and real CDP clients.
package integration
