package cli

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestPlanServer(t *testing.T) {
	const url = "ws://127.0.0.1:9300/tok/client-t1"
	for _, tc := range []struct {
		name   string
		argv   []string
		want   []string // with the endpoint in place; nil when refused
		server string
		refuse string // a fragment of the refusal
	}{
		{name: "npx playwright", argv: []string{"npx", "-y", "@playwright/mcp@latest", "--headless"},
			want: []string{"npx", "-y", "@playwright/mcp@latest", "--headless", "--cdp-endpoint", url}, server: "playwright"},
		{name: "installed playwright", argv: []string{"/opt/node_modules/.bin/playwright-mcp"},
			want: []string{"/opt/node_modules/.bin/playwright-mcp", "--cdp-endpoint", url}, server: "playwright"},
		{name: "node on the package's file", argv: []string{"node", "/x/node_modules/chrome-devtools-mcp/build/src/index.js"},
			want: []string{"node", "/x/node_modules/chrome-devtools-mcp/build/src/index.js", "--wsEndpoint", url}, server: "chrome-devtools"},
		{name: "chrome-devtools pinned", argv: []string{"npx", "chrome-devtools-mcp@1.11.0", "--slim"},
			want: []string{"npx", "chrome-devtools-mcp@1.11.0", "--slim", "--wsEndpoint", url}, server: "chrome-devtools"},
		{name: "placeholder wins", argv: []string{"npx", "@playwright/mcp", "--cdp-endpoint={cdp_ws}"},
			want: []string{"npx", "@playwright/mcp", "--cdp-endpoint=" + url}, server: "playwright"},
		{name: "placeholder as the next word", argv: []string{"chrome-devtools-mcp", "-w", "{cdp_ws}"},
			want: []string{"chrome-devtools-mcp", "-w", url}, server: "chrome-devtools"},
		{name: "unknown server with placeholder", argv: []string{"my-mcp", "--browser-ws", "{cdp_ws}"},
			want: []string{"my-mcp", "--browser-ws", url}},
		{name: "unknown server", argv: []string{"my-mcp", "--x"}, refuse: "put {cdp_ws} in its arguments"},
		{name: "nothing", argv: nil, refuse: "give its command after --"},
		{name: "another endpoint", argv: []string{"npx", "@playwright/mcp", "--cdp-endpoint", "http://127.0.0.1:9222"},
			refuse: "--cdp-endpoint is refused: it would connect the server to another browser"},
		{name: "browser url", argv: []string{"chrome-devtools-mcp", "--browserUrl=http://127.0.0.1:9222"}, refuse: "--browserUrl is refused"},
		{name: "short alias", argv: []string{"chrome-devtools-mcp", "-u", "http://127.0.0.1:9222"}, refuse: "-u is refused"},
		{name: "short alias of another server is its own", argv: []string{"npx", "@playwright/mcp", "-u", "x"},
			want: []string{"npx", "@playwright/mcp", "-u", "x", "--cdp-endpoint", url}, server: "playwright"},
		{name: "own browser", argv: []string{"npx", "@playwright/mcp", "--executable-path", "/usr/bin/chromium"}, refuse: "launch a browser of its own"},
		{name: "profile", argv: []string{"chrome-devtools-mcp", "--userDataDir", "/tmp/p"}, refuse: "another profile"},
		{name: "isolated", argv: []string{"chrome-devtools-mcp", "--isolated"}, refuse: "--isolated is refused"},
		{name: "storage state", argv: []string{"npx", "@playwright/mcp", "--storage-state=s.json"}, refuse: "another profile"},
		{name: "config file", argv: []string{"npx", "@playwright/mcp", "--config", "c.json"}, refuse: "give its options as flags"},
		{name: "http transport", argv: []string{"npx", "@playwright/mcp", "--port", "8931"}, refuse: "must speak stdio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, err := planServer(tc.argv)
			if tc.refuse != "" {
				var usage *usageError
				if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.refuse) {
					t.Fatalf("planServer(%q) = %v; want a usage error saying %q", tc.argv, err, tc.refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cmd.with(url); !slices.Equal(got, tc.want) || cmd.server != tc.server {
				t.Errorf("planServer(%q) = %q (server %q); want %q (server %q)", tc.argv, got, cmd.server, tc.want, tc.server)
			}
		})
	}
}
