#!/usr/bin/env bash
# Install Debian's PostgreSQL server for the tests that run Dagster's instance on it, when it is missing
# (`make test` runs this first; tests/postgres.py runs it too). The tests start their own throwaway
# cluster (initdb into a temp dir, a free loopback port), never the packaged one. Where it cannot be
# installed here, print one line saying why and how, and fail.
set -uo pipefail

found() {
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null 2>&1
}
found && exit 0

fail() {
    echo "make test: PostgreSQL's server (initdb) is missing and $*" >&2
    exit 1
}

command -v apt-get >/dev/null 2>&1 || fail "this machine has no apt-get: install the PostgreSQL server so that initdb exists"
if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
else
    fail "installing it needs root: run 'sudo apt-get install -y --no-install-recommends postgresql' once"
fi

log=$(mktemp "${TMPDIR:-/tmp}/nexus-memory-postgres.XXXXXX")
install() {
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql >>"$log" 2>&1
}
echo "make test: installing Debian's postgresql for the Dagster-on-Postgres tests (apt-get; log: $log)" >&2
# A fresh machine may have no package lists yet: update only when the first try fails.
if ! install && ! { "${as_root[@]}" apt-get update -q >>"$log" 2>&1 && install; }; then
    reason=$(grep -E '^(E|Err):' "$log" | tail -n 1)
    fail "'apt-get install postgresql' failed: ${reason:-$(tail -n 1 "$log")} (log: $log)"
fi
rm -f "$log"
found || fail "was not installed by the postgresql package: install a PostgreSQL server with initdb"
