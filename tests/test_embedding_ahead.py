"""Embedding ahead: a worker process embeds beside this one, and nothing depends on it surviving."""

from __future__ import annotations

import numpy as np

from nexus_memory.embeddings.ahead import START_AT_TEXTS, EmbeddingAhead
from nexus_memory.embeddings.model import get_embedder

WORDS = [
    "atlas",
    "budget",
    "vendor",
    "launch",
    "pottery",
    "harbour",
    "museum",
    "kafka",
    "tennis",
    "lisbon",
    "berlin",
    "invoice",
]


def _texts(n: int, tag: str) -> list[str]:
    return [f"{tag} {i}: {WORDS[i % len(WORDS)]} and {WORDS[(i * 7) % len(WORDS)]} on day {i % 31}" for i in range(n)]


def _assert_same_vectors(ahead: EmbeddingAhead, texts: list[str]) -> None:
    expected = get_embedder().encode(texts)
    got = [ahead.vector(text) for text in texts]
    assert all(vector is not None for vector in got)
    cosines = np.sum(np.stack(got) * expected, axis=1)  # type: ignore[arg-type]
    assert cosines.min() > 0.9999


def test_few_texts_are_embedded_here_without_a_worker() -> None:
    ahead = EmbeddingAhead(get_embedder())
    texts = _texts(START_AT_TEXTS // 4, "few")
    ahead.submit(texts)
    assert ahead._worker is None  # not worth a model load
    ahead.drain()
    _assert_same_vectors(ahead, texts)
    ahead.release(texts[:1])
    assert ahead.vector(texts[0]) is None and ahead.vector(texts[1]) is not None


def test_worker_and_this_process_embed_together_the_same_vectors() -> None:
    ahead = EmbeddingAhead(get_embedder())
    texts = _texts(START_AT_TEXTS + 300, "many")
    ahead.submit(texts)
    worker = ahead._worker
    assert worker is not None
    ahead.submit(texts[:10])  # already submitted: skipped
    ahead.drain()
    _assert_same_vectors(ahead, texts)
    ahead.close()
    assert worker.wait(timeout=60) == 0  # closing its input ends it


def test_a_killed_worker_costs_time_not_vectors() -> None:
    ahead = EmbeddingAhead(get_embedder())
    ahead.start()
    worker = ahead._worker
    assert worker is not None
    texts = _texts(START_AT_TEXTS * 2, "killed")
    ahead.submit(texts)
    worker.kill()
    ahead.drain()  # what the worker had not answered is embedded here
    _assert_same_vectors(ahead, texts)
    assert ahead._worker is None
