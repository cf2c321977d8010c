package manager

import (
	"net/http"

	"vibebrowser/manager/api"
)

// The API's handoff handlers (package handoffs does the work), in the order of the route table.

func (m *Manager) handleListHandoffs(r *http.Request) (any, error) {
	return m.handoffs.List(r.Context(), r.URL.Query().Get("status"))
}

func (m *Manager) handleCreateHandoff(r *http.Request) (any, error) {
	var req api.HandoffRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return m.handoffs.Create(r.Context(), req)
}

func (m *Manager) handleGetHandoff(r *http.Request) (any, error) {
	return m.handoffs.Get(r.Context(), r.PathValue("id"))
}

func (m *Manager) handleWaitHandoff(r *http.Request) (any, error) {
	return m.handoffs.Wait(r.Context(), r.PathValue("id"))
}

func (m *Manager) handleAnswerHandoff(r *http.Request) (any, error) {
	var a api.HandoffAnswer
	if err := decode(r, &a); err != nil {
		return nil, err
	}
	return m.handoffs.Answer(r.Context(), r.PathValue("id"), a)
}

func (m *Manager) handleCancelHandoff(r *http.Request) (any, error) {
	return m.handoffs.Cancel(r.Context(), r.PathValue("id"))
}
