//go:build !linux

package cli

import (
	"context"
	"os"
	"os/exec"

	"vibebrowser/mux/sys/osuser"
)

// agentTerminal is the agent's own pty, opened on Linux only: elsewhere the agent's new session alone keeps
// it from the launcher's terminal (TIOCSTI needs the controlling terminal), and it has its stdio as it is.
type agentTerminal struct{}

func newAgentTerminal([3]*os.File) (*agentTerminal, error) { return nil, nil }

func (*agentTerminal) attach(*exec.Cmd, *osuser.User) error { return nil }
func (*agentTerminal) relay(context.Context)                {}
func (*agentTerminal) close(bool) error                     { return nil }
