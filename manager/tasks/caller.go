// Package tasks keeps the daemon's record of agents' tasks: their leases, their tokens, who a task's calls
// come from, and the users a store's agents and browsers run as.
package tasks

import (
	"fmt"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
	"vibebrowser/mux/clientid"
)

// CheckCaller checks who a shim says it is on each call: its mux client id, browser-use session name and
// task id.
func CheckCaller(clientID, buName, taskID string) error {
	switch {
	case !clientid.Valid(clientID):
		return fmt.Errorf("%w: client_id %q must match %s", apierr.ErrBadRequest, clientID, clientid.Form)
	case !api.ValidBUName(buName):
		return fmt.Errorf("%w: bu_name %q must match [A-Za-z0-9_-]{1,64}", apierr.ErrBadRequest, buName)
	case taskID != "" && !api.ValidTaskID(taskID):
		return fmt.Errorf("%w: task_id %q: want %s", apierr.ErrBadRequest, taskID, api.TaskIDForm)
	}
	return nil
}
