package doctor

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// commandTimeout bounds a program the doctor runs to ask its version: one that hangs is reported, not waited for.
const commandTimeout = 15 * time.Second

// firstLine runs name with args, stdin empty, and returns the first non-empty line of its output (stdout,
// else stderr). A failure's error carries that line.
func firstLine(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	line := lineOf(out.String())
	if line == "" {
		line = lineOf(errb.String())
	}
	if ctx.Err() != nil {
		return "", fmt.Errorf("no answer within %v", commandTimeout)
	}
	if err != nil {
		if line != "" {
			return "", fmt.Errorf("%v: %s", err, line)
		}
		return "", err
	}
	return line, nil
}

func lineOf(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
