package testkit

import "os"

// HeadlessChromiumArgs are the switches of every headless Chromium a test or a benchmark launches itself on
// profile, before its debugging switch (the manager's launches get theirs from manager/chrome, whose test
// checks that the features turned off here are its own): no network of its own, no omnibox WebUI preloaded
// (1.5 CPU-seconds a launch), --no-sandbox as root.
func HeadlessChromiumArgs(profile string) []string {
	args := []string{"--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup", "--user-data-dir=" + profile}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	return args
}
