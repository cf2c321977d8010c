package api

import (
	"context"
	"strconv"
	"strings"
)

// taskPath fills a task route's {id}.
func taskPath(route, id string) string { return strings.Replace(route, "{id}", pathSegment(id), 1) }

// ReportCall tells the manager how one of task's browser-use calls ended and returns its answer (a refusal:
// not the task's, over its quota). Its JSON is written by hand (shimwire.go): the shim sends one on every call
// of a task (PostCall).
func (c *Client) ReportCall(ctx context.Context, task string, rep CallReport) error {
	payload, err := rep.payload()
	if err != nil {
		return err
	}
	_, err = c.send(ctx, MethodPost, taskPath(PathTaskCalls, task), payload)
	return err
}

// PostCall is ReportCall without waiting for the answer: the shim's, at the end of every call, whose exit
// never depends on it (a refused report is the manager's to count and log). The report is written whole
// before it returns.
func (c *Client) PostCall(ctx context.Context, task string, rep CallReport) error {
	payload, err := rep.payload()
	if err != nil {
		return err
	}
	return c.post(ctx, MethodPost, taskPath(PathTaskCalls, task), payload)
}

// payload is the report's request, its JSON in a requestBuffer sized once: growing through the allocator's
// size classes would touch a fresh span at each.
func (rep *CallReport) payload() ([]byte, error) {
	return rep.appendJSON(requestBuffer(512 + len(rep.Code) + len(rep.Stdout) + len(rep.Stderr) + len(rep.Rule)))
}

// Timeline returns task's timeline with its entries after seq after; wait holds the answer until there is a
// new entry (or the manager's poll bound passes), for a follower.
func (c *Client) Timeline(ctx context.Context, task string, after int64, wait bool) (Timeline, error) {
	path := taskPath(PathTaskTimeline, task) + "?after=" + strconv.FormatInt(after, 10)
	if wait {
		path += "&wait=1"
	}
	var tl Timeline
	err := c.Do(ctx, MethodGet, path, nil, &tl)
	return tl, err
}

// ExportTimeline returns task's timeline as one self-contained HTML file.
func (c *Client) ExportTimeline(ctx context.Context, task string) ([]byte, error) {
	return c.Raw(ctx, taskPath(PathTaskExport, task))
}
