package manager

import (
	"net/http"

	"vibebrowser/manager/api"
)

// The API's handoff handlers (handoffs.go does the work), in the order of the route table.

func (m *Manager) handleListHandoffs(r *http.Request) (any, error) {
	return m.listHandoffs(r.Context(), r.URL.Query().Get("status"))
}

func (m *Manager) handleCreateHandoff(r *http.Request) (any, error) {
	var req api.HandoffRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return m.createHandoff(r.Context(), req)
}

func (m *Manager) handleGetHandoff(r *http.Request) (any, error) {
	h, err := m.db.GetHandoff(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return m.handoffView(r.Context(), h)
}

func (m *Manager) handleWaitHandoff(r *http.Request) (any, error) {
	return m.waitHandoff(r.Context(), r.PathValue("id"))
}

func (m *Manager) handleAnswerHandoff(r *http.Request) (any, error) {
	var a api.HandoffAnswer
	if err := decode(r, &a); err != nil {
		return nil, err
	}
	return m.answerHandoff(r.Context(), r.PathValue("id"), a)
}

func (m *Manager) handleCancelHandoff(r *http.Request) (any, error) {
	return m.cancelHandoff(r.Context(), r.PathValue("id"))
}
