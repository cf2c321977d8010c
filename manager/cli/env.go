package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"vibebrowser/manager/api"
)

// EnvCmd prints what an agent launcher evals to give an agent its browser.
type EnvCmd struct {
	Store string `help:"Store name, slug or id." xor:"which" required:""`
	Web   bool   `help:"The store-less web browser." xor:"which" required:""`
	Task  string `help:"The agent's task id (exported as VIBE_TASK_ID; its downloads folder as VIBE_DOWNLOAD_DIR): the task is registered and its token minted (VIBE_TASK_TOKEN)."`
}

// Run prints POSIX shell lines: the wrapper directory and the guard in front of PATH, the task id, and the
// folder the task's downloads land in (VIBE_DOWNLOAD_DIR, the value the shim gives each of its calls), so the
// agent's own shell finds its files. With a task, the task is registered and its token minted and exported
// (VIBE_TASK_TOKEN: the shim then calls the agents' socket as that task, SPEC §14); a store with an agent
// user is better launched with vibe-browser agent, which also drops to that user.
func (c *EnvCmd) Run(g *globals) error {
	if c.Task != "" && !api.ValidTaskID(c.Task) {
		return &usageError{fmt.Sprintf("--task %q is not a task id: want %s", c.Task, api.TaskIDForm)}
	}
	token := ""
	if c.Task != "" {
		store := c.Store
		if c.Web {
			store = api.WebSlug
		}
		tok, err := g.client().MintTaskToken(g.ctx, c.Task, store)
		if err != nil {
			return err
		}
		token = tok.Token
	}
	dir := api.WebKey
	if !c.Web {
		s, err := g.client().GetStore(g.ctx, c.Store)
		if err != nil {
			return err
		}
		dir = s.Slug
	}
	bin := filepath.Join(g.home, "bin")
	fmt.Fprintf(g.stdout, "export PATH=%s\"$PATH\"\n", shellQuote(filepath.Join(bin, dir)+":"+filepath.Join(bin, api.GuardDir)+":"))
	owner := "manual"
	if c.Task != "" {
		fmt.Fprintf(g.stdout, "export VIBE_TASK_ID=%s\nexport %s=%s\n", shellQuote(c.Task), api.TaskTokenEnv, shellQuote(token))
		owner = c.Task
	}
	fmt.Fprintf(g.stdout, "export VIBE_DOWNLOAD_DIR=%s\n", shellQuote(filepath.Join(g.home, "downloads", dir, owner)))
	return nil
}

// shellQuote single-quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
