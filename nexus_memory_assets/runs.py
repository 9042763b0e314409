"""Runs whose process died: found by the worker tag every run carries, and marked failed.

A run killed with SIGKILL (or by a power cut) stays STARTED in the instance for ever, and holds its
platform's run slot and its steps' pool slots, so every later run of that platform would wait.
Dagster's run monitoring (dagster.yaml) cannot tell for the default run launcher or for in-process
runs, so each run records which process executes it (`nexus/worker`: host, pid and the process's
start time, so a reused pid does not pass for the old one). `nexus-memory pipeline` and the sensor
mark the runs of dead workers on this host failed and free their slots before they start anything.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path

import dagster as dg

WORKER_TAG = "nexus/worker"
_UNFINISHED = [
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc); None: no such live process; '': unknown."""
    if not Path("/proc/self/stat").exists():
        return ""  # no procfs (macOS): worker_alive asks the kernel by pid alone
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return ""
    # The command name (field 2) may hold spaces; fields after its closing ')' are plain.
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else fields[19]  # a zombie has exited already


def worker_tag(pid: int | None = None) -> str:
    """'host:pid:start' of this process (or of `pid`)."""
    pid = pid or os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid) or ''}"


def worker_alive(tag: str) -> bool | None:
    """Whether the process a worker tag names still runs; None when it ran on another host."""
    parts = tag.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    host, pid, started = parts
    if host != socket.gethostname():
        return None
    now = _start_time(int(pid))
    if now is None:
        return False
    if now and started:
        return now == started  # the same pid with another start time is another process
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def claim_run(context: dg.OpExecutionContext, tags: Mapping[str, str] | None = None) -> None:
    """Tag the run with this process, for runs launched elsewhere (UI, sensor, backfill daemon), and with
    `tags` it lacks (the tenant, on a run of selected assets launched from the UI)."""
    missing = {key: value for key, value in (tags or {}).items() if key not in context.run.tags}
    mine = worker_tag()
    if context.run.tags.get(WORKER_TAG) != mine:
        missing[WORKER_TAG] = mine
    if missing:
        context.instance.add_run_tags(context.run_id, missing)


def fail_orphaned_runs(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    """Mark unfinished runs whose worker process on this host is gone failed (canceling ones canceled),
    and free the pool slots they held. Returns those runs."""
    orphans: list[dg.DagsterRun] = []
    for record in instance.get_run_records(filters=dg.RunsFilter(statuses=_UNFINISHED)):
        run = record.dagster_run
        tag = run.tags.get(WORKER_TAG)
        if not tag or worker_alive(tag) is not False:
            continue
        message = (
            f"The process that ran this run ({tag}) is gone (killed or crashed); marked failed so it holds no slot."
        )
        if run.status == dg.DagsterRunStatus.CANCELING:
            instance.report_run_canceled(run, message)
        else:
            instance.report_run_failed(run, message)
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        orphans.append(run)
    return orphans
