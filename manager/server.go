package manager

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
)

// routes is the local API (SPEC §4.2).
func (m *Manager) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, h func(r *http.Request) (any, error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			out, err := h(r)
			if err != nil {
				m.writeError(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, out)
		})
	}
	handle("GET "+api.PathHealth, m.handleHealth)
	handle("GET "+api.PathStatus, m.handleStatus)
	handle("GET "+api.PathStores, m.handleListStores)
	handle("POST "+api.PathStores, m.handleCreateStore)
	handle("GET "+api.PathStore, m.handleGetStore)
	handle("PATCH "+api.PathStore, m.handleUpdateStore)
	handle("DELETE "+api.PathStore, m.handleDeleteStore)
	handle("POST "+api.PathStoreBrowser, m.handleStoreBrowser)
	handle("GET "+api.PathWeb, m.handleWeb)
	handle("POST "+api.PathWebBrowser, m.handleWebBrowser)
	handle("POST "+api.PathSessionEnsure, m.handleEnsureSession)
	handle("GET "+api.PathTasks, m.handleListTasks)
	handle("GET "+api.PathTask, m.handleGetTask)
	handle("PUT "+api.PathTask, m.handlePutTask)
	handle("DELETE "+api.PathTask, m.handleDeleteTask)
	handle("POST "+api.PathTaskToken, m.handleMintTaskToken)
	handle("POST "+api.PathWrappers, m.handleWriteWrappers)
	handle("POST "+api.PathEvents, m.handleEvent)
	handle("GET "+api.PathEvents, m.handleListEvents)
	handle("POST "+api.PathReap, m.handleReap)
	handle("POST "+api.PathUILogin, m.handleUILogin)
	handle("POST "+api.PathStoreLogin, m.handleStoreLogin)
	handle("GET "+api.PathStoreSnapshots, m.handleListSnapshots)
	handle("POST "+api.PathStoreSnapshots, m.handleTakeSnapshot)
	handle("POST "+api.PathStoreRestore, m.handleRestore)
	handle("GET "+api.PathHandoffs, m.handleListHandoffs)
	handle("POST "+api.PathHandoffs, m.handleCreateHandoff)
	handle("GET "+api.PathHandoff, m.handleGetHandoff)
	handle("GET "+api.PathHandoffWait, m.handleWaitHandoff)
	handle("POST "+api.PathHandoffAnswer, m.handleAnswerHandoff)
	handle("POST "+api.PathHandoffCancel, m.handleCancelHandoff)
	handle("GET "+api.PathDownloads, m.handleListDownloads)
	handle("POST "+api.PathTaskCalls, m.handleTaskCall)
	handle("GET "+api.PathTaskTimeline, m.handleTimeline)
	mux.HandleFunc("GET "+api.PathTaskShot, m.handleShot)
	mux.HandleFunc("GET "+api.PathTaskExport, m.handleExport)
	mux.Handle("GET "+api.PathMetrics, m.metrics.handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		m.writeError(w, r, fmt.Errorf("%w: no route %s %s", apierr.ErrNoRoute, r.Method, r.URL.Path))
	})
	return mux
}

// writeError answers err on the manager's log (apierr.Write).
func (m *Manager) writeError(w http.ResponseWriter, r *http.Request, err error) {
	apierr.Write(w, r, m.log, err)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body strictly: unknown fields and trailing data are refused, naming the problem.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: request body: %v", apierr.ErrBadRequest, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: request body: trailing data after the JSON object", apierr.ErrBadRequest)
	}
	return nil
}
