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

// Options are the backend options kept in a store's config JSON.
type Options struct {
	CDPURL     string `json:"cdp_url,omitempty"`
	Headless   *bool  `json:"headless,omitempty"`
	ZiniaoPort int    `json:"ziniao_port,omitempty"`
	// The network identity (SPEC §16), chrome stores only: the upstream proxy's whole URL (its password
	// too: this JSON lives in state only, and nothing prints it), the time zone and the language.
	Proxy    string `json:"proxy,omitempty"`
	Timezone string `json:"timezone,omitempty"`
	Lang     string `json:"lang,omitempty"`
	// The store boundary (SPEC §14): the OS users its agents and its browser run as; "" follows
	// VIBE_AGENT_USER and, for the browser, the user the manager makes for the store (UserNames); NoUser
	// ("none") is none even where those would name one.
	AgentUser   string `json:"agent_user,omitempty"`
	BrowserUser string `json:"browser_user,omitempty"`
	// Timeline is the store's timeline mode (SPEC §15: full, meta or off); "" follows VIBE_TIMELINE.
	Timeline string `json:"timeline,omitempty"`
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
