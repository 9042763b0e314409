"""The warm query path does not repeat itself: a prompt is embedded once however many recalls use it,
and the loaded embedder is handed back without reading the settings again."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from nexus_memory.embeddings import model as embedding_model
from nexus_memory.embeddings.model import DEFAULT_MODEL, Embedder, get_embedder


@pytest.fixture(scope="module")
def loaded() -> Any:
    return get_embedder().model


@pytest.fixture
def runs(loaded: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Embedder, list[list[str]]]:
    """A torch-backed embedder and the texts each model run embedded."""
    embedder = Embedder(DEFAULT_MODEL, loaded, query_backend="torch")
    calls: list[list[str]] = []
    real = Embedder._encode_queries_now

    def counted(self: Embedder, texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return real(self, texts)

    monkeypatch.setattr(Embedder, "_encode_queries_now", counted)
    return embedder, calls


def test_a_query_is_embedded_once(runs: tuple[Embedder, list[list[str]]]) -> None:
    embedder, calls = runs
    first = embedder.encode_query("When is the Atlas launch?")
    again = embedder.encode_queries(["When is the Atlas launch?", "who is on call", "who is on call"])
    assert calls == [["When is the Atlas launch?"], ["who is on call"]]  # only what was new, once
    np.testing.assert_array_equal(again[0], first)
    np.testing.assert_array_equal(again[1], again[2])
    # The same vectors as embedding without the cache.
    fresh = Embedder(DEFAULT_MODEL, embedder.model, query_backend="torch")
    assert float(fresh._encode_queries_now(["who is on call"])[0] @ again[1]) > 0.99999


def test_callers_get_their_own_arrays(runs: tuple[Embedder, list[list[str]]]) -> None:
    embedder, _ = runs
    vector = embedder.encode_query("kitchen sink")
    vector *= 0  # a caller that scales its copy in place
    assert float(np.linalg.norm(embedder.encode_query("kitchen sink"))) == pytest.approx(1.0, abs=1e-5)


def test_the_cache_keeps_the_latest_queries(
    runs: tuple[Embedder, list[list[str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder, calls = runs
    monkeypatch.setattr(embedding_model, "QUERY_CACHE", 2)
    for text in ("one", "two", "one", "three", "one", "two"):
        embedder.encode_query(text)
    # "one" stays (used again before "three" came); "two" was the oldest when "three" came in.
    assert calls == [["one"], ["two"], ["three"], ["two"]]


def test_a_loaded_embedder_is_handed_back_without_reading_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = get_embedder(DEFAULT_MODEL)

    def no_settings(**_: Any) -> Any:
        raise AssertionError("settings read again")

    monkeypatch.setattr(embedding_model, "load_settings", no_settings)
    assert get_embedder(DEFAULT_MODEL) is embedder
    assert get_embedder("sentence-transformers/all-MiniLM-L6-v2") is embedder
