package browsers

import (
	"encoding/json"
	"reflect"
	"testing"

	"vibebrowser/manager/api"
	"vibebrowser/state"
)

// TestOptionsConfigJSON: a store's config JSON keeps the settings under the API's names beside ziniao_port,
// and DecodeOptions reads back what Encode wrote.
func TestOptionsConfigJSON(t *testing.T) {
	yes := true
	opts := Options{StoreSettings: api.StoreSettings{CDPURL: "http://h:1", Headless: &yes, Proxy: "http://p:1",
		Timezone: "Europe/Berlin", Lang: "de-DE", AgentUser: "a", BrowserUser: NoUser, Timeline: api.TimelineOff},
		ZiniaoPort: 17000}
	raw, err := opts.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"cdp_url": "http://h:1", "headless": true, "ziniao_port": 17000.0, "proxy": "http://p:1",
		"timezone": "Europe/Berlin", "lang": "de-DE", "agent_user": "a", "browser_user": "none", "timeline": "off"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Encode = %s; want the keys %v", raw, want)
	}
	back, err := DecodeOptions(state.Store{Name: "acme", Config: raw})
	if err != nil || !reflect.DeepEqual(back, opts) {
		t.Errorf("DecodeOptions(%s) = %+v, %v; want %+v", raw, back, err, opts)
	}
	if raw, _ := (Options{}).Encode(); string(raw) != "{}" {
		t.Errorf("Encode(no options) = %s; want {}", raw)
	}
}
