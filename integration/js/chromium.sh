#!/bin/bash
# The Chromium the UI scripts drive (lib.js): VIBE_CHROME (else the OS package's) on playwright's command line,
# with the omnibox's WebUI popups off too, as the manager launches its headless browsers (manager/chrome:
# 1.5 CPU-seconds a launch). They go into playwright's own --disable-features: Chromium reads only the last.
set -euo pipefail
off=WebUIOmniboxPopup,WebUIOmniboxAimPopup
args=()
merged=
for a in "$@"; do
	if [[ $a == --disable-features=* && -z $merged ]]; then
		a="$a,$off"
		merged=1
	fi
	args+=("$a")
done
if [[ -z $merged ]]; then
	args+=("--disable-features=$off")
fi
exec "${VIBE_CHROME:-/usr/bin/chromium}" "${args[@]}"
