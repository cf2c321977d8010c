package testkit

import "os"

// HeadlessDisabledFeatures are the Chromium features the manager turns off in a headless store browser
// (manager/chrome, whose test checks they are its own), for the tests' own Chromiums too: HeadlessChromiumArgs
// and the UI scripts' js/chromium.sh (whose test checks it here).
const HeadlessDisabledFeatures = "WebUIOmniboxPopup,WebUIOmniboxAimPopup"

// HeadlessChromiumArgs are the switches of every headless Chromium a test or a benchmark launches itself on
// profile, before its debugging switch (the manager's launches get theirs from manager/chrome): no network of
// its own, no omnibox WebUI preloaded (HeadlessDisabledFeatures: 1.5 CPU-seconds a launch), --no-sandbox as root.
func HeadlessChromiumArgs(profile string) []string {
	args := []string{"--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-features=" + HeadlessDisabledFeatures, "--user-data-dir=" + profile}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	return args
}
