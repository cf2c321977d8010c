package wrapshim

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"vibebrowser/manager/api"
)

const task = "a1b2c3d4-0000-4000-8000-000000000001"

func storeConfig() *api.ShimConfig {
	return &api.ShimConfig{Format: api.ShimFormat, Kind: api.ShimKindStore, StoreID: "0d1c2b3a", Slug: "acme", ManagerSocket: "/h/run/manager.sock",
		RealBU: "/usr/bin/browser-use", RuntimeDir: "/h/r", TmpDir: "/h/bh-tmp", WorkerSlots: 3}
}

func webConfig() *api.ShimConfig {
	c := storeConfig()
	c.Kind, c.StoreID, c.Slug = api.ShimKindWeb, "", ""
	return c
}

func TestPlanNames(t *testing.T) {
	withTask := []string{"PATH=/bin", "VIBE_TASK_ID=" + task}
	tests := []struct {
		name             string
		cfg              *api.ShimConfig
		args, env        []string
		buName, clientID string
		passed           []string
	}{
		{"store task", storeConfig(), nil, withTask, "acme-a1b2c3d4", task, nil},
		{"store no task", storeConfig(), nil, []string{"PATH=/bin"}, "acme", "manual", nil},
		{"store empty task is no task", storeConfig(), nil, []string{"VIBE_TASK_ID="}, "acme", "manual", nil},
		{"aux", storeConfig(), []string{"--session", "acme-aux"}, withTask, "acme-aux", "aux", nil},
		{"aux equals form", storeConfig(), []string{"--session=acme-aux"}, nil, "acme-aux", "aux", nil},
		{"worker", storeConfig(), []string{"--worker", "2"}, withTask, "acme-a1b2c3d4-w2", task + "-w2", nil},
		{"worker equals form", storeConfig(), []string{"--worker=3"}, withTask, "acme-a1b2c3d4-w3", task + "-w3", nil},
		{"web task", webConfig(), nil, withTask, "web-a1b2c3d4", task, nil},
		{"web no task", webConfig(), nil, nil, "web", "manual", nil},
		{"web worker", webConfig(), []string{"--worker", "1"}, withTask, "web-a1b2c3d4-w1", task + "-w1", nil},
		{"other args pass unchanged", storeConfig(), []string{"-c", "--verbose", "x=1", "--", "--worker-ish"}, withTask,
			"acme-a1b2c3d4", task, []string{"-c", "--verbose", "x=1", "--", "--worker-ish"}},
		{"shim flags removed, rest kept in order", storeConfig(), []string{"--json", "--worker", "1", "tail"}, withTask,
			"acme-a1b2c3d4-w1", task + "-w1", []string{"--json", "tail"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, err := Plan(tt.cfg, tt.args, tt.env)
			if err != nil {
				t.Fatalf("Plan(%q) error: %v", tt.args, err)
			}
			if call.BUName != tt.buName || call.ClientID != tt.clientID {
				t.Errorf("Plan(%q) = BU_NAME %q, client %q; want %q, %q", tt.args, call.BUName, call.ClientID, tt.buName, tt.clientID)
			}
			if !slices.Equal(call.Args, tt.passed) {
				t.Errorf("Plan(%q) passes %q; want %q", tt.args, call.Args, tt.passed)
			}
		})
	}
}

func TestPlanRefusals(t *testing.T) {
	withTask := []string{"VIBE_TASK_ID=" + task}
	noSlots := storeConfig()
	noSlots.WorkerSlots = 0
	longSlug := storeConfig()
	longSlug.Slug = strings.Repeat("s", 55) // 55 + "-" + 8 + "-w1" = 67 > 64
	tests := []struct {
		name      string
		cfg       *api.ShimConfig
		args, env []string
		want      string // a fragment of the message naming the rule or the allowed form
	}{
		{"worker 0", storeConfig(), []string{"--worker", "0"}, withTask, "from 1 to 3"},
		{"worker leading zero", storeConfig(), []string{"--worker", "01"}, withTask, "plain number"},
		{"worker above slots", storeConfig(), []string{"--worker", "4"}, withTask, "from 1 to 3"},
		{"worker non-digits", storeConfig(), []string{"--worker=two"}, withTask, "--worker N"},
		{"worker sign", storeConfig(), []string{"--worker=+1"}, withTask, "--worker N"},
		{"worker empty", storeConfig(), []string{"--worker="}, withTask, "--worker N"},
		{"worker missing value", storeConfig(), []string{"--worker"}, withTask, "needs a value"},
		{"worker without task", storeConfig(), []string{"--worker", "1"}, nil, "needs VIBE_TASK_ID"},
		{"worker disabled", noSlots, []string{"--worker", "1"}, withTask, "VIBE_BROWSER_WORKER_SLOTS=0"},
		{"worker twice", storeConfig(), []string{"--worker", "1", "--worker=2"}, withTask, "given twice"},
		{"session other", storeConfig(), []string{"--session", "mine"}, withTask, "--session acme-aux"},
		{"session other equals", storeConfig(), []string{"--session=acme-a1b2c3d4"}, withTask, "assigned automatically"},
		{"session other store aux", storeConfig(), []string{"--session", "other-aux"}, withTask, "--session acme-aux"},
		{"session missing value", storeConfig(), []string{"--session"}, withTask, "needs a value"},
		{"session twice", storeConfig(), []string{"--session", "acme-aux", "--session", "acme-aux"}, withTask, "given twice"},
		{"session on web", webConfig(), []string{"--session", "web-aux"}, withTask, "no session override"},
		{"session with worker", storeConfig(), []string{"--session", "acme-aux", "--worker", "1"}, withTask, "cannot be combined"},
		{"BU_NAME env", storeConfig(), nil, []string{"BU_NAME=x"}, "BU_NAME is set"},
		{"BU_CDP_WS env", storeConfig(), nil, []string{"PATH=/bin", "BU_CDP_WS=ws://x"}, "BU_CDP_WS is set"},
		{"BU_ empty value", storeConfig(), nil, []string{"BU_AUTOSPAWN="}, "BU_AUTOSPAWN is set"},
		{"task too short", storeConfig(), nil, []string{"VIBE_TASK_ID=a1b2c3"}, "is not a task id"},
		{"task not hex head", storeConfig(), nil, []string{"VIBE_TASK_ID=zzzzzzzz-1"}, "first 8 are hex"},
		{"task bad chars", storeConfig(), nil, []string{"VIBE_TASK_ID=a1b2c3d4;rm -rf"}, "[A-Za-z0-9-]"},
		{"task too long", storeConfig(), nil, []string{"VIBE_TASK_ID=a1b2c3d4" + strings.Repeat("0", 57)}, "8 to 64"},
		{"BU_NAME over 64", longSlug, []string{"--worker", "1"}, withTask, "[A-Za-z0-9_-]{1,64}"},
	}
	for _, flag := range blockedFlags {
		tests = append(tests,
			struct {
				name      string
				cfg       *api.ShimConfig
				args, env []string
				want      string
			}{flag + " value", storeConfig(), []string{flag, "ws://127.0.0.1:9222"}, withTask, flag + " is not allowed"},
			struct {
				name      string
				cfg       *api.ShimConfig
				args, env []string
				want      string
			}{flag + " equals", storeConfig(), []string{"-c", flag + "=x"}, withTask, flag + " is not allowed"},
		)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, err := Plan(tt.cfg, tt.args, tt.env)
			var rule *RuleError
			if !errors.As(err, &rule) {
				t.Fatalf("Plan(%q, %q) = %+v, %v; want a refusal", tt.args, tt.env, call, err)
			}
			if !strings.Contains(rule.Msg, tt.want) {
				t.Errorf("Plan(%q, %q) refused with %q; want it to name %q", tt.args, tt.env, rule.Msg, tt.want)
			}
			if strings.Contains(rule.Msg, "\n") {
				t.Errorf("refusal %q spans lines; want one line", rule.Msg)
			}
		})
	}
}

func TestPlanLongestValidName(t *testing.T) {
	cfg := storeConfig()
	cfg.Slug = strings.Repeat("s", 40) // the slug cap: <slug>-<8>-wNN must fit 64
	cfg.WorkerSlots = 99
	call, err := Plan(cfg, []string{"--worker", "99"}, []string{"VIBE_TASK_ID=" + task})
	if err != nil {
		t.Fatalf("Plan with a 40-character slug and worker 99: %v", err)
	}
	if len(call.BUName) > 64 {
		t.Errorf("BU_NAME %q has %d characters; want ≤ 64", call.BUName, len(call.BUName))
	}
}

func FuzzPlan(f *testing.F) {
	f.Add("--worker\x002", task)
	f.Add("--session=acme-aux", "")
	f.Add("--cdp-url=x\x00--worker", "zz")
	f.Add("--worker=01\x00-c", task)
	f.Fuzz(func(t *testing.T, joined, taskID string) {
		args := strings.Split(joined, "\x00")
		call, err := Plan(storeConfig(), args, []string{"VIBE_TASK_ID=" + taskID})
		if err != nil {
			var rule *RuleError
			if !errors.As(err, &rule) {
				t.Fatalf("Plan(%q) error %v is not a RuleError", args, err)
			}
			return
		}
		if !regexp.MustCompile(`\A[A-Za-z0-9_-]{1,64}\z`).MatchString(call.BUName) {
			t.Fatalf("Plan(%q) = BU_NAME %q; want it to match [A-Za-z0-9_-]{1,64}", args, call.BUName)
		}
		for _, a := range call.Args {
			name, _, _ := strings.Cut(a, "=")
			if slices.Contains(blockedFlags, name) || name == "--session" || name == "--worker" {
				t.Fatalf("Plan(%q) passes %q to the real CLI", args, a)
			}
		}
		if slot := fmt.Sprintf("-w%d", call.Worker); call.Worker > 0 &&
			(call.TaskID == "" || !strings.HasSuffix(call.BUName, slot) || !strings.HasSuffix(call.ClientID, slot)) {
			t.Fatalf("Plan(%q) worker %d gives BU_NAME %q and client %q that disagree", args, call.Worker, call.BUName, call.ClientID)
		}
	})
}
