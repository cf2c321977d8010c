package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/mux/sys/osuser"
)

// AgentCmd is the one line an agent launcher needs (SPEC §14): it registers the task, mints its token, and
// runs the agent as its store's agent user with the environment that reaches the store's browser.
type AgentCmd struct {
	Store   string   `help:"Store name, slug or id." xor:"which" required:""`
	Web     bool     `help:"The store-less web browser." xor:"which" required:""`
	Task    string   `help:"The agent's task id (exported as VIBE_TASK_ID)." required:"" placeholder:"ID"`
	Command []string `arg:"" passthrough:"" help:"The agent's command line, after --."`
}

// agentDropped are the variables of the launcher's environment that the agent does not get: the ones this
// command sets, and secrets of the manager's own.
var agentDropped = []string{"PATH", "HOME", "TMPDIR", "USER", "LOGNAME", "VIBE_HOME", "VIBE_TASK_ID",
	api.TaskTokenEnv, "VIBE_DOWNLOAD_DIR", "VIBE_ZINIAO_PASSWORD", "VIBE_SNAPSHOT_KEY", "VIBE_CLUSTER_CREDS",
	"SUDO_COMMAND", "SUDO_USER", "SUDO_UID", "SUDO_GID"}

// Run mints the task's token, starts the agent (as the store's agent user when it has one: groups, gid and
// uid dropped for good before the command runs) in a session of its own, on a pty of its own that Run
// relays where the launcher's stdio is a terminal (SPEC §20), passes it the signals, and when it exits marks
// the task completed (status 0) or failed, which kills its token; its status is the command's.
func (c *AgentCmd) Run(g *globals) error {
	argv := c.Command
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return &usageError{"vibe-browser agent needs the agent's command line after --: " +
			"vibe-browser agent --store S --task ID -- CMD ARGS…"}
	}
	if !api.ValidTaskID(c.Task) {
		return &usageError{fmt.Sprintf("--task %q is not a task id: want %s", c.Task, api.TaskIDForm)}
	}
	store := c.Store
	if c.Web {
		store = api.WebSlug
	}
	tok, err := g.client().MintTaskToken(g.ctx, c.Task, store)
	if err != nil {
		return err
	}
	var user *osuser.User
	if tok.AgentUser != "" {
		if os.Geteuid() != 0 {
			return fmt.Errorf("%s's agents run as %s: only root may start them (vibe-browser agent drops to that user); "+
				"run this as root", store, tok.AgentUser)
		}
		if user, err = osuser.Lookup(tok.AgentUser); err != nil {
			return err
		}
	}
	child := exec.Command(argv[0], argv[1:]...)
	child.Env = agentEnv(os.Environ(), g.home, tok, user)
	if path, err := lookPathIn(argv[0], envValue(child.Env, "PATH")); err == nil {
		child.Path = path
	} else {
		fmt.Fprintf(g.stderr, "vibe-browser agent: cannot start %s: %v\n", argv[0], err)
		return c.finish(g, &exitCodeError{code: 127})
	}
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, g.stdout, g.stderr
	// A session of its own, so that no terminal of the launcher's is the agent's controlling terminal: as
	// the launcher's session member it could type into the launcher's shell (TIOCSTI) or write to its /dev/tty.
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if user != nil {
		child.SysProcAttr.Credential = user.Credential()
		if _, err := os.Stat("."); err != nil || user.MayRead(".") != nil {
			child.Dir = tok.AgentDir // a folder of root's the agent may not enter: start in its home
		}
	}
	tty, err := newAgentTerminal([3]*os.File{os.Stdin, asFile(g.stdout), asFile(g.stderr)})
	if err == nil && tty != nil {
		if err = tty.attach(child, user); err != nil {
			tty.close(false)
		}
	}
	if err != nil {
		fmt.Fprintf(g.stderr, "vibe-browser agent: cannot give the agent a terminal of its own: %v "+
			"(run it with its stdin, stdout and stderr redirected from and to files or pipes)\n", err)
		return c.finish(g, &exitCodeError{code: exitError})
	}
	relay := func(context.Context) {}
	if tty != nil {
		relay = tty.relay
	}
	err = runChild(child, func(err error) error {
		fmt.Fprintf(g.stderr, "vibe-browser agent: cannot start %s: %v\n", argv[0], err)
		return &exitCodeError{code: 127}
	}, relay)
	if tty != nil {
		if cerr := tty.close(child.Process != nil); cerr != nil {
			fmt.Fprintf(g.stderr, "vibe-browser agent: warning: %v\n", cerr)
		}
	}
	return c.finish(g, err)
}

// asFile is w when it is a file (a terminal, maybe), else nil.
func asFile(w io.Writer) *os.File {
	f, _ := w.(*os.File)
	return f
}

// finish marks the task ended by how its agent ended (completed on 0, failed otherwise): its token dies and
// its browser-use daemons are stopped. The agent's status stays the command's.
func (c *AgentCmd) finish(g *globals, runErr error) error {
	status := "completed"
	if runErr != nil {
		status = "failed"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	store := c.Store
	if c.Web {
		store = ""
	}
	if _, err := g.client().PutTask(ctx, c.Task, api.TaskUpdate{Store: store, Status: status}); err != nil {
		fmt.Fprintf(g.stderr, "vibe-browser agent: warning: task %s was not marked %s (its token lives until its lease ends): %s\n",
			c.Task, status, oneLine(err))
	}
	return runErr
}

// agentEnv is the agent's environment: the launcher's, less agentDropped, plus the store's wrapper and the
// guard first on PATH, its task id and token, its downloads folder, and HOME and TMPDIR in the store's agent
// area.
func agentEnv(environ []string, home string, tok api.TaskToken, user *osuser.User) []string {
	env := make([]string, 0, len(environ)+10)
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if name == "PATH" {
			path = value
		}
		if !slices.Contains(agentDropped, name) && !strings.HasPrefix(name, "BU_") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+tok.BinDir+":"+tok.GuardDir+":"+path, "VIBE_HOME="+home, "VIBE_TASK_ID="+tok.TaskID,
		api.TaskTokenEnv+"="+tok.Token, "VIBE_DOWNLOAD_DIR="+tok.DownloadDir,
		"HOME="+tok.AgentDir, "TMPDIR="+filepath.Join(tok.AgentDir, "tmp"))
	if user != nil {
		env = append(env, "USER="+user.Name, "LOGNAME="+user.Name)
	}
	return env
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// lookPathIn finds name on path (the agent's, not the launcher's): a name with a slash is taken as it is.
func lookPathIn(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not on the agent's PATH (%s)", name, path)
}
