package tasks

import (
	"vibebrowser/manager/api"
	"vibebrowser/state"
)

// View is a task as the API prints it.
func View(t state.Task) api.Task {
	return api.Task{ID: t.ID, Store: t.StoreID, Status: string(t.Status), LeaseUntil: t.LeaseUntil}
}
