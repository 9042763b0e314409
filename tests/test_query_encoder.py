"""The ONNX query encoder: same vectors as torch, cached export, and a torch fallback on any failure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nexus_memory import query_encoder
from nexus_memory.embeddings import Embedder, get_embedder

QUERIES = [
    "Which company does Alice work for?",
    "",
    "🙂 emoji and ünïcödé",
    "very long query " * 400,  # past the model's 256-token window: both paths must truncate alike
]


@pytest.fixture(scope="module")
def model():
    return get_embedder().model


def test_onnx_matches_torch_and_is_cached(model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_MODEL_CACHE", str(tmp_path))
    torch_side = Embedder("all-MiniLM-L6-v2", model, query_backend="torch")
    onnx_side = Embedder("all-MiniLM-L6-v2", model, query_backend="onnx")
    for text in QUERIES:
        expected = torch_side.encode_query(text)
        got = onnx_side.encode_query(text)
        assert got.shape == expected.shape and got.dtype == np.float32
        assert float(got @ expected) > 0.9999, text[:40]
    assert onnx_side.query_backend == "onnx" and onnx_side._query_encoder is not None
    # Several queries in one run (padded to the longest): each row as if embedded alone.
    together = onnx_side.encode_queries(QUERIES)
    assert together.shape == (len(QUERIES), 384)
    for row, text in zip(together, QUERIES, strict=True):
        assert float(row @ torch_side.encode_query(text)) > 0.9999, text[:40]
    assert onnx_side.encode_queries([]).shape == (0, 384)
    exported = list((tmp_path / "onnx").glob("*.onnx"))
    assert len(exported) == 1 and not list((tmp_path / "onnx").glob("*.part"))
    # A second embedder reuses the cached file rather than exporting again.
    stamp = exported[0].stat().st_mtime_ns
    Embedder("all-MiniLM-L6-v2", model, query_backend="onnx").encode_query("again")
    assert exported[0].stat().st_mtime_ns == stamp


def test_failure_falls_back_to_torch(model, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def broken(*_args: object) -> None:
        raise ImportError("No module named 'onnxruntime'")

    monkeypatch.setattr(query_encoder, "_build", broken)
    embedder = Embedder("all-MiniLM-L6-v2", model, query_backend="onnx")
    vector = embedder.encode_query("where does Alice work?")
    assert embedder.query_backend == "torch" and embedder._query_encoder is None
    assert float(vector @ embedder.encode(["where does Alice work?"])[0]) > 0.9999
    assert "stays on torch" in caplog.text and "onnxruntime" in caplog.text


def test_parity_miss_is_refused(model, monkeypatch: pytest.MonkeyPatch) -> None:
    """An export that does not reproduce the torch vectors is never used."""
    real_build = query_encoder._build

    def skewed(*args: object) -> query_encoder.OnnxQueryEncoder:
        encoder = real_build(*args)
        encoder.pooling = "cls"  # a different pooling: plausible vectors, wrong ones
        return encoder

    monkeypatch.setattr(query_encoder, "_build", skewed)
    embedder = Embedder("all-MiniLM-L6-v2", model, query_backend="onnx")
    embedder.encode_query("anything")
    assert embedder.query_backend == "torch"
