package handoffs

import (
	"vibebrowser/manager/api"
	"vibebrowser/state"
)

// StoreSlugs names stores by slug, for what the API and notifications print.
type StoreSlugs map[string]string // store id -> slug

// SlugsOf names stores by slug.
func SlugsOf(stores []state.Store) StoreSlugs {
	out := make(StoreSlugs, len(stores))
	for _, s := range stores {
		out[s.ID] = s.Slug
	}
	return out
}

// Of is the slug a store id is printed as: the web browser's for none, and the id itself for a store
// removed since.
func (n StoreSlugs) Of(storeID string) string {
	switch slug, ok := n[storeID]; {
	case storeID == "":
		return api.WebSlug
	case ok:
		return slug
	}
	return storeID
}
