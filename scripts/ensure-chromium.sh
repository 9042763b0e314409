#!/usr/bin/env bash
# Install Debian's Chromium for the browser test when it is missing (`make test` runs this first).
# The test drives the system's Chromium, not a Playwright download. Where it cannot be installed
# here, print one line saying why and how, and fail.
set -uo pipefail

target=${1:-/usr/bin/chromium}
[ -x "$target" ] && exit 0

fail() {
    echo "make test: $target is missing and $*" >&2
    exit 1
}

command -v apt-get >/dev/null 2>&1 || fail "this machine has no apt-get: install Chromium so that $target exists"
if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
else
    fail "installing it needs root: run 'sudo apt-get install -y --no-install-recommends chromium' once"
fi

log=$(mktemp "${TMPDIR:-/tmp}/nexus-memory-chromium.XXXXXX")
install() {
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >>"$log" 2>&1
}
echo "make test: installing Debian's chromium for the UI test (apt-get; log: $log)" >&2
# A fresh machine may have no package lists yet: update only when the first try fails.
if ! install && ! { "${as_root[@]}" apt-get update -q >>"$log" 2>&1 && install; }; then
    reason=$(grep -E '^(E|Err):' "$log" | tail -n 1)
    fail "'apt-get install chromium' failed: ${reason:-$(tail -n 1 "$log")} (log: $log)"
fi
rm -f "$log"
[ -x "$target" ] || fail "was not installed by the chromium package (Ubuntu's is a snap): install Debian's chromium"
