// Package chrome launches, adopts and stops Chromium browsers for the manager.
//
// A launched browser runs in its own process group with --remote-debugging-port=0; it is ready when its
// profile's DevToolsActivePort names a port whose /json/version answers. A browser left running by an
// earlier manager is adopted only when its pid, start time, command line and CDP endpoint all match, so a
// reused pid is never mistaken for our browser. Stopping is always bounded: Browser.close, then SIGTERM of
// the group, then SIGKILL of the group.
package chrome
