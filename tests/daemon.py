"""A real `dagster-daemon run` for tests, and waiting on an instance's runs until none is left to do.

The daemon (and a `dagster-webserver` for GraphQL, `webserver.process_group`) runs in its own process group with
the test's DAGSTER_HOME; it dequeues runs through the run queue of that dagster.yaml, ticks schedules and
sensors, and drives backfills, as `dagster dev` and a deployment's daemon do.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pytest
from webserver import REPO

UNFINISHED = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]
SELECTOR = {"repositoryLocationName": "nexus_memory", "repositoryName": "__repository__"}


@contextlib.contextmanager
def background(command: list[str], env: dict[str, str], log_path: Path, cwd: Path = REPO) -> Iterator[subprocess.Popen]:
    """`command` in a process group of its own until the block ends; then the whole group is stopped."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):  # the group may be gone already
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def dagster_daemon(workspace: Path, env: dict[str, str], log_path: Path) -> contextlib.AbstractContextManager:
    """`dagster-daemon run -w workspace` until the block ends."""
    return background([_bin("dagster-daemon"), "run", "-w", str(workspace)], env, log_path)


@contextlib.contextmanager
def code_server(location: str, port: int, env: dict[str, str], log_path: Path) -> Iterator[None]:
    """A gRPC code server of the code location `location` (its own env: a tenant's settings), once it serves."""
    command = [_bin("dagster"), "code-server", "start", "-h", "127.0.0.1", "-p", str(port)]
    command += ["-m", "nexus_memory_assets.definitions", "--location-name", location]
    with background(command, env, log_path) as process:
        deadline = time.monotonic() + 180
        health = [_bin("dagster"), "api", "grpc-health-check", "-h", "127.0.0.1", "-p", str(port)]
        while subprocess.run(health, env=env, capture_output=True).returncode != 0:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"code server {location} did not come up:\n{log_path.read_text()[-3000:]}")
            time.sleep(2)
        yield


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def wait_until(
    instance: dg.DagsterInstance, done: Callable[[list[dg.DagsterRun]], bool], timeout_s: float, log: Path
) -> list[dg.DagsterRun]:
    """Every run of the instance, once `done(runs)` holds and no run is queued or running."""
    deadline = time.monotonic() + timeout_s
    while True:
        runs = list(instance.get_runs())
        if done(runs) and not [run for run in runs if run.status in UNFINISHED]:
            return runs
        if time.monotonic() > deadline:
            states = sorted((run.job_name, run.status.value) for run in runs)
            pytest.fail(f"not done after {timeout_s} s; runs {states}; daemon log:\n{log.read_text()[-4000:]}")
        time.sleep(2)
