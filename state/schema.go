package state

// applicationID marks a SQLite file as ours ("vibe"), so Open can tell its own state from
// another application's database that happens to sit at the same path.
const applicationID = 0x76696265

// migrations[i] takes the schema from user_version i to i+1. Append only: a released entry is
// never edited, since databases in the field have already run it. Times are Unix nanoseconds;
// NULL means "not set".
var migrations = []string{
	// 1: the initial schema.
	`
PRAGMA application_id = 1986617957;

CREATE TABLE stores (
	id               TEXT PRIMARY KEY,
	name             TEXT NOT NULL UNIQUE,
	slug             TEXT NOT NULL UNIQUE,
	backend          TEXT NOT NULL CHECK (backend IN ('chrome', 'ziniao', 'cdp')),
	config           TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(config)),
	token            TEXT NOT NULL,
	ziniao_company   TEXT NOT NULL DEFAULT '',
	ziniao_username  TEXT NOT NULL DEFAULT '',
	ziniao_password  TEXT NOT NULL DEFAULT '',
	ziniao_browser   TEXT NOT NULL DEFAULT '',
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL
) STRICT;

-- key is a store id or '_web'; rows of a store are deleted with it (DeleteStore).
CREATE TABLE browser_sessions (
	key             TEXT PRIMARY KEY,
	pid             INTEGER NOT NULL DEFAULT 0,
	pid_start_time  INTEGER,
	cdp_endpoint    TEXT NOT NULL DEFAULT '',
	status          TEXT NOT NULL CHECK (status IN ('running', 'stopped')),
	adopted         INTEGER NOT NULL DEFAULT 0 CHECK (adopted IN (0, 1)),
	started_at      INTEGER,
	stopped_at      INTEGER,
	updated_at      INTEGER NOT NULL
) STRICT;

CREATE TABLE tasks (
	id           TEXT PRIMARY KEY,
	store_id     TEXT REFERENCES stores (id) ON DELETE CASCADE,
	status       TEXT NOT NULL CHECK (status IN
	                ('pending', 'queued', 'designing', 'planned', 'running', 'waiting', 'completed', 'failed')),
	lease_until  INTEGER,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX tasks_store ON tasks (store_id);

-- One registry for every proxy port: a port is never shared between two keys, a key has one port.
CREATE TABLE ports (
	port        INTEGER PRIMARY KEY CHECK (port BETWEEN 1 AND 65535),
	key         TEXT NOT NULL UNIQUE,
	created_at  INTEGER NOT NULL
) STRICT;

-- Mux tab ownership per browser, so an adopting manager gives every client its tabs back.
-- seq keeps each client's targets in the order the mux saved them.
CREATE TABLE mux_targets (
	browser_key  TEXT NOT NULL,
	target_id    TEXT NOT NULL,
	client_id    TEXT NOT NULL,
	seq          INTEGER NOT NULL,
	PRIMARY KEY (browser_key, target_id)
) STRICT;

CREATE TABLE relaunch_attempts (
	id   INTEGER PRIMARY KEY,
	key  TEXT NOT NULL,
	at   INTEGER NOT NULL
) STRICT;
CREATE INDEX relaunch_attempts_key_at ON relaunch_attempts (key, at);

CREATE TABLE settings (
	key    TEXT PRIMARY KEY,
	value  TEXT NOT NULL
) STRICT;
`,
	// 2: the version object each browser last answered, so a sleeping store's endpoint answers discovery.
	`
-- key is a store id or '_web'; rows of a store are deleted with it (DeleteStore). version is the browser's
-- /json/version object without its webSocketDebuggerUrl.
CREATE TABLE browser_versions (
	key      TEXT PRIMARY KEY,
	version  TEXT NOT NULL CHECK (json_valid(version) AND json_type(version) = 'object'),
	seen_at  INTEGER NOT NULL
) STRICT;
`,
	// 3: downloads (SPEC §12), one row per finished download. browser_key is a store id or '_web'; a
	// store's rows go with it (DeleteStore). owner_dir is the folder under downloads/<slug>/ that holds it.
	`
CREATE TABLE downloads (
	id           INTEGER PRIMARY KEY,
	browser_key  TEXT NOT NULL,
	task_id      TEXT NOT NULL DEFAULT '',
	client_id    TEXT NOT NULL DEFAULT '',
	owner_dir    TEXT NOT NULL,
	guid         TEXT NOT NULL,
	url          TEXT NOT NULL DEFAULT '',
	name         TEXT NOT NULL,
	path         TEXT NOT NULL,
	size         INTEGER NOT NULL CHECK (size >= 0),
	sha256       TEXT NOT NULL,
	at           INTEGER NOT NULL
) STRICT;
CREATE INDEX downloads_task ON downloads (task_id, at);
CREATE INDEX downloads_key ON downloads (browser_key, at);
`,
	// 4: handoffs, an agent's request for a person's help (SPEC §11). store_id NULL is the web browser.
	`
CREATE TABLE handoffs (
	id           TEXT PRIMARY KEY,
	store_id     TEXT REFERENCES stores (id) ON DELETE CASCADE,
	task_id      TEXT NOT NULL DEFAULT '',
	client_id    TEXT NOT NULL,
	bu_name      TEXT NOT NULL,
	reason       TEXT NOT NULL,
	status       TEXT NOT NULL CHECK (status IN ('pending', 'done', 'cant_help', 'timed_out', 'cancelled')),
	note         TEXT NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL,
	deadline     INTEGER NOT NULL,
	answered_at  INTEGER
) STRICT;
CREATE INDEX handoffs_status_deadline ON handoffs (status, deadline);
`,
	// 5: task tokens (SPEC §14): the SHA-256 of each token minted for one task on one store (store_id NULL
	// is the web browser); the token itself is never kept. A task's tokens go with it.
	`
CREATE TABLE task_tokens (
	hash        TEXT PRIMARY KEY,
	task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
	store_id    TEXT REFERENCES stores (id) ON DELETE CASCADE,
	created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX task_tokens_task ON task_tokens (task_id);
`,
	// 6: the task timeline (SPEC §15): what each task did, entry by entry, numbered per task (seq). store_id
	// NULL is the web browser; data is the entry's JSON; file names a shot's image under timeline/ and bytes
	// its size, both emptied when the size cap drops the shot (the entry stays).
	`
CREATE TABLE timeline (
	task_id    TEXT NOT NULL,
	seq        INTEGER NOT NULL CHECK (seq > 0),
	store_id   TEXT REFERENCES stores (id) ON DELETE CASCADE,
	client_id  TEXT NOT NULL DEFAULT '',
	at         INTEGER NOT NULL,
	kind       TEXT NOT NULL CHECK (kind IN ('call', 'shot', 'nav', 'tab', 'download', 'handoff', 'takeover', 'fault')),
	data       TEXT NOT NULL DEFAULT '{}',
	file       TEXT NOT NULL DEFAULT '',
	bytes      INTEGER NOT NULL DEFAULT 0 CHECK (bytes >= 0),
	PRIMARY KEY (task_id, seq)
) STRICT;
CREATE INDEX timeline_at ON timeline (at);
`,
	// 7: a step's call (issue 35): the seq of the task's call that was running when the step (a nav, tab,
	// download or fault of the call's client) happened; 0 for a step outside any call.
	`
ALTER TABLE timeline ADD COLUMN in_call INTEGER NOT NULL DEFAULT 0 CHECK (in_call >= 0);
CREATE INDEX timeline_in_call ON timeline (task_id, in_call) WHERE in_call > 0;
`,
}
