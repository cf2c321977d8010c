// Package keeper holds a launched Chromium's DevTools pipe for as long as the browser lives, so the browser
// has no debugging port and still outlives the manager that started it (SPEC §13).
//
// `vibe-browser keep` (Main) is Chromium's parent, in its own session; Chromium runs in its own process group
// with --remote-debugging-pipe, reading fd 3 and writing fd 4 (cdpwire's NUL-ended JSON). The keeper
// listens on run/keep-<key>.sock (0600) and lends the pipe to one client at a time, the store's mux:
//
//   - on accept it writes one message, its hello: {"keeper":{"format":2,"pid":P,"browser_pid":B}}, with the
//     pipe's two ends (SCM_RIGHTS: the write end Chromium reads, then the read end it writes), and "skip":true
//     when the keeper stopped reading inside a message, whose rest the client drops; a second connection while
//     one holds the pipe gets {"keeper":{"refused":"…"}} instead and is closed;
//   - the client is then the pipe's only reader and writer, and the connection carries nothing; the keeper
//     keeps its own ends idle and watches it;
//   - when the client goes (its end of the connection closed), the keeper takes the pipe back: a NUL ends a
//     message the client left half-written, and the keeper reads Chromium's messages again, dropping all but
//     the answers to its own commands, until the next client. The client makes its browser connection fresh
//     itself (the mux detaches what a client before it left attached).
//
// Once Chromium answered its first Browser.getVersion the keeper writes run/keep-<key>.json (Identity)
// atomically: the launcher's readiness, and what a later manager checks before it adopts the browser. The
// keeper exits when Chromium exits, after reaping it and killing what is left of its group, removing its
// socket and identity file and exiting with Chromium's status (128+n for a signal n). SIGTERM asks the client for
// the pipe back (the keeper closes its side; bounded), then Chromium to close (Browser.close), then SIGTERMs
// and at last SIGKILLs its group, each step bounded.
//
// For a store with a proxy (SPEC §16) the keeper also runs its forwarder (package forward) on --forward-port,
// the upstream's URL read from its stdin, bound before Chromium starts and closed when the keeper exits; the
// upstream's failures go to run/forward-<key>.json (ForwardStatus) for the manager to show.
package keeper
