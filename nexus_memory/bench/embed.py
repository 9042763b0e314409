"""`nexus-memory bench embed --data LOCOMO [--gate]`: bulk embedding speed per recipe, and the quality gate.

1. Speed on one core: LoCoMo turns ("Speaker: text", the first `texts`) embedded as embed_pending
   embeds them (length-sorted batches), one thread, in float32 and in bfloat16 autocast, each in
   model calls of ENCODE_BATCH texts (before) and in calls sized by model.BATCH_CHARS (now), and through
   the int8 graph (a call per text), the runs taking turns round after round so all see the same machine
   load; texts/s is the median round, and `speedup_<recipe>` is that recipe now over float32 before (the
   issue's ratio).
2. Speed of the whole machine: the same texts embedded by this process and the embedding-ahead worker
   side by side (two processes, one torch thread each, as the pipeline's embeddings layer does), in
   the recipe `auto` picks here, with the worker's model loaded before the clock starts.
3. Parity: cosine of each text's bf16 and int8 vector to its fp32 one (min / mean), and of the fp32 ONNX
   query export's vector to the bf16 and int8 ones (the query side of their stores).
4. `--gate`: `bench locomo` in a process per recipe, side by side: fp32 documents, then bf16 and int8
   documents, each searched with the fp32 ONNX query export (as their stores are). The gate (issue 25):
   R@10 over categories 1-4 within GATE_OVERALL of fp32 and every category within GATE_CATEGORY.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from nexus_memory.bench.backfill import two_process_seconds
from nexus_memory.core.command import installed_command
from nexus_memory.core.config import load_settings
from nexus_memory.embeddings.model import (
    BATCH_CHARS,
    ENCODE_BATCH,
    Embedder,
    get_embedder,
    native_bf16,
    native_int8,
    resolve_precision,
    split_identity,
    vector_identity,
)
from nexus_memory.embeddings.step import length_batches

GATE_OVERALL = 0.003
GATE_CATEGORY = 0.01
# (name, NEXUS_EMBED_PRECISION, NEXUS_QUERY_BACKEND) of each `bench locomo` process in the gate.
# bf16 torch queries scored as the fp32 export's to four decimals twice (docs/speed.md), so they are not rerun.
GATE_RUNS = (("fp32", "fp32", "onnx"), ("bf16", "bf16", "onnx"), ("int8", "int8", "onnx"))
# (name, recipe, characters per model call) of each one-core speed run; None: calls of ENCODE_BATCH texts
# (int8 embeds each text alone either way).
SPEED_RUNS = (
    ("fp32_64", "fp32", None),
    ("bf16_64", "bf16", None),
    ("fp32", "fp32", BATCH_CHARS),
    ("bf16", "bf16", BATCH_CHARS),
    ("int8", "int8", BATCH_CHARS),
)
RECIPES = ("fp32", "bf16", "int8")


def locomo_turns(path: Path, limit: int) -> list[str]:
    """The first `limit` turns of a LoCoMo file as "Speaker: text"."""
    texts: list[str] = []
    for conversation in json.loads(path.read_text()):
        sessions = conversation["conversation"]
        for key in sorted((k for k in sessions if k.startswith("session_") and isinstance(sessions[k], list)), key=_n):
            texts += [f"{turn['speaker']}: {turn['text']}" for turn in sessions[key]]
    return texts[:limit]


def _n(key: str) -> int:
    return int(key.split("_")[1])


def _encode_all(embedder: Embedder, texts: list[str], batch_chars: int | None) -> tuple[float, float, np.ndarray]:
    """Wall and CPU seconds to embed `texts` in embed_pending's batches, and the vectors in the order given
    (one torch thread computes in this thread, so its CPU time is the model's, whatever the machine's load)."""
    rows = list(enumerate(texts))
    out = np.empty((len(texts), embedder.dimension), np.float32)
    started, cpu = time.perf_counter(), time.thread_time()
    for batch in length_batches(rows, 128):
        vectors = embedder.encode([r[1] for r in batch], batch_size=ENCODE_BATCH, batch_chars=batch_chars)
        out[[r[0] for r in batch]] = vectors
    return time.perf_counter() - started, time.thread_time() - cpu, out


def speed(texts: list[str], rounds: int) -> dict[str, Any]:
    """texts/s of each SPEED_RUNS entry on one core (median of `rounds`, taking turns), of the whole
    machine (two processes), and the parity of the recipes' vectors."""
    settings = load_settings()
    model = get_embedder(settings.embedding_model).model  # the fp32 identity's model, shared by both recipes
    base = settings.embedding_model
    embedders = {recipe: Embedder(base, model, precision=recipe, query_backend="onnx") for recipe in RECIPES}
    vectors: dict[str, np.ndarray] = {}
    seconds: dict[str, list[float]] = {name: [] for name, _, _ in SPEED_RUNS}
    cpu_seconds: dict[str, list[float]] = {name: [] for name, _, _ in SPEED_RUNS}
    for embedder in embedders.values():  # warm-up: first calls allocate (and the int8 graph is made if new)
        embedder.encode(texts[:64])
    for _ in range(rounds):
        for name, recipe, batch_chars in SPEED_RUNS:
            spent, cpu, vectors[name] = _encode_all(embedders[recipe], texts, batch_chars)
            seconds[name].append(spent)
            cpu_seconds[name].append(cpu)
    per_s = {name: len(texts) / statistics.median(spent) for name, spent in seconds.items()}
    per_cpu_s = {name: len(texts) / statistics.median(spent) for name, spent in cpu_seconds.items()}
    auto = get_embedder(vector_identity(split_identity(base)[0], resolve_precision("auto")), threads=1)
    machine = [len(texts) / two_process_seconds(auto, texts) for _ in range(rounds)]
    result: dict[str, Any] = {
        "texts": len(texts),
        "mean_chars": round(sum(map(len, texts)) / len(texts)),
        "rounds": rounds,
        "batch_chars": BATCH_CHARS,
        "texts_per_s_one_core": {name: round(value, 1) for name, value in per_s.items()},
        "seconds_per_round": {name: [round(s, 2) for s in spent] for name, spent in seconds.items()},
        "speedup_bf16": round(per_s["bf16"] / per_s["fp32_64"], 2),  # now, against float32 before
        "speedup_int8": round(per_s["int8"] / per_s["fp32_64"], 2),
        "speedup_bf16_64": round(per_s["bf16_64"] / per_s["fp32_64"], 2),  # bf16 before
        "speedup_fp32": round(per_s["fp32"] / per_s["fp32_64"], 2),
        # The same from CPU seconds: on a shared machine wall time is the load's as much as the model's.
        "cpu_texts_per_s_one_core": {name: round(value, 1) for name, value in per_cpu_s.items()},
        "cpu_speedup_bf16": round(per_cpu_s["bf16"] / per_cpu_s["fp32_64"], 2),
        "cpu_speedup_bf16_64": round(per_cpu_s["bf16_64"] / per_cpu_s["fp32_64"], 2),
        "cpu_speedup_int8": round(per_cpu_s["int8"] / per_cpu_s["fp32_64"], 2),
        "texts_per_s_machine": {
            "recipe": auto.precision,
            "processes": 2,
            "cpus": os.cpu_count(),
            "median": round(statistics.median(machine), 1),
            "rounds": [round(value, 1) for value in machine],
            "to_fp32_64_one_core": round(statistics.median(machine) / per_s["fp32_64"], 2),
        },
        "cosine_bf16_to_fp32": _spread(np.sum(vectors["bf16"] * vectors["fp32_64"], axis=1)),
        "cosine_bf16_to_bf16_64": _spread(np.sum(vectors["bf16"] * vectors["bf16_64"], axis=1)),
        "cosine_int8_to_fp32": _spread(np.sum(vectors["int8"] * vectors["fp32_64"], axis=1)),
    }
    encoder = embedders["fp32"].prepare_query_encoder()
    if encoder is not None:
        onnx = np.concatenate([encoder.encode(texts[i : i + 64]) for i in range(0, len(texts), 64)])
        result["cosine_onnx_fp32_to_bf16"] = _spread(np.sum(onnx * vectors["bf16"], axis=1))
        result["cosine_onnx_fp32_to_int8"] = _spread(np.sum(onnx * vectors["int8"], axis=1))
    return result


def _spread(cosines: np.ndarray) -> dict[str, float]:
    return {"min": round(float(cosines.min()), 6), "mean": round(float(cosines.mean()), 6)}


def gate(data: Path) -> dict[str, Any]:
    """`bench locomo` once per entry of GATE_RUNS, side by side, and the gate's verdict for each recipe."""
    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-embed-") as tmp:
        started = {}
        for name, precision, backend in GATE_RUNS:
            env = {**os.environ, "NEXUS_EMBED_PRECISION": precision, "NEXUS_QUERY_BACKEND": backend}
            env["NEXUS_DATA_DIR"] = str(Path(tmp) / name)
            out = (Path(tmp) / f"{name}.json").open("w")
            command = [*installed_command(), "bench", "locomo", "--data", str(data), "--json"]
            started[name] = (subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.DEVNULL), out)
        for name, (process, out) in started.items():
            code = process.wait()
            out.close()
            if code != 0:
                raise RuntimeError(f"bench locomo for {name} exited {code}")
            runs[name] = _gate_figures(json.loads((Path(tmp) / f"{name}.json").read_text()))
    verdicts = {name: _verdict(runs["fp32"], figures) for name, figures in runs.items() if name != "fp32"}
    return {"runs": runs, "against_fp32": verdicts, "limits": {"overall": GATE_OVERALL, "category": GATE_CATEGORY}}


def _gate_figures(summary: dict[str, Any]) -> dict[str, Any]:
    return {
        "recall_at_10": summary["recall_at_10"],
        "per_category_r10": {name: figures["r@10"] for name, figures in summary["per_category"].items()},
        "n": {name: figures["n"] for name, figures in summary["per_category"].items()},
        "model": summary.get("model"),
    }


def _verdict(base: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    overall = round(other["recall_at_10"] - base["recall_at_10"], 4)
    categories = {
        name: round(other["per_category_r10"][name] - value, 4) for name, value in base["per_category_r10"].items()
    }
    passes = overall >= -GATE_OVERALL and all(delta >= -GATE_CATEGORY for delta in categories.values())
    return {"r10_delta": overall, "category_r10_delta": categories, "passes": passes}


def run(data: Path, *, texts: int = 1024, rounds: int = 3, with_gate: bool = False) -> dict[str, Any]:
    """The whole benchmark: speed and parity, the gate when asked, and what `auto` picks here."""
    result: dict[str, Any] = {
        "speed": speed(locomo_turns(data, texts), rounds),
        "auto_recipe": resolve_precision("auto"),
        "cpu_native_bf16": native_bf16(),
        "cpu_native_int8": native_int8(),
    }
    if with_gate:
        result["gate"] = gate(data)
    return result
