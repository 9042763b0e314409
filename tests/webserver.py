"""A real `dagster-webserver` for tests: a free loopback port, a temp DAGSTER_HOME, the repo's workspace.yaml.

conftest.py registers the `webserver` fixture for every test module.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT_S = 120


@dataclass(frozen=True)
class Webserver:
    port: int
    home: Path  # the DAGSTER_HOME it serves
    data_dir: Path  # the NEXUS_DATA_DIR its code location reads

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def graphql(self, query: str) -> dict:
        request = urllib.request.Request(
            f"{self.url}/graphql",
            data=json.dumps({"query": query}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def webserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webserver]:
    """Starts the webserver once per test session (it takes ~10 s), waits until it answers GraphQL, and
    stops it (whole process group) at the end. Tests only read from it, so they can share it."""
    tmp_path = tmp_path_factory.mktemp("webserver")
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    server = Webserver(_free_port(), home=home, data_dir=tmp_path / "data")
    env = {**os.environ, "DAGSTER_HOME": str(home), "NEXUS_DATA_DIR": str(server.data_dir)}
    executable = Path(sys.executable).parent / "dagster-webserver"
    log_path = tmp_path / "webserver.log"
    # A file, not a pipe: nobody reads the output while the test runs, and a full pipe would stall the server.
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(executable), "-h", "127.0.0.1", "-p", str(server.port), "-w", str(REPO / "workspace.yaml")],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # A shell that started us in the background may ignore SIGTERM; the server must not inherit that.
            preexec_fn=lambda: (
                signal.signal(signal.SIGTERM, signal.SIG_DFL),
                signal.signal(signal.SIGINT, signal.SIG_DFL),
            ),
        )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            try:
                server.graphql("{ version }")
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    output = log_path.read_text(errors="replace")
                    pytest.fail(f"webserver did not come up:\n{output[-3000:]}")
                time.sleep(1)
        yield server
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
