package wrapshim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"vibebrowser/manager/api"
)

// `browser-use --ask-human "REASON" [--wait S]` asks a person for help instead of running the real CLI
// (SPEC §11): it registers a handoff with the manager, says where the person sees it, and waits for the
// answer, across manager restarts. It reads no stdin.

// maxWaitS bounds --wait before the manager's own bound (VIBE_HANDOFF_WAIT_MAX_S) applies: a day.
const maxWaitS = 86400

// Bounds of the wait loop: a wait call may be held for api.HandoffPoll, so it gets that and some slack;
// an unreachable manager (restarting) is asked again every retryEvery; after the deadline, noAnswerGrace
// is left for the manager to say "timed out" itself; cancelTimeout bounds the cancel after a signal.
const (
	pollSlack     = 10 * time.Second
	retryEvery    = 500 * time.Millisecond
	noAnswerGrace = 5 * time.Second
	cancelTimeout = 3 * time.Second
)

// askHumanForm is the verb's allowed form, for refusals.
const askHumanForm = `browser-use --ask-human "what the person should do" [--wait SECONDS] [--worker N | --session <slug>-aux]`

// wantsHuman reports whether the call is the --ask-human verb.
func wantsHuman(args []string) bool {
	for _, a := range args {
		if name, _, _ := strings.Cut(a, "="); name == "--ask-human" {
			return true
		}
	}
	return false
}

// askRequest is a parsed --ask-human call.
type askRequest struct {
	reason string
	waitS  int      // 0: the manager's default
	rest   []string // the other arguments, for Plan's session rules
}

// parseAskHuman takes --ask-human REASON and --wait S (each as one argument with = or as two) out of args.
// Any violation is a *RuleError.
func parseAskHuman(args []string) (askRequest, error) {
	var req askRequest
	sawReason, sawWait := false, false
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		if name != "--ask-human" && name != "--wait" {
			req.rest = append(req.rest, args[i])
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return askRequest{}, refuse("%s needs a value: %s", name, askHumanForm)
			}
			i++
			value = args[i]
		}
		if name == "--wait" {
			if sawWait {
				return askRequest{}, refuse("--wait was given twice: %s", askHumanForm)
			}
			sawWait = true
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 || n > maxWaitS || value[0] < '1' || value[0] > '9' {
				return askRequest{}, refuse("--wait %q is not a number of seconds: use --wait S with S a plain number "+
					"from 1 to %d (default %d; the manager grants at most VIBE_HANDOFF_WAIT_MAX_S, default %d)",
					value, maxWaitS, api.DefaultHandoffWaitS, api.DefaultHandoffWaitMaxS)
			}
			req.waitS = n
			continue
		}
		if sawReason {
			return askRequest{}, refuse("--ask-human was given twice: ask one thing per call: %s", askHumanForm)
		}
		sawReason, req.reason = true, strings.TrimSpace(value)
		if req.reason == "" {
			return askRequest{}, refuse("--ask-human needs a reason: say what the person should do, e.g. " +
				`--ask-human "solve the captcha on the sign-in page"`)
		}
		if err := api.CheckHandoffText("--ask-human reason", req.reason, api.MaxHandoffReason); err != nil {
			return askRequest{}, refuse("%v", err)
		}
	}
	return req, nil
}

// askHuman runs the verb and returns how it ended.
func (s *shim) askHuman(args, environ []string) Ending {
	req, err := parseAskHuman(args)
	if err != nil {
		return s.fail(EndUsage, "%v", err)
	}
	call, err := Plan(s.cfg, req.rest, environ)
	if err != nil {
		return s.fail(EndUsage, "%v", err)
	}
	if len(call.Args) > 0 {
		return s.fail(EndUsage, "--ask-human runs no browser-use command, so it takes no other arguments (got %q): %s",
			strings.Join(call.Args, " "), askHumanForm)
	}
	// A signal from here on cancels the handoff: the agent is no longer there to get the answer.
	sigs := make(chan os.Signal, 1) // the first signal decides; later ones find the shim already leaving
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var got os.Signal
	sigDone := make(chan struct{})
	go func() {
		defer close(sigDone)
		select {
		case got = <-sigs:
			stop()
		case <-ctx.Done():
		}
	}()
	interrupted := func() os.Signal { stop(); <-sigDone; return got }

	hreq := api.HandoffRequest{Kind: api.KindStore, StoreID: s.cfg.StoreID, ClientID: call.ClientID,
		BUName: call.BUName, TaskID: call.TaskID, Reason: req.reason, WaitS: req.waitS}
	if s.cfg.Kind == api.ShimKindWeb {
		hreq.Kind, hreq.StoreID = api.KindWeb, ""
	}
	client := s.cfg.Client(call.Token)
	var h api.Handoff
	err = dialRetry(func() (err error) {
		rctx, cancel := context.WithTimeout(ctx, s.cfg.EnsureTimeout())
		defer cancel()
		h, err = client.CreateHandoff(rctx, hreq)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return signalCode(interrupted())
		}
		return s.fail(EndUnavailable, "could not ask a person for help for session %s: %v", call.BUName, err)
	}
	where := `in "vibe-browser handoff list"`
	if h.URL != "" {
		where = "at " + h.URL + " (the vibe-browser overview) and " + where
	}
	fmt.Fprintf(s.stderr, "browser-use: asked a person for help (handoff %s, store %s). They see it %s; "+
		"waiting up to %d s for their answer.\n", h.ID, h.Store, where, h.WaitS)
	return s.awaitAnswer(ctx, client, h, interrupted)
}

// awaitAnswer waits for the person's answer to h and turns it into the call's Ending. A manager that is
// restarting is asked again until h's deadline (the handoff is kept in its state); a signal cancels h.
func (s *shim) awaitAnswer(ctx context.Context, client *api.Client, h api.Handoff, interrupted func() os.Signal) Ending {
	deadline := time.Now().Add(time.Duration(h.WaitS) * time.Second)
	lost := false
	for {
		pctx, cancel := context.WithTimeout(ctx, api.HandoffPoll+pollSlack)
		got, err := client.WaitHandoff(pctx, h.ID)
		cancel()
		if ctx.Err() != nil {
			return s.cancelled(client, h, interrupted())
		}
		if err == nil && lost {
			lost = false
			fmt.Fprintf(s.stderr, "browser-use: the manager is back; handoff %s is still there\n", h.ID)
		}
		switch {
		case err == nil && got.Status != api.HandoffPending:
			return s.answered(got)
		case errors.Is(err, api.ErrHandoffGone):
			return s.fail(EndUnavailable, "the manager no longer knows handoff %s (its store was deleted, or its "+
				"state was reset): nobody will answer it. Ask again with --ask-human if a person is still needed", h.ID)
		case err != nil && !lost:
			lost = true
			fmt.Fprintf(s.stderr, "browser-use: lost the manager while waiting for handoff %s (%v); still waiting, "+
				"it is kept across a manager restart\n", h.ID, err)
		}
		if time.Now().After(deadline.Add(noAnswerGrace)) {
			return s.noAnswer(h, " (the manager could not be reached to close it; it times it out itself)")
		}
		if err != nil {
			select {
			case <-ctx.Done():
				return s.cancelled(client, h, interrupted())
			case <-time.After(retryEvery):
			}
		}
	}
}

// answered turns a handoff that left pending into the call's Ending. The person's note goes to stdout: it
// is the answer, for the agent to read.
func (s *shim) answered(h api.Handoff) Ending {
	switch h.Status {
	case api.HandoffDone:
		note := h.Note
		if note == "" {
			note = "(the person left no note)"
		}
		fmt.Fprintln(os.Stdout, note)
		fmt.Fprintf(s.stderr, "browser-use: a person marked handoff %s done; their note is above. Check the page "+
			"state, then go on with the task\n", h.ID)
		return 0
	case api.HandoffCantHelp:
		if h.Note != "" {
			fmt.Fprintln(os.Stdout, h.Note)
		}
		return s.fail(EndCantHelp, "a person looked at handoff %s and cannot help%s. Do not ask again for this step: "+
			"record it as blocked on a person (say what you asked) and go on with what does not need it",
			h.ID, noteSuffix(h.Note))
	case api.HandoffTimedOut:
		return s.noAnswer(h, "")
	}
	return s.fail(EndUnavailable, "handoff %s was %s before anyone answered; ask again with --ask-human if a "+
		"person is still needed", h.ID, h.Status)
}

func noteSuffix(note string) string {
	if note == "" {
		return ""
	}
	return " (their note is on stdout)"
}

func (s *shim) noAnswer(h api.Handoff, why string) Ending {
	return s.fail(EndNoAnswer, "nobody answered handoff %s within %d s%s. Record this step as blocked on a person "+
		"(say what you asked: %q) and go on with what does not need it; do not ask again in a loop",
		h.ID, h.WaitS, why, h.Reason)
}

// cancelled withdraws h after a signal (bounded: the shim is being stopped) and exits as signalled.
func (s *shim) cancelled(client *api.Client, h api.Handoff, sig os.Signal) Ending {
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	_, err := client.CancelHandoff(ctx, h.ID)
	switch {
	case api.IsCode(err, api.CodeConflict):
		fmt.Fprintf(s.stderr, "browser-use: interrupted (%v) after handoff %s was closed: %v\n", sig, h.ID, err)
	case err != nil:
		fmt.Fprintf(s.stderr, "browser-use: interrupted (%v); could not cancel handoff %s (%v): it times out by itself\n",
			sig, h.ID, err)
	default:
		fmt.Fprintf(s.stderr, "browser-use: interrupted (%v): cancelled handoff %s\n", sig, h.ID)
	}
	return signalCode(sig)
}

// signalCode is the exit status of a process stopped by sig, as a shell reports it.
func signalCode(sig os.Signal) Ending {
	if ss, ok := sig.(syscall.Signal); ok {
		return Ending(128 + int(ss))
	}
	return 1
}
