"""Fast query embedding: the loaded sentence-transformers model, exported once to ONNX.

Recall embeds one short query per call. torch spends ~11-20 ms on that on these 2 cores; onnxruntime
runs the same graph in ~4-6 ms. The export is fp32, so query vectors match the torch vectors the
facts were embedded with (cosine > 0.9999, checked on load); int8 measured only ~0.97 and is not used.

The exported file is cached per model and library versions under NEXUS_MODEL_CACHE
(default ~/.cache/nexus-memory). Anything that fails here (onnxruntime missing, an unsupported
pooling, an export error, a parity miss) leaves recall on torch and says why once in the log.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nexus_memory.config import load_settings

log = logging.getLogger(__name__)

PARITY_MIN_COSINE = 0.9999
_PARITY_PROBES = ("What did Alice say about the trip to Lisbon?", "kitchen sink", "Wann ist das Treffen?")
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def cache_dir() -> Path:
    """Where exported models live (Settings.model_cache_dir: NEXUS_MODEL_CACHE, default ~/.cache/nexus-memory)."""
    return load_settings().model_cache_dir


class OnnxQueryEncoder:
    """Embeds search queries with onnxruntime: tokenise, run the transformer, pool, normalise."""

    def __init__(self, session: Any, tokenizer: Any, pooling: str, max_length: int, input_names: list[str]) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.max_length = max_length
        self.input_names = input_names

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (len(texts), dimension), rows of unit length; one run for all texts."""
        tokens = self.tokenizer(
            list(texts), return_tensors="np", truncation=True, max_length=self.max_length, padding=True
        )
        feed = {name: tokens[name].astype(np.int64) for name in self.input_names}
        hidden = self.session.run(None, feed)[0]  # (texts, sequence, dimension)
        if self.pooling == "cls":
            vectors = hidden[:, 0]
        else:  # mean over each text's own tokens, padding left out
            mask = tokens["attention_mask"][..., None].astype(np.float32)
            vectors = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)
        vectors = vectors.astype(np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def load_onnx_encoder(model: Any, model_name: str, reference: Any) -> OnnxQueryEncoder | None:
    """An ONNX twin of a sentence-transformers `model`, or None (with a logged reason) if not possible.

    `reference(text)` is the torch query embedding, used to check the twin before trusting it.
    """
    try:
        encoder = _build(model, model_name)
    except Exception as exc:  # any failure keeps the torch path; recall must not break over speed
        log.warning("query embedding stays on torch: %s: %s", type(exc).__name__, exc)
        return None
    # Each probe alone and all of them in one padded run: both must reproduce the torch vectors.
    alone = [float(encoder.encode([text])[0] @ reference(text)) for text in _PARITY_PROBES]
    together = encoder.encode(_PARITY_PROBES) @ np.stack([reference(text) for text in _PARITY_PROBES]).T
    worst = min(*alone, *np.diag(together))
    if worst < PARITY_MIN_COSINE:
        log.warning("query embedding stays on torch: ONNX export of %s differs (cosine %.5f)", model_name, worst)
        return None
    return encoder


_EXPORT_LOCK = threading.Lock()


def _build(model: Any, model_name: str) -> OnnxQueryEncoder:
    import onnxruntime

    transformer, pooling = _modules(model)
    hf_model = transformer.auto_model
    tokenizer = transformer.tokenizer
    input_names = [n for n in _INPUTS if n in tokenizer("x", return_tensors="np")]
    if "attention_mask" not in input_names:  # padded batches need it, in the graph and for pooling
        raise ValueError(f"tokenizer gives no attention_mask (only {input_names})")
    path = _export(hf_model, tokenizer, model_name, input_names)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1  # recall runs beside Dagster steps; 1 thread measured fastest
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return OnnxQueryEncoder(session, tokenizer, pooling, int(transformer.max_seq_length), input_names)


def _modules(model: Any) -> tuple[Any, str]:
    """(transformer module, 'mean' | 'cls'), or ValueError for shapes this encoder does not reproduce."""
    modules = list(model)
    names = [type(m).__name__ for m in modules]
    if names[:2] != ["Transformer", "Pooling"] or any(n not in ("Normalize",) for n in names[2:]):
        raise ValueError(f"unsupported module stack {names}")
    pooling = modules[1]
    # sentence-transformers 6 has `pooling_mode`; earlier releases `get_pooling_mode_str()`.
    mode = getattr(pooling, "pooling_mode", None) or pooling.get_pooling_mode_str()
    mode = mode if isinstance(mode, str) else "+".join(mode)
    if mode not in ("mean", "cls"):
        raise ValueError(f"unsupported pooling {mode!r}")
    return modules[0], mode


def _export(hf_model: Any, tokenizer: Any, model_name: str, input_names: list[str]) -> Path:
    """Export (once) the transformer's last hidden state to ONNX; returns the cached file."""
    import torch
    import transformers

    key = hashlib.sha256(f"{model_name}|{torch.__version__}|{transformers.__version__}".encode()).hexdigest()[:16]
    path = cache_dir() / "onnx" / f"{Path(model_name).name}-{key}.onnx"
    with _EXPORT_LOCK:
        if path.exists():
            return path
        path.parent.mkdir(parents=True, exist_ok=True)

        class LastHidden(torch.nn.Module):
            def __init__(self, inner: Any) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
                return self.inner(**dict(zip(input_names, inputs, strict=True))).last_hidden_state

        sample = tokenizer(["a short sample query"], return_tensors="pt")
        axes = {name: {0: "batch", 1: "sequence"} for name in [*input_names, "hidden"]}
        partial = path.with_suffix(f".{os.getpid()}.part")
        with warnings.catch_warnings():  # tracer chatter about Python branches in the model code
            warnings.simplefilter("ignore")
            torch.onnx.export(
                LastHidden(hf_model).eval(),
                tuple(sample[n] for n in input_names),
                str(partial),
                input_names=input_names,
                output_names=["hidden"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        partial.replace(path)  # atomic: a concurrent reader sees the whole file or none
    return path
