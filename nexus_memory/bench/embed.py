"""`nexus-memory bench embed --data LOCOMO [--gate]`: bulk embedding speed per recipe, and the quality gate.

1. Speed: LoCoMo turns ("Speaker: text", the first `texts`) embedded as embed_pending embeds them
   (length-sorted batches), in float32 and in bfloat16 autocast, one torch thread, the recipes taking
   turns round after round so both see the same machine load; texts/s is the median round.
2. Parity: cosine of each text's bf16 vector to its fp32 one (min / mean), and of the fp32 ONNX query
   export's vector to the bf16 one (the query side of a bf16 store).
3. `--gate`: `bench locomo` in a process per recipe, side by side: fp32 documents, bf16 documents with
   fp32 ONNX queries (what a bf16 store is searched with), bf16 documents with bf16 torch queries. The
   gate (issue 25): R@10 over categories 1-4 within GATE_OVERALL of fp32 and every category within
   GATE_CATEGORY.
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

from nexus_memory.core.command import installed_command
from nexus_memory.core.config import load_settings
from nexus_memory.embeddings.model import (
    ENCODE_BATCH,
    RECIPES,
    Embedder,
    get_embedder,
    native_bf16,
    resolve_precision,
)
from nexus_memory.embeddings.step import length_batches

GATE_OVERALL = 0.003
GATE_CATEGORY = 0.01
# (name, NEXUS_EMBED_PRECISION, NEXUS_QUERY_BACKEND) of each `bench locomo` process in the gate.
GATE_RUNS = (("fp32", "fp32", "onnx"), ("bf16", "bf16", "onnx"), ("bf16_torch_queries", "bf16", "torch"))


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


def _encode_all(embedder: Embedder, texts: list[str]) -> tuple[float, np.ndarray]:
    """Seconds to embed `texts` in embed_pending's batches, and the vectors in the order given."""
    rows = list(enumerate(texts))
    out = np.empty((len(texts), embedder.dimension), np.float32)
    started = time.perf_counter()
    for batch in length_batches(rows, 128):
        out[[r[0] for r in batch]] = embedder.encode([r[1] for r in batch], batch_size=ENCODE_BATCH)
    return time.perf_counter() - started, out


def speed(texts: list[str], rounds: int) -> dict[str, Any]:
    """texts/s of each recipe (median of `rounds`, taking turns) and the parity of their vectors."""
    settings = load_settings()
    model = get_embedder(settings.embedding_model).model  # the fp32 identity's model, shared by both recipes
    base = settings.embedding_model
    recipes = {recipe: Embedder(base, model, precision=recipe, query_backend="onnx") for recipe in RECIPES}
    vectors: dict[str, np.ndarray] = {}
    seconds: dict[str, list[float]] = {name: [] for name in recipes}
    for embedder in recipes.values():  # warm-up: first calls allocate
        embedder.encode(texts[:64])
    for _ in range(rounds):
        for name, embedder in recipes.items():
            spent, vectors[name] = _encode_all(embedder, texts)
            seconds[name].append(spent)
    per_s = {name: len(texts) / statistics.median(spent) for name, spent in seconds.items()}
    bf16_to_fp32 = np.sum(vectors["bf16"] * vectors["fp32"], axis=1)
    result: dict[str, Any] = {
        "texts": len(texts),
        "mean_chars": round(sum(map(len, texts)) / len(texts)),
        "rounds": rounds,
        "texts_per_s": {name: round(value, 1) for name, value in per_s.items()},
        "seconds_per_round": {name: [round(s, 2) for s in spent] for name, spent in seconds.items()},
        "speedup_bf16": round(per_s["bf16"] / per_s["fp32"], 2),
        "cosine_bf16_to_fp32": _spread(bf16_to_fp32),
    }
    encoder = recipes["fp32"].prepare_query_encoder()
    if encoder is not None:
        onnx = np.concatenate([encoder.encode(texts[i : i + 64]) for i in range(0, len(texts), 64)])
        result["cosine_onnx_fp32_to_bf16"] = _spread(np.sum(onnx * vectors["bf16"], axis=1))
    return result


def _spread(cosines: np.ndarray) -> dict[str, float]:
    return {"min": round(float(cosines.min()), 6), "mean": round(float(cosines.mean()), 6)}


def gate(data: Path) -> dict[str, Any]:
    """`bench locomo` once per entry of GATE_RUNS, side by side, and the gate's verdict for bf16."""
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
    }
    if with_gate:
        result["gate"] = gate(data)
    return result
