"""Fast query embedding: an ONNX export of the sentence-transformers model, checked once when it is made.

Recall embeds one short query per call. A cold process that loads torch and sentence-transformers
for that spends seconds before the first query; onnxruntime and the `tokenizers` package answer the
same query in milliseconds, so once a checked export exists the query path never imports torch.

The export is fp32, so query vectors match the torch vectors the facts were embedded with. When it
is made (the first time a process with the model loaded embeds a query, or at the end of an
embedding run) the ONNX graph and tokenizer are checked against torch on a few probes, alone and in
one padded batch; the result is recorded beside the export and later processes trust the record:

    <cache>/onnx/<model>-<key>/model.onnx        the transformer's last hidden state, as onnxruntime optimises it
    <cache>/onnx/<model>-<key>/weights.bin       its weights, mapped rather than parsed when a session opens
    <cache>/onnx/<model>-<key>/tokenizer.json    its tokenizer, for `tokenizers`
    <cache>/onnx/<model>-<key>/check.json        model, file size and sha256, parity cosine, pooling, ...

The key covers the export format, the model name, the model's files (path, size, mtime) and the
versions of the libraries that made or run the graph, all read without importing them. The folder
is built under a temporary name and renamed into place, so a reader sees a complete export or none.
A failed check is recorded too (recall then stays on torch without exporting again; delete the
folder to retry). Writing an export deletes the model's other exports (older keys: superseded).
The cache is NEXUS_MODEL_CACHE (default ~/.cache/nexus-memory).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nexus_memory.core.config import load_settings

log = logging.getLogger(__name__)

PARITY_MIN_COSINE = 0.9999
_PARITY_PROBES = (
    "What did Alice say about the trip to Lisbon?",
    "kitchen sink",
    "Wann ist das Treffen?",
    "  🙂 emoji, ünïcödé and\ttabs  ",
    "a query longer than the model's window " * 60,  # both paths must truncate alike
)
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Packages whose versions change the exported graph or how it runs: a new version means a new export.
_LIBRARIES = ("torch", "transformers", "sentence-transformers", "onnx", "onnxruntime", "tokenizers")
_EXPORT_LOCK = threading.Lock()
# How this module writes an export; a change makes a new one (3: weights in WEIGHTS; 4: parity per recipe).
EXPORT_FORMAT = 4
WEIGHTS = "weights.bin"  # the graph's initializers, beside model.onnx

Reference = Callable[[str], np.ndarray]  # the torch query embedding of one text


def cache_dir() -> Path:
    """Where exported models live (Settings.model_cache_dir: NEXUS_MODEL_CACHE, default ~/.cache/nexus-memory)."""
    return load_settings().model_cache_dir


class OnnxQueryEncoder:
    """Embeds search queries with onnxruntime: tokenise, run the transformer, pool, normalise."""

    def __init__(self, session: Any, tokenizer: Any, pooling: str, input_names: list[str], dimension: int) -> None:
        self.session = session
        self.tokenizer = tokenizer  # a tokenizers.Tokenizer with truncation and padding set
        self.pooling = pooling
        self.input_names = input_names
        self.dimension = dimension
        # Worst probe cosine to the torch vectors of each document recipe (fp32, bf16), as recorded at export.
        self.recipe_parity: dict[str, float] = {}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (len(texts), dimension), rows of unit length; one run for all texts."""
        if not texts:
            return np.empty((0, self.dimension), np.float32)
        encodings = self.tokenizer.encode_batch([text.strip() for text in texts])
        arrays = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        hidden = self.session.run(None, {name: arrays[name] for name in self.input_names})[0]
        if self.pooling == "cls":
            vectors = hidden[:, 0]
        else:  # mean over each text's own tokens, padding left out
            mask = arrays["attention_mask"][..., None].astype(np.float32)
            vectors = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)
        vectors = vectors.astype(np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


# --- the query path: no torch ---------------------------------------------------------------------


def export_dir(model_name: str, source: Path | None, cache: Path | None = None) -> Path:
    """The export folder of a model (`source`: its files on disk, when known) in `cache` (default
    cache_dir()), existing or not."""
    return (cache or cache_dir()) / "onnx" / f"{Path(model_name).name}-{_key(model_name, source)}"


def read_check(folder: Path) -> dict[str, Any] | None:
    """The recorded check of an export folder, or None when there is none (or it is unreadable)."""
    try:
        record = json.loads((folder / "check.json").read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def checked_encoder(model_name: str, source: Path | None, cache: Path | None = None) -> OnnxQueryEncoder | None:
    """The model's export when its recorded check passed, loaded without torch; else None."""
    folder = export_dir(model_name, source, cache)
    record = read_check(folder)
    if not record or not record.get("ok"):
        return None
    try:
        sizes = ((folder / "model.onnx").stat().st_size, (folder / WEIGHTS).stat().st_size)
        if sizes != (record["onnx_bytes"], record["weights_bytes"]):
            log.warning("ONNX export %s changed since it was checked; it is made again", folder)
            return None
        return _open(folder, record)
    except Exception as exc:  # an unusable export is not trusted; the torch path makes a new one
        log.warning("ONNX export %s unusable (%s: %s)", folder, type(exc).__name__, exc)
        return None


def _open(folder: Path, record: dict[str, Any]) -> OnnxQueryEncoder:
    import onnxruntime
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    tokenizer.enable_truncation(int(record["max_length"]), direction=record["truncation_side"])
    tokenizer.enable_padding(
        pad_id=int(record["pad_id"]), pad_token=record["pad_token"], direction=record["padding_side"]
    )
    # The file is optimised already (see _optimize): optimising it again in every process costs a cold
    # start 0.15-0.4 s.
    config = {"session.disable_prepacking": "1"} if _FEW_QUERIES[0] else None
    session = _session(folder / "model.onnx", onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL, config=config)
    encoder = OnnxQueryEncoder(session, tokenizer, record["pooling"], list(record["input_names"]), record["dimension"])
    encoder.recipe_parity = {"fp32": record.get("parity_min_cosine", 0.0), **record.get("recipe_parity_min_cosine", {})}
    return encoder


# Prepacking lays the weights out for the CPU's matrix kernels when a session opens: 0.09 s more to
# open, half the time of every query after it (6 against 12 ms here). A process that answers a query or
# two (a prompt hook's `nexus-memory context`) is faster without it; every other keeps it.
_FEW_QUERIES = [False]


def expect_few_queries() -> None:
    """This process embeds a query or two and ends: open the query model for a cold start (no prepacking)."""
    _FEW_QUERIES[0] = True


def _session(path: Path, level: Any, optimized_path: Path | None = None, config: dict[str, str] | None = None) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    for key, value in (config or {}).items():
        options.add_session_config_entry(key, value)
    options.intra_op_num_threads = 1  # recall runs beside Dagster steps; 1 thread measured fastest
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: no initializer chatter on stderr
    options.graph_optimization_level = level
    if optimized_path is not None:
        options.optimized_model_filepath = str(optimized_path)
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _optimize(source: Path, target: Path) -> None:
    """Save the graph as onnxruntime optimises it (fusions that hold on any CPU: the 'extended' level),
    its weights in WEIGHTS beside it: onnxruntime maps an external weights file instead of parsing and
    copying 90 MB of protobuf, which took a cold process 0.2-0.3 s of its 0.5."""
    import onnxruntime

    _session(
        source,
        onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        optimized_path=target,
        config={
            "session.optimized_model_external_initializers_file_name": WEIGHTS,
            "session.optimized_model_external_initializers_min_size_in_bytes": "1024",
        },
    )


def installed_versions(packages: Sequence[str]) -> dict[str, str | None]:
    """Each package's installed version (None: not installed), read from the name of its `.dist-info`
    folder on sys.path, as importlib.metadata finds it: importing importlib.metadata (email, csv,
    zipfile) cost a cold query process 0.05-0.09 s."""
    wanted = {_normal_name(package): package for package in packages}
    versions: dict[str, str | None] = dict.fromkeys(packages)
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # a zip file, or a path that is gone
            continue
        for name in names:
            if name.endswith(".dist-info"):
                distribution, _, version = name.removesuffix(".dist-info").partition("-")
                package = wanted.get(_normal_name(distribution))
                if package is not None and versions[package] is None:  # the first on sys.path is imported
                    versions[package] = version
    return versions


def _normal_name(name: str) -> str:
    """A distribution's name as PEP 503 compares them: case, '-', '_' and '.' alike."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _key(model_name: str, source: Path | None) -> str:
    versions = installed_versions(_LIBRARIES)
    files = []
    if source is not None and source.is_dir():
        files = sorted(
            (str(p.relative_to(source)), p.stat().st_size, p.stat().st_mtime_ns)
            for p in source.rglob("*")
            if p.is_file()
        )
    blob = json.dumps(
        {"format": EXPORT_FORMAT, "model": model_name, "versions": versions, "files": files}, sort_keys=True
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# --- making and checking the export: torch is loaded here --------------------------------------


def export_checked(
    model: Any,
    model_name: str,
    source: Path | None,
    reference: Reference,
    cache: Path | None = None,
    recipes: dict[str, Reference] | None = None,
) -> OnnxQueryEncoder | None:
    """The checked ONNX twin of a loaded sentence-transformers `model`, exported and checked if new.

    Returns None, with one logged reason, when there is no usable twin (recall then stays on torch).
    `reference(text)` is the torch query embedding the twin must reproduce. `recipes`: the model's other
    document recipes (bf16), whose parity to the twin is recorded too: it searches their stores.
    """
    folder = export_dir(model_name, source, cache)
    with _EXPORT_LOCK:
        record = read_check(folder)
        if record is None:
            try:
                record = _export_and_check(model, model_name, folder, reference, recipes or {}, source)
            except Exception as exc:  # any failure keeps the torch path; recall must not break over speed
                log.warning("query embedding stays on torch: %s: %s", type(exc).__name__, exc)
                return None
    if not record.get("ok"):
        log.warning(
            "query embedding stays on torch: the ONNX export of %s differs from torch (cosine %.5f); "
            "delete %s to check again",
            model_name,
            record.get("parity_min_cosine", float("nan")),
            folder,
        )
        return None
    return checked_encoder(model_name, source, cache)


def graph_record(
    folder: Path,
    model_name: str,
    transformer: Any,
    pooling: str,
    input_names: list[str],
    dimension: int,
    source: Path | None,
) -> dict[str, Any]:
    """What check.json says of the graph written to `folder` (model.onnx and its weights): the files' sizes
    and sha256, and how to tokenise and pool for it; the caller adds its check's figures."""
    tokenizer = transformer.tokenizer
    onnx_bytes, weights = (folder / "model.onnx").read_bytes(), (folder / WEIGHTS).read_bytes()
    return {
        "model": model_name,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "onnx_bytes": len(onnx_bytes),
        "onnx_sha256": hashlib.sha256(onnx_bytes).hexdigest(),
        "weights_bytes": len(weights),
        "weights_sha256": hashlib.sha256(weights).hexdigest(),
        "pooling": pooling,
        "max_length": int(transformer.max_seq_length),
        "input_names": input_names,
        "pad_id": int(tokenizer.pad_token_id),
        "pad_token": tokenizer.pad_token,
        "padding_side": tokenizer.padding_side,
        "truncation_side": tokenizer.truncation_side,
        "dimension": dimension,
        # The install whose model files made it: another install's export is not superseded by this one.
        "source": str(source) if source is not None else None,
    }


def _export_and_check(
    model: Any,
    model_name: str,
    folder: Path,
    reference: Reference,
    recipes: dict[str, Reference],
    source: Path | None = None,
) -> dict[str, Any]:
    """Export into a temporary folder, check it, record the check, then rename the folder into place."""
    transformer, pooling = _modules(model)
    hf_tokenizer = transformer.tokenizer
    input_names = [n for n in _INPUTS if n in hf_tokenizer("x", return_tensors="np")]
    if "attention_mask" not in input_names:  # padded batches need it, in the graph and for pooling
        raise ValueError(f"tokenizer gives no attention_mask (only {input_names})")
    if hf_tokenizer.pad_token is None:
        raise ValueError("tokenizer has no padding token")
    partial = folder.with_name(f"{folder.name}.{os.getpid()}.part")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        _export(transformer.auto_model, hf_tokenizer, input_names, partial / "torch.onnx")
        _optimize(partial / "torch.onnx", partial / "model.onnx")
        (partial / "torch.onnx").unlink()
        (partial / "tokenizer.json").write_text(hf_tokenizer.backend_tokenizer.to_str())
        dimension = int(np.asarray(reference("x")).shape[-1])
        record = graph_record(partial, model_name, transformer, pooling, input_names, dimension, source)
        encoder = _open(partial, record)
        record["parity_min_cosine"] = round(parity(encoder, reference), 6)
        record["parity_threshold"] = PARITY_MIN_COSINE
        record["parity_probes"] = len(_PARITY_PROBES)
        record["ok"] = record["parity_min_cosine"] >= PARITY_MIN_COSINE
        # The twin against documents of the other recipes: it searches a bf16 store (LoCoMo dev kept its quality,
        # docs/speed.md), and stands in for a recipe it matches to PARITY_MIN_COSINE (embed_facts_now).
        record["recipe_parity_min_cosine"] = {name: round(parity(encoder, ref), 6) for name, ref in recipes.items()}
        (partial / "check.json").write_text(json.dumps(record, indent=2))
        if folder.exists() and read_check(folder) is None:  # a damaged leftover, not another process's export
            shutil.rmtree(folder, ignore_errors=True)
        try:
            partial.rename(folder)  # atomic; fails when another process got there first, and then theirs stands
        except OSError:
            if read_check(folder) is None:
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    remove_superseded(folder)
    return read_check(folder) or record


def remove_superseded(current: Path) -> list[Path]:
    """Delete the other exports of the same model beside `current` made by this install (for older library
    versions, model files or export formats; ~90 MB each, never read again) or by an install that is gone.
    Another install's export stays: two environments sharing the cache would otherwise delete each other's
    on every write, and each cold process would load torch to export again. Folders still being written
    (`.part`) and other models' exports stay. Returns what was deleted."""
    if not _key_suffix(current.name):
        return []
    model = current.name[: -len(_key_suffix(current.name))]
    ours = (read_check(current) or {}).get("source")
    removed = []
    for sibling in current.parent.iterdir():
        suffix = _key_suffix(sibling.name)
        if sibling == current or not sibling.is_dir() or not suffix or sibling.name[: -len(suffix)] != model:
            continue
        theirs = (read_check(sibling) or {}).get("source")
        if theirs is None or theirs == ours or not Path(theirs).exists():
            shutil.rmtree(sibling, ignore_errors=True)
            removed.append(sibling)
    if removed:
        log.info("removed %d superseded ONNX export(s) of %s", len(removed), model)
    return removed


def _key_suffix(name: str) -> str:
    """The '-<key>' ending of an export folder's name ('' when it has none)."""
    match = re.search(r"-[0-9a-f]{16}$", name)
    return match.group(0) if match else ""


def parity(encoder: OnnxQueryEncoder, reference: Reference) -> float:
    """The worst cosine between the encoder and torch over the probes, each alone and all in one batch."""
    expected = np.stack([reference(text) for text in _PARITY_PROBES])
    alone = [float(encoder.encode([text])[0] @ expected[i]) for i, text in enumerate(_PARITY_PROBES)]
    together = np.einsum("ij,ij->i", encoder.encode(_PARITY_PROBES), expected)
    return min(*alone, *together.tolist())


def _modules(model: Any) -> tuple[Any, str]:
    """(transformer module, 'mean' | 'cls'), or ValueError for shapes this encoder does not reproduce."""
    modules = list(model)
    names = [type(m).__name__ for m in modules]
    if names[:2] != ["Transformer", "Pooling"] or any(n not in ("Normalize",) for n in names[2:]):
        raise ValueError(f"unsupported module stack {names}")
    if getattr(modules[0], "do_lower_case", False):
        raise ValueError("the model lower-cases its input itself")
    pooling = modules[1]
    # sentence-transformers 6 has `pooling_mode`; earlier releases `get_pooling_mode_str()`.
    mode = getattr(pooling, "pooling_mode", None) or pooling.get_pooling_mode_str()
    mode = mode if isinstance(mode, str) else "+".join(mode)
    if mode not in ("mean", "cls"):
        raise ValueError(f"unsupported pooling {mode!r}")
    return modules[0], mode


def _export(hf_model: Any, tokenizer: Any, input_names: list[str], path: Path) -> None:
    """Export the transformer's last hidden state to ONNX (fp32, dynamic batch and sequence)."""
    import torch

    class LastHidden(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.inner(**dict(zip(input_names, inputs, strict=True))).last_hidden_state

    sample = tokenizer(["a short sample query"], return_tensors="pt")
    axes = {name: {0: "batch", 1: "sequence"} for name in [*input_names, "hidden"]}
    with warnings.catch_warnings():  # tracer chatter about Python branches in the model code
        warnings.simplefilter("ignore")
        torch.onnx.export(
            LastHidden(hf_model).eval(),
            tuple(sample[n] for n in input_names),
            str(path),
            input_names=input_names,
            output_names=["hidden"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
