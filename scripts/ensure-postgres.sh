#!/usr/bin/env bash
# Install Debian's PostgreSQL server for the tests that run Dagster's instance on it, when it is missing
# (`make test` runs this first; tests/postgres.py runs it too). The tests start their own throwaway
# cluster (initdb into a temp dir, a free loopback port), never the packaged one.
set -uo pipefail

found() {
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null 2>&1
}
found && exit 0
source "$(dirname "$0")/apt-install.sh"
apt_install postgresql "the Dagster-on-Postgres tests" found
