package main

import (
	"fmt"
	"io"
)

// agentCall is the smallest whole agent call, the one the benchmark times: connect to BU_CDP_WS, open a tab
// (Target.createTarget), attach to it (flat), evaluate in it (Runtime.evaluate), and print the value and the
// tab's target id. The tab is left open: the benchmark closes it after timing the call, so that hundreds of
// calls in a row each meet the same browser and no call is timed while Chromium tears a tab down.
func agentCall(out io.Writer) error {
	c, err := dialEndpoint()
	if err != nil {
		return err
	}
	defer c.conn.Close()
	var created struct{ TargetID string }
	if err := c.into(&created, "Target.createTarget", map[string]any{"url": "about:blank"}, ""); err != nil {
		return err
	}
	var attached struct{ SessionID string }
	if err := c.into(&attached, "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, ""); err != nil {
		return err
	}
	v, err := c.eval(attached.SessionID, "1+1")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(v), created.TargetID)
	return err
}
