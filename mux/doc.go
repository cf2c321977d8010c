// Package mux multiplexes many CDP clients onto one browser connection, keeping each client inside its own tabs.
package mux
