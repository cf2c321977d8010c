package api

// StoreSettingsOf are a store's settings, declared once: the spec that creates a store carries them as values
// (StoreSettings), an update as pointers, nil for "leave it alone" (StoreChanges), and the manager keeps them
// in the store's config JSON (browsers.Options). Their JSON names are the API's.
type StoreSettingsOf[V string | *string] struct {
	CDPURL   V     `json:"cdp_url,omitempty"`  // cdp backend: http(s):// or ws(s):// endpoint
	Headless *bool `json:"headless,omitempty"` // chrome: nil follows VIBE_HEADLESS, then the display
	// The store's network identity (chrome backend, SPEC §16): its upstream proxy URL, credentials
	// included (kept in state only, and nothing prints it), its IANA time zone and its BCP 47 language.
	Proxy    V `json:"proxy,omitempty"`
	Timezone V `json:"timezone,omitempty"`
	Lang     V `json:"lang,omitempty"`
	// The store boundary (SPEC §14): the OS users its agents and its browser run as; "" follows
	// VIBE_AGENT_USER, and for the browser the user the manager makes for the store (SPEC §20: vibe-b-<slug>,
	// where it has an agent user or a proxy under a root manager); NoIdentity ("none") is none.
	AgentUser   V `json:"agent_user,omitempty"`
	BrowserUser V `json:"browser_user,omitempty"`
	// Timeline is the store's timeline mode (SPEC §15): TimelineFull, TimelineMeta or TimelineOff; ""
	// follows VIBE_TIMELINE.
	Timeline V `json:"timeline,omitempty"`
}

// StoreSettings are a store's settings as values: what a new store is given and what it keeps.
type StoreSettings = StoreSettingsOf[string]

// StoreChanges are an update of a store's settings: nil fields are left alone.
type StoreChanges = StoreSettingsOf[*string]
