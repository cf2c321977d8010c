package manager

import (
	"context"
	"encoding/json"
	"fmt"

	"vibebrowser/manager/api"
	"vibebrowser/state"
)

// spec is what starting, adopting or wrapping a browser needs to know about a store or the web browser.
type spec struct {
	key     string
	slug    string
	token   string
	backend state.Backend
	opts    storeOptions
	name    string       // for messages: "store <name>" or "the web browser"
	store   *state.Store // nil for the web browser
}

// storeOptions are the backend options kept in a store's config JSON.
type storeOptions struct {
	CDPURL     string `json:"cdp_url,omitempty"`
	Headless   *bool  `json:"headless,omitempty"`
	ZiniaoPort int    `json:"ziniao_port,omitempty"`
}

// decodeStoreOptions is the one reader of a store's config JSON.
func decodeStoreOptions(s state.Store) (storeOptions, error) {
	var opts storeOptions
	if len(s.Config) > 0 {
		if err := json.Unmarshal(s.Config, &opts); err != nil {
			return storeOptions{}, fmt.Errorf("store %s: config: %w", s.Name, err)
		}
	}
	return opts, nil
}

// encode is the one writer of a store's config JSON.
func (o storeOptions) encode() (json.RawMessage, error) { return json.Marshal(o) }

// storeSpec describes store s's browser.
func storeSpec(s state.Store) (spec, error) {
	opts, err := decodeStoreOptions(s)
	if err != nil {
		return spec{}, err
	}
	return spec{key: s.ID, slug: s.Slug, token: s.Token, backend: s.Backend, opts: opts, name: "store " + s.Name,
		store: &s}, nil
}

// webSpec describes the store-less web browser; its token is kept in state.
func (m *Manager) webSpec(ctx context.Context) (spec, error) {
	token, err := m.db.WebToken(ctx)
	if err != nil {
		return spec{}, err
	}
	return spec{key: api.WebKey, slug: api.WebKey, token: token, backend: state.BackendChrome, name: "the web browser"}, nil
}

// specForKey describes the browser of a registry key: a store id or api.WebKey.
func (m *Manager) specForKey(ctx context.Context, key string) (spec, error) {
	if key == api.WebKey {
		return m.webSpec(ctx)
	}
	s, err := m.db.GetStore(ctx, key)
	if err != nil {
		return spec{}, err
	}
	return storeSpec(s)
}
