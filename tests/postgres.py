"""A throwaway PostgreSQL server for tests: Debian's binaries, a cluster in a temp dir, a free loopback port.

Debian's `postgresql` package is installed by scripts/ensure-postgres.sh (`make test` runs it first; so does
`postgres_server` when the binaries are missing). As root the cluster belongs to the `postgres` user
(`initdb` refuses to run as root), so its directory is made outside pytest's private temp folders.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from webserver import REPO, free_port

PASSWORD = "nexus"  # the cluster trusts loopback connections; dagster-postgres wants a password all the same


def _bin_dir() -> Path | None:
    """The newest installed server's bin folder (Debian keeps one per major version), or initdb's on PATH."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if found:
        return found[-1].parent
    on_path = shutil.which("initdb")
    return Path(on_path).resolve().parent if on_path else None


def postgres_bin() -> Path:
    """Where initdb and pg_ctl are, installing Debian's server first when they are missing."""
    if (found := _bin_dir()) is None:
        done = subprocess.run(["bash", str(REPO / "scripts" / "ensure-postgres.sh")], capture_output=True, text=True)
        if done.returncode != 0 or (found := _bin_dir()) is None:
            pytest.fail(f"no PostgreSQL server for the test: {done.stderr.strip()[-2000:]}")
    return found


@dataclass(frozen=True)
class Postgres:
    """A running server on 127.0.0.1:`port`; the superuser is `postgres`."""

    port: int
    user: str = "postgres"
    host: str = "127.0.0.1"

    def create_database(self, name: str) -> str:
        import psycopg2

        conn = psycopg2.connect(host=self.host, port=self.port, user=self.user, password=PASSWORD, dbname="postgres")
        try:
            conn.autocommit = True
            with conn.cursor() as cursor:
                cursor.execute(f'CREATE DATABASE "{name}"')
        finally:
            conn.close()
        return name

    def storage(self, db_name: str) -> dict:
        """The `storage:` section of a dagster.yaml that keeps runs, event logs and schedules in `db_name`."""
        db = {"hostname": self.host, "port": self.port, "username": self.user, "password": PASSWORD, "db_name": db_name}
        # psycopg2, the driver dagster-postgres installs: SQLAlchemy 2.1 reads a bare "postgresql" as psycopg 3.
        return {"postgres": {"postgres_db": {**db, "scheme": "postgresql+psycopg2"}}}


def _as_owner(command: list[str], owner: str | None) -> list[str]:
    return ["runuser", "-u", owner, "--", *command] if owner else command


@contextlib.contextmanager
def postgres_server() -> Iterator[Postgres]:
    """initdb into a fresh temp dir, start the server on a free port, and remove it all on the way out."""
    try:
        import dagster_postgres  # noqa: F401
    except ImportError:
        pytest.fail("dagster-postgres is missing: `make install` (the dev extra has it), or install '.[postgres]'")
    bin_dir = postgres_bin()
    owner = "postgres" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="nexus-postgres-"))
    if owner:
        shutil.chown(root, owner, owner)
    data, log = root / "data", root / "server.log"
    server = Postgres(free_port())
    initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", server.user, "-A", "trust", "--no-sync", "-E", "UTF8"]
    subprocess.run(_as_owner(initdb, owner), check=True, capture_output=True)
    options = f"-p {server.port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    start = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start"]
    started = subprocess.run(_as_owner(start, owner), capture_output=True, text=True)
    if started.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"PostgreSQL did not start: {started.stderr}{log.read_text() if log.exists() else ''}")
    try:
        yield server
    finally:
        stop = [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
        subprocess.run(_as_owner(stop, owner), capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
