package browsers

import (
	"context"
	"encoding/json"
	"fmt"

	"vibebrowser/manager/api"
	"vibebrowser/state"
)

// Spec is what starting, adopting or wrapping a browser needs to know about a store or the web browser.
type Spec struct {
	Key     string // the store's id, or api.WebKey
	Slug    string
	Token   string // its mux's
	Backend state.Backend
	Opts    Options
	Name    string       // for messages: "store <name>" or "the web browser"
	Store   *state.Store // nil for the web browser
}

// Options are what a store's config JSON keeps: its settings (api.StoreSettings; NoUser as a user is none
// even where VIBE_AGENT_USER or UserNames would name one), and the Ziniao client's port.
type Options struct {
	api.StoreSettings
	ZiniaoPort int `json:"ziniao_port,omitempty"`
}

// NoUser is a store's explicit "no agent (or browser) user": its agents, or its browser, run as the manager.
const NoUser = api.NoIdentity

// DecodeOptions is the one reader of a store's config JSON.
func DecodeOptions(s state.Store) (Options, error) {
	var opts Options
	if len(s.Config) > 0 {
		if err := json.Unmarshal(s.Config, &opts); err != nil {
			return Options{}, fmt.Errorf("store %s: config: %w", s.Name, err)
		}
	}
	return opts, nil
}

// Encode is the one writer of a store's config JSON.
func (o Options) Encode() (json.RawMessage, error) { return json.Marshal(o) }

// StoreSpec describes store s's browser.
func StoreSpec(s state.Store) (Spec, error) {
	opts, err := DecodeOptions(s)
	if err != nil {
		return Spec{}, err
	}
	return Spec{Key: s.ID, Slug: s.Slug, Token: s.Token, Backend: s.Backend, Opts: opts, Name: "store " + s.Name,
		Store: &s}, nil
}

// WebSpec describes the store-less web browser; its token is kept in state.
func (f *Fleet) WebSpec(ctx context.Context) (Spec, error) {
	token, err := f.db.WebToken(ctx)
	if err != nil {
		return Spec{}, err
	}
	return Spec{Key: api.WebKey, Slug: api.WebKey, Token: token, Backend: state.BackendChrome, Name: "the web browser"}, nil
}

// SpecFor describes the browser of a key: a store id or api.WebKey.
func (f *Fleet) SpecFor(ctx context.Context, key string) (Spec, error) {
	if key == api.WebKey {
		return f.WebSpec(ctx)
	}
	s, err := f.db.GetStore(ctx, key)
	if err != nil {
		return Spec{}, err
	}
	return StoreSpec(s)
}
