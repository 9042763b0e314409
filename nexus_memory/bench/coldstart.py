"""Cold-start benchmark: seconds and peak memory of a fresh `nexus-memory recall` / `context` process.

A hook or tool that runs the CLI once per agent turn pays a whole process start every time. Each
measurement here is one new process, on the ONNX query path (torch is never imported once a checked
export exists) and on the torch path (NEXUS_QUERY_BACKEND=torch), interleaved in one run so that
the load of the machine falls on both alike. Peak RSS is each child's own ru_maxrss (os.wait4 in a
small launcher process).

Two baselines are timed in the same rounds: a bare `python -c pass` (the interpreter's own start) and
a process that only imports what a cold query imports (IMPORTS, under the environment the CLI sets for
a one-query command), so the figures split into interpreter, imports, and model load + query.

The store is built once (the sample events through the pipeline's core, without Dagster) in the
model cache, or any store given with `data_dir` is used as it is. One untimed warm-up process on
the ONNX path comes first: it makes and checks the export when there is none yet.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from nexus_memory.bench.synthetic import SAMPLE_EVENTS
from nexus_memory.core.command import installed_command
from nexus_memory.core.config import load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings import query_encoder

QUERIES = (
    "When is the Atlas launch now?",
    "What did Priya say about QA?",
    "why did the vendor slip",
    "what is Dana working on",
)
BACKENDS = ("onnx", "torch")
TARGET_S = 0.3  # median seconds of a cold recall / context on the ONNX path (issue 25)
TARGET_RSS_MB = 200.0
# What a cold `recall` / `context` imports before it loads the model: the import-only baseline.
IMPORTS = (
    "nexus_memory.cli.memory",
    "nexus_memory.injection.context",
    "nexus_memory.recall.engine",
    "nexus_memory.embeddings.model",
    "onnxruntime",
    "tokenizers",
)


def ensure_store(data_dir: Path, events: Path = SAMPLE_EVENTS) -> dict[str, int]:
    """A store with facts and vectors in `data_dir`: reused when it has them, else built from `events`."""
    from nexus_memory.embeddings.model import get_embedder
    from nexus_memory.events.ingest import ingest_file
    from nexus_memory.events.partitions import ledger_days
    from nexus_memory.pipeline.layers import run_layers
    from nexus_memory.writer.offline_writer import OfflineWriter

    with Stores(load_settings(data_dir=data_dir)) as stores:
        counts = stores.counts()
        if counts["facts"] and counts["embeddings"]:
            return counts
        ingest_file(stores, events, "jsonl")
        writer, embedder = OfflineWriter(), get_embedder()
        for (platform,) in stores.conn.execute("SELECT DISTINCT platform FROM events ORDER BY platform").fetchall():
            run_layers(stores, platform, ledger_days(stores, platform), writer=writer, embedder=embedder)
        return stores.counts()


# Starts the measured process and waits for it with wait4: that process's own peak RSS. Measured from
# this small launcher, not from the benchmark itself, because Linux folds the memory of the process
# that forks into the child's ru_maxrss, and the benchmark may hold a loaded model.
_LAUNCHER = """import json, os, sys, time
started = time.perf_counter()
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - started
with open(sys.argv[1], "w") as report:
    json.dump({"seconds": seconds, "maxrss": usage.ru_maxrss, "returncode": os.waitstatus_to_exitcode(status)}, report)
"""


def measure(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run one process to the end: wall seconds, its own peak RSS (MB), exit code and output."""
    with tempfile.TemporaryDirectory(prefix="nexus-coldstart-") as tmp:
        report_path, out_path, err_path = (Path(tmp) / name for name in ("report.json", "out", "err"))
        with out_path.open("wb") as out, err_path.open("wb") as err:
            launcher = subprocess.run(
                [sys.executable, "-c", _LAUNCHER, str(report_path), *args],
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env=env,
            )
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        # ru_maxrss is KiB on Linux, bytes on macOS.
        unit = 1024 * 1024 if sys.platform == "darwin" else 1024
        return {
            "seconds": report["seconds"] if report else 0.0,
            "rss_mb": report["maxrss"] / unit if report else 0.0,
            "returncode": report["returncode"] if report else launcher.returncode or 1,
            "stdout": out_path.read_text("utf-8", "replace"),
            "stderr": err_path.read_text("utf-8", "replace"),
        }


def _summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = [s["seconds"] for s in samples]
    rss = [s["rss_mb"] for s in samples]
    return {
        "runs": len(samples),
        "median_s": round(statistics.median(seconds), 3),
        "min_s": round(min(seconds), 3),
        "max_s": round(max(seconds), 3),
        "median_rss_mb": round(statistics.median(rss), 1),
        "max_rss_mb": round(max(rss), 1),
    }


def _top_ids(stdout: str) -> list[str]:
    return [r["id"] for r in json.loads(stdout)["results"][:5]]


def run(runs: int = 5, *, data_dir: Path | None = None, events: Path = SAMPLE_EVENTS) -> dict[str, Any]:
    """The benchmark: `runs` cold processes per command and query path; medians, extremes, peak RSS."""
    if runs < 1:
        raise ValueError("runs must be at least 1")
    data_dir = Path(data_dir) if data_dir else query_encoder.cache_dir() / "bench-coldstart" / "data"
    counts = ensure_store(data_dir, events)
    command = installed_command()
    base_env = {**os.environ, "NEXUS_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    env = {backend: {**base_env, "NEXUS_QUERY_BACKEND": backend} for backend in BACKENDS}
    commands = {
        "recall": lambda q: [*command, "recall", q, "--json"],
        "context": lambda q: [*command, "context", q],
    }
    export_ready = _export_ready(data_dir)
    # Untimed: makes the ONNX export when there is none. The torch path has nothing to make; its first
    # run may read more from disk, which the median over several runs absorbs.
    _checked(measure(commands["recall"](QUERIES[0]), env["onnx"]), "warm-up", "onnx")
    baselines = {
        "python": [sys.executable, "-c", "pass"],
        "imports": [sys.executable, "-c", "import " + ", ".join(IMPORTS)],
    }
    baseline_env = {"OPENBLAS_NUM_THREADS": "1", **env["onnx"]}  # as the CLI sets it (cli/__init__.py)
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {c: {b: [] for b in BACKENDS} for c in commands}
    baseline_samples: dict[str, list[dict[str, Any]]] = {name: [] for name in baselines}
    same_results = True
    load_before = os.getloadavg()
    for i in range(runs):
        query = QUERIES[i % len(QUERIES)]
        for name, args in baselines.items():
            baseline_samples[name].append(_checked(measure(args, baseline_env), name, "baseline"))
        for name, make in commands.items():
            got = {b: _checked(measure(make(query), env[b]), name, b) for b in BACKENDS}
            for backend, sample in got.items():
                samples[name][backend].append(sample)
            if name == "recall":
                same_results &= _top_ids(got["onnx"]["stdout"]) == _top_ids(got["torch"]["stdout"])
    results: dict[str, Any] = {}
    for name, by_backend in samples.items():
        summary = {backend: _summary(by_backend[backend]) for backend in BACKENDS}
        summary["speedup_median"] = round(summary["torch"]["median_s"] / summary["onnx"]["median_s"], 2)
        summary["rss_ratio_median"] = round(summary["torch"]["median_rss_mb"] / summary["onnx"]["median_rss_mb"], 2)
        results[name] = summary
    baseline = {name: _summary(got) for name, got in baseline_samples.items()}
    return {
        "children": {"recall": "nexus-memory recall QUERY --json", "context": "nexus-memory context QUERY"},
        "store": {"data_dir": str(data_dir), "facts": counts["facts"], "embeddings": counts["embeddings"]},
        "onnx_export_existed_before_run": export_ready,
        "runs": runs,
        "cpu_count": os.cpu_count(),
        "load_average_1m": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "target_s": TARGET_S,
        "target_rss_mb": TARGET_RSS_MB,
        "meets_target": all(
            results[name]["onnx"]["median_s"] <= TARGET_S and results[name]["onnx"]["max_rss_mb"] <= TARGET_RSS_MB
            for name in commands
        ),
        "same_top5_recall_results": same_results,
        "baselines": {"python -c pass": baseline["python"], "imports only": baseline["imports"]},
        # Where a cold ONNX command's median goes: the interpreter, the imports, then model load + query.
        "split_median_s": {
            name: {
                "interpreter": baseline["python"]["median_s"],
                "imports": round(baseline["imports"]["median_s"] - baseline["python"]["median_s"], 3),
                "model_and_query": round(results[name]["onnx"]["median_s"] - baseline["imports"]["median_s"], 3),
            }
            for name in commands
        },
        "results": results,
    }


def _checked(sample: dict[str, Any], name: str, backend: str) -> dict[str, Any]:
    if sample["returncode"] != 0:
        tail = sample["stderr"].strip().splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"cold {name} on the {backend} path exited {sample['returncode']}: {tail[0]}")
    return sample


def _export_ready(data_dir: Path) -> bool:
    """Whether a checked ONNX export of the store's index model exists already."""
    from nexus_memory.embeddings.model import model_location, split_identity
    from nexus_memory.embeddings.vectors.vec0 import index_state

    with Stores(load_settings(data_dir=data_dir), readonly=True) as stores:
        state = index_state(stores.conn)
    if state is None:
        return False
    model = split_identity(state[0])[0]  # one export serves every recipe of a model ('…+bf16' included)
    record = query_encoder.read_check(query_encoder.export_dir(model, model_location(model)))
    return bool(record and record.get("ok"))
