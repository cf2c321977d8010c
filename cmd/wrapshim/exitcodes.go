package main

import "vibebrowser/wrapshim"

// exitCodes is the shim's one list of exit codes (SPEC §3): how a call ended, as the agent sees it. Agents
// and prompts depend on these numbers: new codes go at the end and nothing is ever renumbered. It is a fixed
// array, not a map: the shim starts on every agent call, and a map is built (allocated) at every start.
var exitCodes = [...]struct {
	end  wrapshim.Ending
	code int
}{
	{wrapshim.EndUsage, 2},
	{wrapshim.EndUnavailable, 69},
	{wrapshim.EndWedged, 75},
	{wrapshim.EndConfig, 78},
	{wrapshim.EndNoRealCLI, 127},
	{wrapshim.EndTimeout, 142},
	{wrapshim.EndNoAnswer, 79},
	{wrapshim.EndCantHelp, 80},
}

// exitCode is the process's exit code for how a call ended: the real CLI's own status passes on as it is.
func exitCode(end wrapshim.Ending) int {
	if end >= 0 {
		return int(end)
	}
	for _, c := range exitCodes {
		if c.end == end {
			return c.code
		}
	}
	return 0 // not an ending: every one has its code above (TestExitCode)
}
