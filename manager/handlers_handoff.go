package manager

import (
	"net/http"

	"vibebrowser/manager/api"
)

// The API's handoff handlers (handoffs.go does the work), in the order of the route table.

func (d *handoffDesk) handleList(r *http.Request) (any, error) {
	return d.list(r.Context(), r.URL.Query().Get("status"))
}

func (m *Manager) handleCreateHandoff(r *http.Request) (any, error) {
	var req api.HandoffRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return m.createHandoff(r.Context(), req)
}

func (d *handoffDesk) handleGet(r *http.Request) (any, error) {
	h, err := d.db.GetHandoff(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return d.view(r.Context(), h)
}

func (d *handoffDesk) handleWait(r *http.Request) (any, error) {
	return d.wait(r.Context(), r.PathValue("id"))
}

func (d *handoffDesk) handleAnswer(r *http.Request) (any, error) {
	var a api.HandoffAnswer
	if err := decode(r, &a); err != nil {
		return nil, err
	}
	return d.answer(r.Context(), r.PathValue("id"), a)
}

func (d *handoffDesk) handleCancel(r *http.Request) (any, error) {
	return d.cancel(r.Context(), r.PathValue("id"))
}
