package manager_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
)

// twoStores adds stores Acme and Bolt and mints task's token on Acme.
func twoStores(t *testing.T, d *daemon, task string) (acme, bolt api.Store, tok api.TaskToken) {
	t.Helper()
	var err error
	if acme, err = d.client.CreateStore(bg, api.StoreSpec{Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if bolt, err = d.client.CreateStore(bg, api.StoreSpec{Name: "Bolt"}); err != nil {
		t.Fatal(err)
	}
	if tok, err = d.client.MintTaskToken(bg, task, "acme"); err != nil {
		t.Fatal(err)
	}
	return acme, bolt, tok
}

// The agents' socket (SPEC §14): anyone may connect; a call needs a live task token, presented by the store's
// agent user (here, with no agent user, the manager's own), for its own store and task; the owner's routes are
// not served there.
func TestAgentSocketRules(t *testing.T) {
	d := startDaemon(t, nil, true)
	sock := filepath.Join(d.home, api.AgentSocketRel)
	if fi, err := os.Stat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o666 {
		t.Fatalf("agent socket %v, %v; want a 0666 socket", fi, err)
	}
	const task, other = "a1b2c3d4-0001", "b2c3d4e5-0002"
	acme, bolt, tok := twoStores(t, d, task)
	if !api.ValidTaskToken(tok.Token) || tok.StoreID != acme.ID || tok.Slug != "acme" || tok.AgentUser != "" {
		t.Fatalf("minted %+v; want a token for task %s on acme, with no agent user", tok, task)
	}
	if tt, err := d.client.GetTask(bg, task); err != nil || tt.Status != "running" {
		t.Errorf("the minted task is %+v, %v; want it registered as running", tt, err)
	}
	as := func(token string) *api.Client { return &api.Client{Socket: sock, Token: token} }
	ev := func(store, task string) api.Event {
		return api.Event{Kind: api.EventWedgeUnrecoverable, StoreID: store, TaskID: task, BUName: "acme-" + task[:8]}
	}
	if err := as(tok.Token).ReportEvent(bg, ev(acme.ID, task)); err != nil {
		t.Errorf("the task's own event: %v", err)
	}
	if _, err := as(tok.Token).ListDownloads(bg, task, ""); err != nil {
		t.Errorf("the task's own downloads: %v", err)
	}
	tests := []struct {
		name   string
		call   func() error
		status int
		want   string
	}{
		{"no token", func() error { return as("").ReportEvent(bg, ev(acme.ID, task)) }, http.StatusUnauthorized, "Authorization: Bearer"},
		{"a token never minted", func() error { return as("0123456789abcdef0123456789abcdef").ReportEvent(bg, ev(acme.ID, task)) }, http.StatusUnauthorized, "never minted"},
		{"another store", func() error { return as(tok.Token).ReportEvent(bg, ev(bolt.ID, task)) }, http.StatusForbidden, "only for its own store"},
		{"the web browser", func() error { return as(tok.Token).ReportEvent(bg, ev("", task)) }, http.StatusForbidden, "only for its own store"},
		{"another task", func() error { return as(tok.Token).ReportEvent(bg, ev(acme.ID, other)) }, http.StatusForbidden, "only as itself"},
		{"another task's downloads", func() error { _, err := as(tok.Token).ListDownloads(bg, other, ""); return err }, http.StatusForbidden, "only its own downloads"},
		{"another task's client", func() error {
			_, err := as(tok.Token).EnsureSession(bg, api.EnsureRequest{Kind: api.KindStore, StoreID: acme.ID, ClientID: other, BUName: "x", TaskID: task, Via: api.ViaCDP})
			return err
		}, http.StatusForbidden, "its own clients only"},
		{"an owner's route", func() error { _, err := as(tok.Token).ListStores(bg); return err }, http.StatusForbidden, "is not served on run/agent.sock"},
		{"a UI login code", func() error { _, err := as(tok.Token).UILogin(bg); return err }, http.StatusForbidden, "is not served on run/agent.sock"},
		{"minting a token", func() error { _, err := as(tok.Token).MintTaskToken(bg, other, "acme"); return err }, http.StatusForbidden, "is not served on run/agent.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantAPIError(t, tt.call(), tt.status, tt.want) })
	}
	// A task that ended takes its token with it.
	if _, err := d.client.PutTask(bg, task, api.TaskUpdate{Store: "acme", Status: "completed"}); err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, as(tok.Token).ReportEvent(bg, ev(acme.ID, task)), http.StatusUnauthorized, "its task has ended")
}

// With an agent user, only that user may present the store's tokens: the manager's own user is refused.
func TestAgentSocketPeerMustBeTheAgentUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("agent users need a root manager; CI runs as root")
	}
	const user = "vbtest-agent-a"
	testkit.SystemUser(t, user)
	d := startDaemon(t, nil, true)
	acme, err := d.client.CreateStore(bg, api.StoreSpec{Name: "Acme", StoreSettings: api.StoreSettings{AgentUser: user}})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := d.client.MintTaskToken(bg, "a1b2c3d4-0001", "acme")
	if err != nil || tok.AgentUser != user {
		t.Fatalf("minted %+v, %v; want the agent user %s named", tok, err, user)
	}
	c := &api.Client{Socket: filepath.Join(d.home, api.AgentSocketRel), Token: tok.Token}
	err = c.ReportEvent(bg, api.Event{Kind: "note", StoreID: acme.ID, TaskID: "a1b2c3d4-0001"})
	wantAPIError(t, err, http.StatusForbidden, "only its agent user ("+user)
}

// A task's token asks nothing of another store (SPEC §20): every route of the agents' socket answers a
// question about store Bolt with A's token with 403, naming the rule, never with an answer (not even an
// empty list); a store that does not exist is refused alike. The same questions about A's own store pass.
func TestAgentSocketRefusesAnotherStoreOnEveryRoute(t *testing.T) {
	d := startDaemon(t, nil, true)
	const taskA, taskB = "a1b2c3d4-0001", "b2c3d4e5-0002"
	acme, bolt, tokA := twoStores(t, d, taskA)
	ask := func(store, client, task string) api.HandoffRequest {
		return api.HandoffRequest{Kind: api.KindStore, StoreID: store, ClientID: client, BUName: "x", TaskID: task, Reason: "help", WaitS: 60}
	}
	hB, err := d.client.CreateHandoff(bg, ask(bolt.ID, taskB, taskB)) // Bolt's, on the owner's socket
	if err != nil {
		t.Fatal(err)
	}
	a := &api.Client{Socket: filepath.Join(d.home, api.AgentSocketRel), Token: tokA.Token}
	hA, err := a.CreateHandoff(bg, ask(acme.ID, taskA, taskA))
	if err != nil {
		t.Fatalf("A's own handoff: %v", err)
	}
	for _, ref := range []string{"acme", acme.ID, "Acme"} {
		if _, err := a.ListDownloads(bg, "", ref); err != nil {
			t.Errorf("A's own downloads, store=%s: %v", ref, err)
		}
	}
	if _, err := a.GetHandoff(bg, hA.ID); err != nil {
		t.Errorf("A's own handoff: %v", err)
	}
	ensure := func(client string) error {
		_, err := a.EnsureSession(bg, api.EnsureRequest{Kind: api.KindStore, StoreID: bolt.ID, ClientID: client, BUName: "x", TaskID: taskA, Via: api.ViaCDP})
		return err
	}
	downloads := func(ref string) func() error {
		return func() error { _, err := a.ListDownloads(bg, "", ref); return err }
	}
	const rule = "a task calls only for its own store"
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"ensure", func() error { return ensure(taskA) }, rule},
		{"ensure, B's aux", func() error { return ensure(api.AuxClient) }, rule},
		{"events", func() error { return a.ReportEvent(bg, api.Event{Kind: "note", StoreID: bolt.ID, TaskID: taskA}) }, rule},
		{"create a handoff", func() error { _, err := a.CreateHandoff(bg, ask(bolt.ID, taskA, taskA)); return err }, rule},
		{"a handoff", func() error { _, err := a.GetHandoff(bg, hB.ID); return err }, rule},
		{"wait for a handoff", func() error { _, err := a.WaitHandoff(bg, hB.ID); return err }, rule},
		{"cancel a handoff", func() error { _, err := a.CancelHandoff(bg, hB.ID); return err }, rule},
		{"downloads by slug", downloads("bolt"), rule},
		{"downloads by id", downloads(bolt.ID), rule},
		{"downloads by name", downloads("Bolt"), rule},
		{"downloads of the web browser", downloads(api.WebSlug), rule},
		{"downloads of no such store", downloads("nosuch"), rule},
		{"a call report of B's task", func() error { return a.ReportCall(bg, taskB, api.CallReport{Client: taskB}) }, "only as itself"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantAPIError(t, tt.call(), http.StatusForbidden, tt.want) })
	}
	if h, err := d.client.GetHandoff(bg, hB.ID); err != nil || h.Status != api.HandoffPending {
		t.Errorf("Bolt's handoff after A's tries = %+v, %v; want it pending, untouched", h, err)
	}
}

// A task's token opens its store's aux session (SPEC §3's --session <slug>-aux): the aux client is every
// task's of the store, not one task's; the web browser has none, and no other task's client opens.
func TestAgentSocketAuxClient(t *testing.T) {
	d := startDaemon(t, nil, true)
	acme, err := d.client.CreateStore(bg, api.StoreSpec{Name: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	const task = "a1b2c3d4-0001"
	tok, err := d.client.MintTaskToken(bg, task, "acme")
	if err != nil {
		t.Fatal(err)
	}
	web, err := d.client.MintTaskToken(bg, "c3d4e5f6-0003", api.WebSlug)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(d.home, api.AgentSocketRel)
	ask := func(kind, store, client string, token api.TaskToken) error {
		c := &api.Client{Socket: sock, Token: token.Token}
		_, err := c.CreateHandoff(bg, api.HandoffRequest{Kind: kind, StoreID: store, ClientID: client, BUName: "acme-aux",
			TaskID: token.TaskID, Reason: "help", WaitS: 60})
		return err
	}
	if err := ask(api.KindStore, acme.ID, api.AuxClient, tok); err != nil {
		t.Errorf("the aux session's handoff under the task's token: %v; want it taken", err)
	}
	wantAPIError(t, ask(api.KindWeb, "", api.AuxClient, web), http.StatusForbidden, "its own clients only")
	wantAPIError(t, ask(api.KindStore, acme.ID, "manual", tok), http.StatusForbidden, "or its store's aux")
	// A call on the aux session is the task's call: its report goes to the task's timeline.
	c := &api.Client{Socket: sock, Token: tok.Token}
	if err := c.ReportCall(bg, task, api.CallReport{Client: api.AuxClient}); err != nil {
		t.Errorf("the task's report of a call on the aux session: %v; want it recorded", err)
	}
	wantAPIError(t, c.ReportCall(bg, task, api.CallReport{Client: "manual"}), http.StatusBadRequest, "a task reports its own calls")
}

// The manager's voice is the manager's (issue 37): on the agents' socket a task reports only what a shim
// reports (its session's wedge), on its own sessions; the manager's own kinds are refused naming the rule
// and the kinds allowed, and what a task reports is listed as the agent's words.
func TestAgentSocketTakesOnlyAShimsReports(t *testing.T) {
	d := startDaemon(t, nil, true)
	const task = "a1b2c3d4-0001"
	acme, _, tok := twoStores(t, d, task)
	a := &api.Client{Socket: filepath.Join(d.home, api.AgentSocketRel), Token: tok.Token}
	report := func(kind, session string) error {
		return a.ReportEvent(bg, api.Event{Kind: kind, StoreID: acme.ID, TaskID: task, BUName: session,
			Message: "the browser is unrecoverable for session " + session})
	}
	for _, session := range []string{"acme-a1b2c3d4", "acme-a1b2c3d4-w2", "acme-aux"} {
		if err := report(api.EventWedgeUnrecoverable, session); err != nil {
			t.Errorf("the shim's wedge report on %s: %v", session, err)
		}
	}
	refusals := []struct{ kind, session, want string }{
		{api.EventBudgetSpent, "acme-a1b2c3d4", "not one a shim reports"},
		{api.EventBrowserDied, "acme-a1b2c3d4", "not one a shim reports"},
		{api.EventBrowserRelaunched, "acme-a1b2c3d4", "a shim may report only [wedge_unrecoverable]"},
		{api.EventHandoffRequested, "acme-a1b2c3d4", "not one a shim reports"},
		{"note", "acme-a1b2c3d4", "not one a shim reports"},
		{api.EventWedgeUnrecoverable, "acme-b2c3d4e5", "not task a1b2c3d4-0001's"},
		{api.EventWedgeUnrecoverable, "acme-a1b2c3d4-w9", "acme-a1b2c3d4-wN with N from 1 to 3, acme-aux"},
		{api.EventWedgeUnrecoverable, "bolt-aux", "not task a1b2c3d4-0001's"},
	}
	for _, tt := range refusals {
		t.Run(tt.kind+" on "+tt.session, func(t *testing.T) {
			wantAPIError(t, report(tt.kind, tt.session), http.StatusForbidden, tt.want)
		})
	}
	evs, err := d.client.Events(bg)
	if err != nil {
		t.Fatal(err)
	}
	var reports int
	for _, ev := range evs {
		switch {
		case ev.Kind != api.EventWedgeUnrecoverable:
			t.Errorf("event %+v listed; want only the shim's reports", ev)
		case ev.From != api.FromAgent:
			t.Errorf("the shim's report %+v; want it marked as the agent's (from %q)", ev, api.FromAgent)
		default:
			reports++
		}
	}
	if reports != 3 {
		t.Errorf("%d reports listed; want the 3 taken", reports)
	}
}

// The shim posts its call report and leaves without the answer (api.Client.PostCall): each report is
// recorded all the same, though its connection is gone before the manager has read it.
func TestPostedCallReportsAreRecorded(t *testing.T) {
	d := startDaemon(t, nil, true)
	const task = "a1b2c3d4-0001"
	_, _, tok := twoStores(t, d, task)
	a := &api.Client{Socket: filepath.Join(d.home, api.AgentSocketRel), Token: tok.Token}
	const n = 30
	for i := range n {
		if err := a.PostCall(bg, task, api.CallReport{Client: task, Outcome: api.CallOK, Code: fmt.Sprintf("print(%d)", i)}); err != nil {
			t.Fatalf("post report %d: %v", i, err)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "every posted report's entry", func() bool {
		tl, err := d.client.Timeline(bg, task, 0, false)
		return err == nil && len(tl.Entries) == n
	})
}
