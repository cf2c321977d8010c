package api

import (
	"fmt"
	"strconv"
	"strings"
)

// AuxClient is the mux client id of a store's auxiliary session (--session <slug>-aux): one per store, which
// any of the store's tasks may open (SPEC §20).
const AuxClient = "aux"

// SessionNames derives a caller's browser-use session name (BU_NAME) and mux client id (SPEC §3's table),
// for the shim and for `vibe-browser mcp` alike: base is the store's slug (WebSlug for the web browser), aux
// the store's auxiliary session, worker the --worker slot (0 for none; it needs a task). Both names carry the
// slot, so a slot can never produce a daemon and a client that disagree.
func SessionNames(base, taskID string, worker int, aux bool) (buName, clientID string) {
	switch {
	case aux:
		return base + "-" + AuxClient, AuxClient
	case taskID == "":
		return base, "manual"
	case worker > 0:
		slot := fmt.Sprintf("-w%d", worker)
		return base + "-" + taskID[:8] + slot, taskID + slot
	default:
		return base + "-" + taskID[:8], taskID
	}
}

// ParseWorker reads a --worker value: digits only, no leading zero, 1..slots. Its error is the refusal's
// whole message, naming the rule and the allowed form.
func ParseWorker(value string, slots int) (int, error) {
	if slots == 0 {
		return 0, fmt.Errorf("--worker is disabled on this machine (VIBE_BROWSER_WORKER_SLOTS=0): " +
			"run the call without --worker")
	}
	valid := value != "" && value[0] != '0'
	for _, r := range value {
		valid = valid && r >= '0' && r <= '9'
	}
	n, err := strconv.Atoi(value)
	if !valid || err != nil || n < 1 || n > slots {
		return 0, fmt.Errorf("--worker %q is not a worker slot: %s", value, WorkerForm(slots))
	}
	return n, nil
}

// WorkerForm is the allowed form of --worker, for messages.
func WorkerForm(slots int) string {
	return fmt.Sprintf("use --worker N with N a plain number from 1 to %d", slots)
}

// ClientSlot is the --worker slot of a task's client id (<task>-wN, SessionNames), 0 for the task's own.
func ClientSlot(task, client string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(client, task+"-w"))
	if err != nil || n < 1 || !strings.HasPrefix(client, task+"-w") {
		return 0
	}
	return n
}
