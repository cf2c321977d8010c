package api

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestStoreSettingsWire: the spec and the update carry the settings under the API's names, flat beside
// their own fields, as before the settings were one type; nil and empty fields are left out.
func TestStoreSettingsWire(t *testing.T) {
	yes, s := true, func(v string) *string { return &v }
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"a spec", StoreSpec{Name: "acme", Backend: "chrome", Ziniao: &ZiniaoSpec{Browser: "b"}, StoreSettings: StoreSettings{
			CDPURL: "http://h:1", Headless: &yes, Proxy: "http://p:1", Timezone: "Europe/Berlin", Lang: "de-DE",
			AgentUser: "a", BrowserUser: "b", Timeline: TimelineMeta}},
			`{"name":"acme","backend":"chrome","cdp_url":"http://h:1","headless":true,"ziniao":{"browser":"b","company":"",` +
				`"username":"","password":""},"proxy":"http://p:1","timezone":"Europe/Berlin","lang":"de-DE","agent_user":"a",` +
				`"browser_user":"b","timeline":"meta"}`},
		{"a bare spec", StoreSpec{Name: "acme"}, `{"name":"acme","backend":""}`},
		{"an update", StoreUpdate{Name: s("x"), StoreChanges: StoreChanges{Proxy: s(NoIdentity), Timeline: s("")}},
			`{"name":"x","proxy":"none","timeline":""}`},
		{"an empty update", StoreUpdate{}, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			var got, want map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("json.Marshal(%s) = %s; want %s", tt.name, b, tt.want)
			}
			back := reflect.New(reflect.TypeOf(tt.v))
			if err := json.Unmarshal([]byte(tt.want), back.Interface()); err != nil ||
				!reflect.DeepEqual(back.Elem().Interface(), tt.v) {
				t.Errorf("json.Unmarshal(%s) = %+v, %v; want %+v", tt.want, back.Elem().Interface(), err, tt.v)
			}
		})
	}
}
