"""`nexus-memory bench freshness`: how soon what an assistant records is recalled, how soon its facts exist,
and memory under a live load.

On a copy of the sample store (built once under `<data dir>/bench-freshness/base`), the messages of a
synthetic day (`bench/history.py`, stamped with the time they are sent) are recorded one `record_events`
call each, through the tool registry or (`http`) through `nexus-memory serve`, while a second process runs
the pipeline as the new-events sensor's runs do: every `poll_s`, the partitions that gained events with
work left go through `pipeline.layers.run_layers` (in-process, no Dagster daemon: the sensor adds up to
its 15 s interval and a run's start to time_to_fact).

Steady (`run`): N events at `rate` a second; after each record call, recall of its text until it comes back.
  time_to_recallable_s  from the record call to the first recall that returns it (as an event, or a fact of it)
  time_to_fact_s        from the record call to its first fact (`facts.created_at`), time_to_vector_s to
                        that fact's vector; events of which the writer made no fact are counted apart
  cost                  the record call and the recall (ms), the pipeline's busy and CPU seconds per event

Load (`run_load`): `clients` processes record `rate` events a second between them for `seconds`, one call
per event, every tenth sent twice (the second must be answered a duplicate), while a third process recalls
recent messages the whole time; then the pipeline finishes. Every event must be stored once and
processed, no call may fail ("database is locked" is counted apart), and recall's p95 stays in bounds.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import queue
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from nexus_memory.agents.tools import call_tool
from nexus_memory.agents.tools.events import SOURCE
from nexus_memory.bench.coldstart import ensure_store
from nexus_memory.bench.history import HistoryGenerator
from nexus_memory.core.config import Settings, load_settings
from nexus_memory.core.stores import Stores

RECALL_WAIT_S = 10.0  # an event not recalled by then counts as missed
FINISH_WAIT_S = 600.0  # for the pipeline to process every recorded event after the last one
DUPLICATE_EVERY = 10  # load: every tenth event is sent twice
RECALLS_PER_S = 5  # load: the recall process's pace
BASELINE_S = 10.0  # load: recall timed this long before the clients start
Progress = Callable[[str], None]


def run(
    events: int = 100,
    rate: float = 2.0,
    *,
    http: bool = False,
    poll_s: float = 1.0,
    directory: Path | None = None,
    progress: Progress = lambda line: None,
) -> dict[str, Any]:
    """The steady figures (module docstring) for `events` events recorded at `rate` a second."""
    messages = _conversation(events, seed=11)
    with _store_copy(directory, progress) as settings, _pipeline(settings, poll_s, progress) as pipeline:
        with _client(settings, http) as client:
            client.call("recall", {"query": "warm up the query encoder"})
            sent, recallable, record_ms, recall_ms, missed = {}, [], [], [], []
            start = time.perf_counter()
            for i, message in enumerate(messages):
                _sleep_until(start + i / rate)
                began, clock = time.time(), time.perf_counter()
                answer = client.call("record_events", {"events": [_stamped(message, f"steady-{i}")]})
                record_ms.append((time.perf_counter() - clock) * 1000)
                event_id = _stored_id(answer)
                sent[event_id] = began
                while True:
                    clock = time.perf_counter()
                    found = client.call("recall", {"query": message["content"]})
                    recall_ms.append((time.perf_counter() - clock) * 1000)
                    if _holds(found, event_id):
                        recallable.append(time.time() - began)
                        break
                    if time.time() - began > RECALL_WAIT_S:
                        missed.append(message["content"])
                        break
                    time.sleep(0.02)
                if (i + 1) % 25 == 0:
                    progress(f"freshness: {i + 1}/{events} recorded")
        report = pipeline.finish()
        with Stores(settings, readonly=True) as stores:
            reached = _reached(stores, sent)
    facts = reached["fact"]
    return {
        "mode": "http" if http else "registry",
        "events": events,
        "rate_per_s": rate,
        "poll_s": poll_s,
        "time_to_recallable_s": _p(recallable),
        "recall_missed": len(missed),
        "recall_missed_texts": missed[:5],
        "time_to_fact_s": _p(list(facts.values())),
        "time_to_vector_s": _p(list(reached["vector"].values())),
        "time_to_processed_s": _p(list(reached["processed"].values())),
        "events_with_facts": len(facts),
        "events_processed": len(reached["processed"]),
        "cost": {
            "record_call_ms": _p(record_ms, 1),
            "recall_ms": _p(recall_ms, 1),
            **_per_event(report, events),
        },
        "pipeline": report,
    }


def run_load(
    rate: float = 50.0,
    seconds: float = 60.0,
    *,
    clients: int = 2,
    http: bool = False,
    poll_s: float = 1.0,
    directory: Path | None = None,
    progress: Progress = lambda line: None,
) -> dict[str, Any]:
    """The load figures (module docstring): `rate` events a second from `clients` processes for `seconds`."""
    per_client = int(rate * seconds / clients)
    context = multiprocessing.get_context("spawn")
    with _store_copy(directory, progress) as settings, _pipeline(settings, poll_s, progress) as pipeline:
        with _server(settings) if http else _no_server() as url:
            results = context.Queue()
            phases = ready, loading, stop = context.Event(), context.Event(), context.Event()
            sent_so_far = context.Array("i", clients)  # each client's messages stored so far
            workers = [
                context.Process(
                    target=_record_loop,
                    args=(str(settings.data_dir), url, client, per_client, rate / clients, sent_so_far, results),
                )
                for client in range(clients)
            ]
            recaller = context.Process(
                target=_recall_loop,
                args=(str(settings.data_dir), url, clients, per_client, sent_so_far, phases, results),
            )
            recaller.start()
            ready.wait()
            time.sleep(BASELINE_S)  # recall before the load, for comparison on the same machine
            loading.set()
            for worker in workers:
                worker.start()
            progress(f"freshness load: {clients} clients, {rate:g} events/s for {seconds:g} s")
            reports = [results.get() for _ in workers]
            stop.set()
            recall_report = results.get()
            for process in [*workers, recaller]:
                process.join()
        sent = {event_id: began for report in reports for event_id, began in report.pop("sent").items()}
        progress(f"freshness load: {len(sent)} events sent; waiting for the pipeline to process them")
        pipeline_report = pipeline.finish()
        with Stores(settings, readonly=True) as stores:
            reached = _reached(stores, sent)
            stored = stores.conn.execute("SELECT count(*) FROM events WHERE source = ?", (SOURCE,)).fetchone()[0]
    errors = sum((Counter(r["errors"]) for r in reports), Counter()) + Counter(recall_report["errors"])
    record_ms = [ms for r in reports for ms in r.pop("record_ms")]
    latencies = recall_report.pop("recall_ms")
    return {
        "mode": "http" if http else "registry",
        "clients": clients,
        "rate_per_s": rate,
        "seconds": seconds,
        "sent": len(sent),
        "stored": stored,
        "stored_once": stored == len(sent) and all(r["answered_stored"] == r["sent_count"] for r in reports),
        "duplicates_sent": sum(r["duplicates_sent"] for r in reports),
        "duplicates_answered": sum(r["duplicates_answered"] for r in reports),
        "processed": len(reached["processed"]),
        "all_processed": len(reached["processed"]) == len(sent),
        "events_with_facts": len(reached["fact"]),
        "errors": dict(errors),
        "database_is_locked": sum(n for reason, n in errors.items() if "database is locked" in reason),
        "achieved_rate_per_s": round(sum(r["sent_count"] / r["wall_s"] for r in reports), 2),
        "record_call_ms": _p(record_ms, 1),
        "recall_during_load": {"queries": len(latencies), "ms": _p(latencies, 1), **recall_report},
        "time_to_fact_s": _p(list(reached["fact"].values())),
        "time_to_processed_s": _p(list(reached["processed"].values())),
        "cost": _per_event(pipeline_report, len(sent)),
        "pipeline": pipeline_report,
    }


# --- the store, the pipeline, the clients --------------------------------------------------------


@contextmanager
def _store_copy(directory: Path | None, progress: Progress) -> Iterator[Settings]:
    """Settings of a fresh copy of the sample store (built once under `directory`/base)."""
    root = Path(directory) if directory else load_settings().data_dir / "bench-freshness"
    base = root / "base" / "data"
    if not (base / "events.db").exists():
        progress(f"freshness: building the sample store once in {base}")
    ensure_store(base)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="run-", dir=root) as tmp:
        shutil.copytree(base, Path(tmp) / "data")
        yield load_settings(data_dir=Path(tmp) / "data", inbox_dir=Path(tmp) / "inbox")


class _Pipeline:
    """The pipeline process (`_pipeline_loop`) and how it is told to finish."""

    def __init__(self, settings: Settings, poll_s: float) -> None:
        context = multiprocessing.get_context("spawn")
        self.ready, self.stop, self.results = context.Event(), context.Event(), context.Queue()
        self.process = context.Process(
            target=_pipeline_loop, args=(str(settings.data_dir), poll_s, self.ready, self.stop, self.results)
        )

    def finish(self) -> dict[str, Any]:
        """Let it process every event recorded, then stop it; its report."""
        self.stop.set()
        while True:
            try:
                report: dict[str, Any] = self.results.get(timeout=1)
            except queue.Empty:
                if not self.process.is_alive():
                    raise RuntimeError(f"the pipeline process died (exit {self.process.exitcode})") from None
                continue
            self.process.join()
            return report


@contextmanager
def _pipeline(settings: Settings, poll_s: float, progress: Progress) -> Iterator[_Pipeline]:
    pipeline = _Pipeline(settings, poll_s)
    pipeline.process.start()
    try:
        progress("freshness: loading the pipeline's models")
        while not pipeline.ready.wait(0.5):
            if not pipeline.process.is_alive():
                raise RuntimeError(f"the pipeline process did not start (exit {pipeline.process.exitcode})")
        yield pipeline
    finally:
        if pipeline.process.is_alive():  # the benchmark failed before `finish`
            pipeline.process.kill()
            pipeline.process.join()


def _pipeline_loop(data_dir: str, poll_s: float, ready: Any, stop: Any, results: Any) -> None:
    """Every `poll_s`: the partitions that gained events with work left, through every layer (as the
    sensor's runs do, without Dagster). After `stop`: until no recorded event has work left."""
    from nexus_memory.embeddings.ahead import ahead_for
    from nexus_memory.embeddings.model import get_embedder
    from nexus_memory.pipeline.layers import partitions_ingested_after, pending_partitions, run_layers
    from nexus_memory.writer.offline_writer import OfflineWriter

    writer, embedder = OfflineWriter(), get_embedder()
    embedder.encode(["load the model before the clock starts"])
    report: dict[str, Any] = {"runs": 0, "busy_s": 0.0, "errors": Counter()}
    with Stores(load_settings(data_dir=data_dir)) as stores:
        mark = stores.conn.execute("SELECT coalesce(max(rowid), 0) FROM events").fetchone()[0]
        cpu_before = time.process_time()
        ready.set()
        deadline: float | None = None
        while True:
            if stop.is_set() and deadline is None:
                deadline = time.monotonic() + FINISH_WAIT_S
            touched, high_water = partitions_ingested_after(stores, mark)
            pending = set(pending_partitions(stores)) & set(touched) if touched else set()
            try:
                for platform in sorted({p for _, p in pending}):
                    days = sorted(d for d, p in pending if p == platform)
                    clock = time.perf_counter()
                    run_layers(stores, platform, days, writer=writer, embedder=embedder)
                    report["busy_s"] += time.perf_counter() - clock
                    report["runs"] += 1
                mark = high_water if not pending else mark  # a partition with work left is looked at again
            except Exception as exc:  # counted, and the partitions are tried again
                report["errors"][f"{type(exc).__name__}: {exc}"[:200]] += 1
            if deadline is not None and (not pending or time.monotonic() > deadline):
                break
            time.sleep(poll_s)
        ahead_for(embedder).close()  # its worker's CPU then counts among this process's children
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        report["cpu_s"] = round(time.process_time() - cpu_before + children.ru_utime + children.ru_stime, 2)
    report["busy_s"] = round(report["busy_s"], 2)
    report["errors"] = dict(report["errors"])
    results.put(report)


class _Client:
    """Calls the agent tools: through the registry on its own stores, or over HTTP (`nexus-memory serve`)."""

    def __init__(self, data_dir: Path, url: str | None) -> None:
        self.url = url
        self.stores = None if url else Stores(load_settings(data_dir=data_dir))

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if self.stores is not None:
            return call_tool(self.stores, name, arguments)
        request = urllib.request.Request(
            f"{self.url}/tools/{name}",
            data=json.dumps(arguments).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return json.loads(exc.read() or b"{}") or {"error": f"HTTP {exc.code}"}

    def close(self) -> None:
        if self.stores is not None:
            self.stores.close()


@contextmanager
def _client(settings: Settings, http: bool) -> Iterator[_Client]:
    with _server(settings) if http else _no_server() as url:
        client = _Client(settings.data_dir, url)
        try:
            yield client
        finally:
            client.close()


@contextmanager
def _no_server() -> Iterator[None]:
    yield None


@contextmanager
def _server(settings: Settings) -> Iterator[str]:
    """`nexus-memory serve` on a free loopback port of these stores; its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "NEXUS_DATA_DIR": str(settings.data_dir)}
    command = [sys.executable, "-m", "nexus_memory.cli", "serve", "--port", str(port)]
    server = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("nexus-memory serve did not start") from None
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def _record_loop(
    data_dir: str, url: str | None, client: int, count: int, rate: float, sent_so_far: Any, results: Any
) -> None:
    """One load client: `count` events at `rate` a second, every DUPLICATE_EVERY-th sent twice."""
    api = _Client(Path(data_dir), url)
    messages = _conversation(count, seed=100 + client)
    out: dict[str, Any] = {"sent": {}, "record_ms": [], "errors": Counter(), "answered_stored": 0}
    out |= {"duplicates_sent": 0, "duplicates_answered": 0}
    start = time.perf_counter()
    for i, message in enumerate(messages):
        _sleep_until(start + i / rate)
        event = _stamped(message, f"load-{client}-{i}")
        for attempt in range(2 if i % DUPLICATE_EVERY == 0 else 1):
            began, clock = time.time(), time.perf_counter()
            try:
                answer = api.call("record_events", {"events": [event]})
            except Exception as exc:  # counted with its reason; the load goes on
                out["errors"][f"{type(exc).__name__}: {exc}"[:200]] += 1
                continue
            out["record_ms"].append((time.perf_counter() - clock) * 1000)
            status = answer.get("events", [{}])[0].get("status") if "error" not in answer else None
            if status is None or status in ("rejected", "conflict"):
                reason = answer.get("error") or answer["events"][0].get("reason")
                out["errors"][str(reason)[:200]] += 1
            elif attempt == 0 and status == "stored":
                out["answered_stored"] += 1
                out["sent"][answer["events"][0]["id"]] = began
                sent_so_far[client] = i + 1
            elif attempt == 1:
                out["duplicates_sent"] += 1
                out["duplicates_answered"] += status == "duplicate"
    out["wall_s"] = time.perf_counter() - start
    out["sent_count"] = len(messages)
    out["errors"] = dict(out["errors"])
    api.close()
    results.put(out)


def _recall_loop(
    data_dir: str, url: str | None, clients: int, count: int, sent_so_far: Any, phases: Any, results: Any
) -> None:
    """RECALLS_PER_S recalls a second: before the load (the same machine, same moment, nothing recorded yet),
    then of the text of a message a client sent a moment ago, until the load is over. `phases`: (ready,
    loading, stop) events. Without a URL, recall() itself, as the tool runs it, so its steps are timed too."""
    ready, loading, stop = phases
    api = _Client(Path(data_dir), url)
    api.call("recall", {"query": "warm up the query encoder"})
    texts = [[m["content"] for m in _conversation(count, seed=100 + c)] for c in range(clients)]
    latencies: dict[str, list[float]] = {"before": [], "during": []}
    steps: dict[str, list[float]] = {"fresh": [], "touch": []}
    errors: Counter[str] = Counter()
    found = 0
    ready.set()
    start, load_start = time.perf_counter(), None
    for n in itertools.count():
        if stop.is_set():
            break
        _sleep_until(start + n / RECALLS_PER_S)
        if load_start is None and loading.is_set():
            load_start = time.perf_counter()
        client = n % clients
        query = texts[client][max(sent_so_far[client] - 1, 0)]  # the newest message it stored
        clock = time.perf_counter()
        try:
            said = _recalled_texts(api, query, steps if load_start is not None else None)
        except Exception as exc:  # counted with its reason; the load goes on
            errors[f"{type(exc).__name__}: {exc}"[:200]] += 1
            continue
        latencies["before" if load_start is None else "during"].append((time.perf_counter() - clock) * 1000)
        found += load_start is not None and any(query in text for text in said)
    api.close()
    results.put(
        {
            "recall_ms": latencies["during"],
            "before_load_ms": _p(latencies["before"], 1),
            **{f"{step}_step_ms": _p(values, 1) for step, values in steps.items() if values},
            "errors": dict(errors),
            "found_own_text_share": _share(found, latencies["during"]),
        }
    )


def _recalled_texts(api: _Client, query: str, steps: dict[str, list[float]] | None) -> list[str]:
    """The texts recall returns for `query`; the time of its steps added to `steps` when given."""
    if api.stores is None:
        answer = api.call("recall", {"query": query})
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return [r["text"] for r in answer["results"]]
    from nexus_memory.recall import recall

    response = recall(api.stores, query)
    for step, values in (steps or {}).items():
        values.append(response.timings_ms.get(step, 0.0))
    return [r.text for r in response.results]


# --- events and figures --------------------------------------------------------------------------


def _conversation(count: int, seed: int) -> list[dict[str, Any]]:
    """`count` messages of a synthetic day (bench/history.py), to be stamped as they are sent."""
    return list(itertools.islice(HistoryGenerator(max(count, 1), seed, days=1).events(), count))


def _stamped(message: dict[str, Any], key: str) -> dict[str, Any]:
    """The message as sent now, under an id of this run."""
    return {**message, "id": f"fresh-{key}", "as_of": int(time.time() * 1000)}


def _stored_id(answer: dict[str, Any]) -> str:
    if "error" in answer or answer["events"][0]["status"] != "stored":
        raise RuntimeError(f"record_events did not store the event: {answer}")
    return answer["events"][0]["id"]


def _holds(answer: dict[str, Any], event_id: str) -> bool:
    """Whether a recall answer returns the event itself or a fact drawn from it."""
    return any(r["id"] == event_id or event_id in r.get("source_event_ids", []) for r in answer.get("results", []))


def _reached(stores: Stores, sent: dict[str, float]) -> dict[str, dict[str, float]]:
    """Seconds from each event's record call to its first fact, that fact's vector, and the writer's pass."""
    ids = json.dumps(list(sent))
    queries = {
        "fact": "SELECT source_event_id, min(created_at) FROM facts f WHERE source_event_id IN "
        "(SELECT value FROM json_each(?)) GROUP BY source_event_id",
        "vector": """SELECT f.source_event_id, min(m.created_at) FROM facts f JOIN embeddings m
                     ON m.target_type = 'fact' AND m.target_id = f.id
                     WHERE f.source_event_id IN (SELECT value FROM json_each(?)) GROUP BY f.source_event_id""",
        "processed": "SELECT event_id, processed_at FROM memory_processing_log WHERE event_id IN "
        "(SELECT value FROM json_each(?))",
    }
    return {
        name: {row[0]: row[1] / 1000 - sent[row[0]] for row in stores.conn.execute(sql, (ids,))}
        for name, sql in queries.items()
    }


def _per_event(report: dict[str, Any], events: int) -> dict[str, Any]:
    n = max(events, 1)
    return {
        "pipeline_busy_s_per_event": round(report["busy_s"] / n, 4),
        "pipeline_cpu_s_per_event": round(report["cpu_s"] / n, 4),
    }


def _p(samples: list[float], digits: int = 3) -> dict[str, float | None]:
    if not samples:
        return {"p50": None, "p95": None}
    values = np.asarray(samples, dtype=float)
    return {
        "p50": round(float(np.percentile(values, 50)), digits),
        "p95": round(float(np.percentile(values, 95)), digits),
    }


def _share(part: int, whole: list[float]) -> float | None:
    return round(part / len(whole), 3) if whole else None


def _sleep_until(moment: float) -> None:
    delay = moment - time.perf_counter()
    if delay > 0:
        time.sleep(delay)
