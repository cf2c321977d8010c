// Package ziniao drives the Ziniao client's local HTTP API to start and stop store browser environments.
//
// One Ziniao client runs per machine and hosts many store environments; every request carries the
// account's company, username and password. A store's environment is ready only when its debugging port
// answers CDP and Ziniao's instrumentation is live in it (a page evaluates navigator.webdriver as not
// true): Ziniao's startBrowser is flaky per store ("stale launch": the port never binds, or it binds but the
// masking layer never injects). Recovery is per store only, stopBrowser and a retry: the shared client is
// never killed or restarted, because that would take every other store's live environment with it.
package ziniao
