#!/usr/bin/env bash
# Install Debian's Chromium for the browser test when it is missing (`make test` runs this first).
# The test drives the system's Chromium, not a Playwright download (Ubuntu's chromium is a snap: use Debian's).
set -uo pipefail

target=${1:-/usr/bin/chromium}
found() { [ -x "$target" ]; }
found && exit 0
source "$(dirname "$0")/apt-install.sh"
apt_install chromium "the UI test ($target)" found
