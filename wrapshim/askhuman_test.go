package wrapshim

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseAskHuman(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		reason string
		waitS  int
		rest   []string
	}{
		{"reason", []string{"--ask-human", "solve the captcha"}, "solve the captcha", 0, nil},
		{"equals form", []string{"--ask-human=solve it", "--wait=30"}, "solve it", 30, nil},
		{"wait first", []string{"--wait", "2", "--ask-human", "x"}, "x", 2, nil},
		{"trimmed", []string{"--ask-human", "  log in \n"}, "log in", 0, nil},
		{"multi-line", []string{"--ask-human", "line one\nline two"}, "line one\nline two", 0, nil},
		{"reason that looks like a flag", []string{"--ask-human", "--profile is blocked here"}, "--profile is blocked here", 0, nil},
		{"session flags stay for Plan", []string{"--worker", "2", "--ask-human", "x"}, "x", 0, []string{"--worker", "2"}},
		{"longest wait", []string{"--ask-human", "x", "--wait", "86400"}, "x", 86400, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseAskHuman(tt.args)
			if err != nil || got.reason != tt.reason || got.waitS != tt.waitS || !slices.Equal(got.rest, tt.rest) {
				t.Errorf("parseAskHuman(%q) = %+v, %v; want reason %q, wait %d, rest %q", tt.args, got, err, tt.reason, tt.waitS, tt.rest)
			}
		})
	}
}

func TestParseAskHumanRefusals(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // a fragment of the message: the rule and the allowed form
	}{
		{"no reason", []string{"--ask-human"}, "needs a value"},
		{"empty reason", []string{"--ask-human", "  "}, "needs a reason"},
		{"twice", []string{"--ask-human", "a", "--ask-human=b"}, "given twice"},
		{"wait without value", []string{"--ask-human", "a", "--wait"}, "--wait needs a value"},
		{"wait twice", []string{"--ask-human", "a", "--wait", "1", "--wait", "2"}, "--wait was given twice"},
		{"wait zero", []string{"--ask-human", "a", "--wait", "0"}, "from 1 to 86400"},
		{"wait leading zero", []string{"--ask-human", "a", "--wait", "030"}, "plain number"},
		{"wait signed", []string{"--ask-human", "a", "--wait", "+5"}, "plain number"},
		{"wait too long", []string{"--ask-human", "a", "--wait", "86401"}, "from 1 to 86400"},
		{"wait not a number", []string{"--ask-human", "a", "--wait", "5m"}, "not a number of seconds"},
		{"control character", []string{"--ask-human", "a\x1b[31m"}, "control character"},
		{"too long", []string{"--ask-human", strings.Repeat("x", 2001)}, "at most 2000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseAskHuman(tt.args)
			var rule *RuleError
			if !errors.As(err, &rule) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseAskHuman(%q) = %v; want a rule error containing %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestWantsHuman(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"--ask-human", "x"}, true},
		{[]string{"--worker", "1", "--ask-human=x"}, true},
		{[]string{"--wait", "3"}, false}, // browser-use's own flag, if it has one: not ours without --ask-human
		{[]string{"--ask-humans"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := wantsHuman(tt.args); got != tt.want {
			t.Errorf("wantsHuman(%q) = %v; want %v", tt.args, got, tt.want)
		}
	}
}
