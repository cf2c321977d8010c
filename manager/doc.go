// Package manager is the vibe-browser daemon: stores, browsers, muxes, wrappers, task leases and the local API.
package manager
