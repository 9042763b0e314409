#!/usr/bin/env bash
# Sourced by the ensure-*.sh scripts: install one Debian package that `make test` needs, as root or via
# sudo -n, updating the package lists only when the first try fails. Where it cannot, one line says why.
# Usage: apt_install PACKAGE "WHAT IT IS FOR" CHECK_COMMAND (CHECK_COMMAND succeeds once it is there).

apt_install() {
    local package=$1 purpose=$2 check=$3 log reason
    local -a as_root
    fail() {
        echo "make test: $package ($purpose) is missing and $*" >&2
        exit 1
    }
    command -v apt-get >/dev/null 2>&1 || fail "this machine has no apt-get: install $package yourself"
    if [ "$(id -u)" -eq 0 ]; then
        as_root=()
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        as_root=(sudo -n)
    else
        fail "installing it needs root: run 'sudo apt-get install -y --no-install-recommends $package' once"
    fi
    log=$(mktemp "${TMPDIR:-/tmp}/nexus-memory-$package.XXXXXX")
    install() {
        "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$package" \
            >>"$log" 2>&1
    }
    echo "make test: installing Debian's $package for $purpose (apt-get; log: $log)" >&2
    # A fresh machine may have no package lists yet: update only when the first try fails.
    if ! install && ! { "${as_root[@]}" apt-get update -q >>"$log" 2>&1 && install; }; then
        reason=$(grep -E '^(E|Err):' "$log" | tail -n 1)
        fail "'apt-get install $package' failed: ${reason:-$(tail -n 1 "$log")} (log: $log)"
    fi
    rm -f "$log"
    $check || fail "was not installed by Debian's $package package"
}
