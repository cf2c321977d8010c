// Package keeper holds a launched Chromium's DevTools pipe for as long as the browser lives, so the browser
// has no debugging port and still outlives the manager that started it (SPEC §13).
//
// `vibe-browser keep` (Main) is Chromium's parent, in its own session; Chromium runs in its own process group
// with --remote-debugging-pipe, reading fd 3 and writing fd 4 (cdpwire's NUL-ended JSON). The keeper
// listens on run/keep-<key>.sock (0600) and serves one client at a time, the store's mux:
//
//   - on accept it writes one message, its hello: {"keeper":{"format":1,"pid":P,"browser_pid":B}}; a second
//     connection while one is live gets {"keeper":{"refused":"…"}} instead and is closed;
//   - after the hello, both ways carry plain CDP messages, NUL-ended, relayed as they are: a client's
//     message over the limit is answered with an error to its id and never reaches Chromium;
//   - when the client goes, the keeper detaches every session attached through the pipe, turns target
//     discovery and auto-attach off, resets the download behaviour and drops the answers to the gone
//     client's ids, so the next client sees a fresh browser connection; events with no client are dropped.
//
// Once Chromium answered its first Browser.getVersion the keeper writes run/keep-<key>.json (Identity)
// atomically: the launcher's readiness, and what a later manager checks before it adopts the browser. The
// keeper exits when Chromium exits, after reaping it and killing what is left of its group, removing its
// socket and identity file and exiting with Chromium's status (128+n for a signal n). SIGTERM asks Chromium
// to close (Browser.close), then SIGTERMs and at last SIGKILLs its group, each step bounded.
//
// For a store with a proxy (SPEC §16) the keeper also runs its forwarder (package forward) on --forward-port,
// the upstream's URL read from its stdin, bound before Chromium starts and closed when the keeper exits; the
// upstream's failures go to run/forward-<key>.json (ForwardStatus) for the manager to show.
package keeper
