package localapi

import (
	"fmt"
	"net/http"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
)

// The API's handoff handlers (package handoffs does the work); a task calls for its own handoffs only, in the order of the route table.

func (h *Handler) listHandoffs(r *http.Request, _ Caller) (any, error) {
	return h.Handoffs.List(r.Context(), r.URL.Query().Get("status"))
}

// createHandoff is the shim's --ask-human: a task asks only for its own store, as itself, for its own
// clients.
func (h *Handler) createHandoff(r *http.Request, c Caller) (any, error) {
	var req api.HandoffRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if err := c.ownClient(&req.Kind, &req.StoreID, &req.TaskID, req.ClientID); err != nil {
		return nil, err
	}
	return h.Handoffs.Create(r.Context(), req)
}

func (h *Handler) getHandoff(r *http.Request, c Caller) (any, error) {
	if err := h.ownHandoff(r, c); err != nil {
		return nil, err
	}
	return h.Handoffs.Get(r.Context(), r.PathValue("id"))
}

func (h *Handler) waitHandoff(r *http.Request, c Caller) (any, error) {
	if err := h.ownHandoff(r, c); err != nil {
		return nil, err
	}
	return h.Handoffs.Wait(r.Context(), r.PathValue("id"))
}

func (h *Handler) answerHandoff(r *http.Request, _ Caller) (any, error) {
	var a api.HandoffAnswer
	if err := decode(r, &a); err != nil {
		return nil, err
	}
	return h.Handoffs.Answer(r.Context(), r.PathValue("id"), a)
}

func (h *Handler) cancelHandoff(r *http.Request, c Caller) (any, error) {
	if err := h.ownHandoff(r, c); err != nil {
		return nil, err
	}
	return h.Handoffs.Cancel(r.Context(), r.PathValue("id"))
}

// ownHandoff checks that a task's call names one of its own handoffs (the owner may name any).
func (h *Handler) ownHandoff(r *http.Request, c Caller) error {
	t := c.task
	if t == nil {
		return nil
	}
	id := r.PathValue("id")
	ho, err := h.DB.GetHandoff(r.Context(), id)
	if err != nil {
		return err
	}
	switch {
	case ho.StoreID != t.token.StoreID:
		return t.notOwnStore("handoff " + id + " is another browser's")
	case ho.TaskID != t.token.TaskID:
		return fmt.Errorf("%w: handoff %s is not task %s's: a task sees only its own handoffs",
			apierr.ErrForbidden, id, t.token.TaskID)
	}
	return nil
}
