"""`nexus-memory bench tenants --tenants N --events E`: N small tenants backfilled at once on one host.

Each tenant is what a deployment gives it (README, "Running past one machine"): a data directory of its
own, a Dagster instance home of its own, one run at a time (what the run queue's one-run-per-tenant
limit leaves), in a process of its own. The bench first backfills one tenant alone (its latency is the
floor), then N tenants at once, all started together: each writes a synthetic history of E events
(`bench.history`, a seed per tenant), ingests it as `nexus-memory ingest` does and runs every layer
through Dagster (`pipeline`, passed in by the CLI, as `bench backfill` takes it). Figures: each
tenant's latency (ingest, every layer and the consolidation that ends the pipeline), events per second
in all (N × E over the time from the first start to the last finish), and both against the tenant alone.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nexus_memory.bench.history import FIRST_DAY, write_history
from nexus_memory.core.config import Settings, load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.events.ingest import ingest_file

# The Dagster side: (settings, instance home) -> at least {"wall_s", "ok", "runs"} (bench.backfill's PipelineTiming).
Pipeline = Callable[[Settings, Path], dict[str, Any]]


def run(
    tenants: int,
    events: int,
    pipeline: Pipeline,
    *,
    days: int = 60,
    directory: Path | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """One tenant alone, then `tenants` at once; the figures as a JSON-ready dict."""
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-tenants-", dir=directory) as tmp:
        root = Path(tmp)
        progress(f"one tenant of {events} events alone")
        alone = _at_once(root / "alone", 1, events, days, pipeline)[0]
        progress(f"alone: {alone['seconds']} s; now {tenants} tenants of {events} events at once")
        together = _at_once(root / "together", tenants, events, days, pipeline)
    span = max(t["finished"] for t in together) - min(t["started"] for t in together)
    latencies = [t["seconds"] for t in together]
    return {
        "tenants": tenants,
        "events_per_tenant": events,
        "days": days,
        "alone": {"seconds": alone["seconds"], "events_per_s": round(events / alone["seconds"], 1)},
        "together": {
            "seconds": round(span, 1),
            "events_per_s": round(tenants * events / span, 1),
            "latency_s": {
                "median": round(statistics.median(latencies), 1),
                "min": round(min(latencies), 1),
                "max": round(max(latencies), 1),
            },
            "per_tenant": [
                {k: t[k] for k in ("tenant", "seconds", "ingest_s", "pipeline_s", "runs")} for t in together
            ],
        },
        # Throughput of N at once over one alone, and how much longer each tenant waits than it would alone.
        "throughput_ratio": round(tenants * events / span / (events / alone["seconds"]), 2),
        "latency_ratio": round(statistics.median(latencies) / alone["seconds"], 2),
        "ok": alone["ok"] and all(t["ok"] for t in together),
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_before": [round(x, 1) for x in load_before],
            "load_average_after": [round(x, 1) for x in os.getloadavg()],
        },
    }


def _at_once(root: Path, tenants: int, events: int, days: int, pipeline: Pipeline) -> list[dict[str, Any]]:
    """Start one process per tenant together and wait for all; each reports its own figures."""
    context = multiprocessing.get_context("fork")  # the pipeline callable is a closure: inherited, not pickled
    results = context.Queue()
    workers = [
        context.Process(target=_tenant, args=(root / f"t{i}", i, events, days, pipeline, results), daemon=False)
        for i in range(tenants)
    ]
    for worker in workers:
        worker.start()
    out = [results.get() for _ in workers]
    for worker in workers:
        worker.join()
    failed = [o for o in out if "error" in o]
    if failed:
        raise RuntimeError(f"tenant {failed[0]['tenant']} failed: {failed[0]['error']}")
    return sorted(out, key=lambda o: o["tenant"])


def _tenant(root: Path, index: int, events: int, days: int, pipeline: Pipeline, results: Any) -> None:
    """One tenant's backfill in this (forked) process; puts its figures (or its error) on `results`."""
    tenant = f"bench-{index}"
    try:
        root.mkdir(parents=True)
        settings = load_settings(
            data_dir=root / "data", inbox_dir=root / "inbox", partition_start=FIRST_DAY.isoformat(), tenant=tenant
        )
        write_history(root / "history.jsonl", events, seed=100 + index, days=days)
        started = time.time()
        with Stores(settings) as stores:
            ingest_file(stores, root / "history.jsonl", "jsonl")
        ingest_s = time.time() - started
        timing = pipeline(settings, root / "dagster_home")
        finished = time.time()
        results.put(
            {
                "tenant": tenant,
                "started": started,
                "finished": finished,
                "seconds": round(finished - started, 1),
                "ingest_s": round(ingest_s, 1),
                "pipeline_s": round(timing["wall_s"], 1),
                "runs": timing.get("runs"),
                "ok": bool(timing.get("ok")),
            }
        )
    except Exception as exc:  # the parent waits for every tenant: say what failed instead of hanging
        results.put({"tenant": tenant, "error": f"{type(exc).__name__}: {exc}"})
