"""The real Dagster webserver: starts on a free loopback port, answers GraphQL, shuts down cleanly."""

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
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _graphql(port: int, query: str) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", data=json.dumps({"query": query}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


@pytest.mark.slow
def test_webserver_serves_graphql_and_the_asset_graph(tmp_path: Path) -> None:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    port = _free_port()
    env = {**os.environ, "DAGSTER_HOME": str(home), "NEXUS_DATA_DIR": str(tmp_path / "data")}
    webserver = Path(sys.executable).parent / "dagster-webserver"
    process = subprocess.Popen(
        [str(webserver), "-h", "127.0.0.1", "-p", str(port), "-w", str(REPO / "workspace.yaml")],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        # A shell that started us in the background may ignore SIGTERM; the server must not inherit that.
        preexec_fn=lambda: (signal.signal(signal.SIGTERM, signal.SIG_DFL),
                            signal.signal(signal.SIGINT, signal.SIG_DFL)),
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                version = _graphql(port, "{ version }")
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    output = process.stdout.read().decode() if process.stdout else ""
                    pytest.fail(f"webserver did not come up:\n{output[-3000:]}")
                time.sleep(1)
        assert version["data"]["version"]
        nodes = _graphql(port, "{ assetNodes { assetKey { path } isPartitioned } }")["data"]["assetNodes"]
        keys = {"/".join(n["assetKey"]["path"]) for n in nodes}
        assert {"events", "episodes", "facts", "embeddings"} <= keys
        assert all(n["isPartitioned"] for n in nodes if n["assetKey"]["path"][0] in keys)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    assert process.returncode is not None
