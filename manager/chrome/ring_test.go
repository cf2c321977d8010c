package chrome

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// dbusStderr is what Chromium 156 printed here for a profile it could not create (shortened), with an older
// Chromium's form of the commonest D-Bus line.
const dbusStderr = `[15919:15919:1202/123436.109716:ERROR:chrome/browser/ui/views/message_box_dialog.cc:200] Unable to show message box: Failed To Create Data Directory - Chromium cannot read and write to its data directory:

/proc/nonexistent/x
[15919:15979:1202/123436.120893:ERROR:dbus/bus.cc:405] Failed to connect to the bus: Failed to connect to socket /run/dbus/system_bus_socket: No such file or directory
[15919:16006:1202/123436.225679:ERROR:content/browser/devtools/devtools_pipe_handler.cc:188] Connection terminated while reading from pipe
[15919:15919:1202/123436.343906:ERROR:dbus/object_proxy.cc:572] Failed to call method: org.freedesktop.DBus.NameHasOwner: object_path= /org/freedesktop/DBus: unknown error type:
[1203/101010.123456:ERROR:bus.cc(407)] Failed to connect to the bus: Could not parse server address: Unknown address type
not a log line: dbus/bus.cc
`

// keeperLog is a kept browser's log: the keeper's own lines (zerolog JSON) around Chromium's.
const keeperLog = `{"level":"info","component":"keeper","key":"k","browser_pid":25462,"binary":"/tmp/x/chrome","message":"browser started"}
doomed: crashing at start
{"level":"debug","component":"keeper","message":"client gone"}
{"level":"error","component":"keeper","message":"chromium exited before it answered"}
{"level":"info","component":"other","message":"not the keeper's"}
`

func TestRing(t *testing.T) {
	long := strings.Repeat("x", 3*maxLineBytes)
	var many []string
	for i := range ringLines + 7 {
		many = append(many, fmt.Sprintf("line %d", i))
	}
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{name: "empty", input: "", want: nil},
		{name: "no trailing newline", input: "a\nb", want: []string{"a", "b"}},
		{name: "keeps the last lines", input: strings.Join(many, "\n") + "\n", want: many[7:]},
		{name: "truncates a long line", input: "a\n" + long + "\nb\n", want: []string{"a", long[:maxLineBytes] + "…", "b"}},
		{name: "long line at EOF", input: long, want: []string{long[:maxLineBytes] + "…"}},
		{name: "drops D-Bus noise", input: dbusStderr, want: []string{
			"[15919:15919:1202/123436.109716:ERROR:chrome/browser/ui/views/message_box_dialog.cc:200] Unable to show message box: Failed To Create Data Directory - Chromium cannot read and write to its data directory:",
			"",
			"/proc/nonexistent/x",
			"[15919:16006:1202/123436.225679:ERROR:content/browser/devtools/devtools_pipe_handler.cc:188] Connection terminated while reading from pipe",
			"not a log line: dbus/bus.cc",
		}},
		{name: "drops the keeper's chatter", input: keeperLog, want: []string{
			"doomed: crashing at start",
			`{"level":"error","component":"keeper","message":"chromium exited before it answered"}`,
			`{"level":"info","component":"other","message":"not the keeper's"}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRing()
			r.consume(strings.NewReader(tt.input), zerolog.Nop())
			if got := r.snapshot(); !slices.Equal(got, tt.want) {
				t.Errorf("ring(%.40q) = %.200q; want %.200q", tt.input, got, tt.want)
			}
		})
	}
}
