// Package mux multiplexes many CDP clients onto one browser connection, keeping each client inside its own tabs.
//
// A Mux listens on 127.0.0.1 (or is handed requests from a listener of its caller's) and serves, under
// /<token>/, a cached /json/version, an empty /json/list and WebSockets: /client-<id> for a named client,
// any other path for a discovery client with a random id. Door holds those access rules and discovery
// answers, so a caller can apply them while no mux runs.
// All clients share one upstream connection to the browser: its DevTools WebSocket, or the unix socket
// of the keeper that holds its --remote-debugging-pipe (NUL-ended messages, no WebSocket framing); only
// the transport (transport.go) differs between the two.
//
// Routing: every client message is read once, strictly (strict.go: exact keys, no key twice in any case),
// and decided by the table of methods (methods.go): forwarded as it came on the client's own sessions,
// judged and then re-encoded from what was judged (paramset.go, judges.go), or refused naming the method and
// the rule. Every client command gets a fresh int32 id (wrapping, skipping ids in flight) spliced into its
// bytes; answers get the client's id bytes back. Routing tables live under one mutex (Mux.mu).
//
// The features are types of their own, each with its state and files, registered with the core for the
// moments it acts on (features.go): the operator (Operator), downloads (downloadTracker, with the files
// side in the package mux/downloads), uploads, and the taps (Taps: the timeline's steps, the password
// texts, the jar's change signals). The core keeps routing, ownership and the upstream.
//
// Isolation: targets belong to the client that created them (createTarget, one at a time so that the
// tab and page Chrome announces meanwhile are attributed without doubt), to the owner of their opener,
// parent frame or browser context; sessions to whoever attached, child sessions to the parent session's
// owner. Discovery and browser-level auto-attach are virtual per client: the mux keeps its own
// discovery on the upstream connection, never asks Chrome to pause a target, and attaches each client to
// its own targets itself.
//
// Lifetimes: a client id outlives its connections. A newer connection takes an id over (the older is
// closed with 4409); a disconnected client keeps its tabs for a grace period; each client's send queue is
// bounded in bytes and overflow disconnects that client only. Upstream loss (a closed connection, or a
// browser silent past its probe) fails pending calls with -32603 "Browser disconnected", then the mux
// reconnects with backoff (and the relaunch hook) and rebuilds ownership from a fresh Target.getTargets.
//
// The operator (the vibe-browser UI, in process; Mux.Operator): Clients lists every client's tabs (with the titles their
// documents set, read from Chrome while someone looks: Chrome announces none), Thumbnail captures one's
// whole viewport (fresh, even of a background tab), View watches one live (a screencast acknowledged per
// frame taken, so a slow viewer gets fewer frames and never a backlog) and drives it (input, navigation,
// history), NewHumanTab and CloseHumanTab manage the tabs of the reserved client HumanClient. Operator sessions hang off a browser session of the mux's own,
// are in no client's tables and touch no client's LRU, activity or tab cap; Chrome's "attached" flag is
// shown to an owner as if the operator were not there. Human tabs are hidden from agents by ownership,
// have no tab cap and are kept while watched and for the grace period after. Cookies and SetCookies read
// and set the whole cookie jar (the manager's login checkpoints), which no client sees; the taps' (Mux.Taps)
// JarChanges and JarScripts count what may have changed it; Hooks.Launched runs on a freshly launched browser while
// clients' commands wait at a gate, so what it sets is in before any client's first command.
//
// Downloads (Config.DownloadDir): the browser-wide download behaviour is the mux's (allowAndName into
// DownloadDir/.incoming); a client's own setDownloadBehavior is recorded for it and answered {}. Each
// download belongs to the owner of the frame that started it (a subframe is looked for in the owners'
// frame trees through operator sessions), is filed when complete under DownloadDir/<owner dir>/ with a
// unique, sanitised name, also put where its client asked (<path>/<guid> for allowAndName, <path>/<name>
// for allow) before that client hears "completed", and reported to Hooks.Downloaded.
//
// The task timeline (Hooks.Timeline): each client page's creation, top-level navigations (the URL, then the
// title its document sets, read from Chrome for a while after each), a person's holds and its close, queued
// under the lock and passed on in order by one goroutine. The taps' PasswordTexts lists the texts a client inserted
// into password fields (the page is asked through an operator session once Chrome has answered the
// Input.insertText), for the manager to keep out of what it stores.
package mux
