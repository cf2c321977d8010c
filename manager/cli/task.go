package cli

import (
	"fmt"

	"vibebrowser/manager/api"
)

// TaskCmd reports tasks to the manager.
type TaskCmd struct {
	Set TaskSetCmd `cmd:"" help:"Record a task's status (pending queued designing planned running waiting completed failed)."`
	Rm  TaskRmCmd  `cmd:"" help:"Forget a task."`

	Log    TaskLogCmd    `cmd:"" help:"Print what a task did, step by step (its timeline)."`
	Export TaskExportCmd `cmd:"" help:"Write a task's timeline as one HTML file, pictures inline, to file or send."`
}

// TaskSetCmd records a task's status.
type TaskSetCmd struct {
	ID     string `arg:"" help:"Task id (VIBE_TASK_ID)."`
	Store  string `help:"The task's store (name, slug or id)."`
	Status string `required:"" help:"pending, queued, designing, planned, running, waiting, completed or failed."`
	JSON   bool   `help:"Print the task as JSON."`
}

// Run records the status.
func (c *TaskSetCmd) Run(g *globals) error {
	t, err := g.client().PutTask(g.ctx, c.ID, api.TaskUpdate{Store: c.Store, Status: c.Status})
	if err != nil {
		return err
	}
	if c.JSON {
		return g.printJSON(t)
	}
	fmt.Fprintf(g.stdout, "task %s is %s\n", t.ID, t.Status)
	return nil
}

// TaskRmCmd forgets a task.
type TaskRmCmd struct {
	ID string `arg:"" help:"Task id."`
}

// Run forgets the task.
func (c *TaskRmCmd) Run(g *globals) error {
	if err := g.client().DeleteTask(g.ctx, c.ID); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "removed task %s\n", c.ID)
	return nil
}

// VersionCmd prints the version.
type VersionCmd struct{}

// Run prints the version.
func (c *VersionCmd) Run(g *globals) error {
	_, err := fmt.Fprintf(g.stdout, "vibe-browser %s\n", Version)
	return err
}
