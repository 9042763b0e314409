"""Embedding ahead: a batch's new facts are embedded on a second thread while the writer goes on.

In a backfill the writer (Python, one core) and the model (one torch thread) took turns: facts for the
whole batch, then vectors for the whole batch. Here the facts layer hands each day's new fact texts to
`EmbeddingAhead.submit` as soon as the writer committed them; a daemon thread embeds them (torch leaves
the GIL while it computes, so the writer keeps the other core) and keeps the vectors by text. The
embeddings layer waits for what is under way (`drain`), then takes those vectors (`take`) instead of
encoding the texts again, and stores them exactly as before. A text with no vector kept is encoded
there as always: embedding ahead is only a shortcut, the same model, precision and text give the same
vector, and nothing is stored from here, so a crash loses nothing but time.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from nexus_memory.embeddings import ENCODE_BATCH, Embedder, text_hash

log = logging.getLogger(__name__)

TEXTS_PER_CALL = 256  # taken off the queue at once, sorted by length, encoded ENCODE_BATCH at a time
MAX_KEPT = 100_000  # vectors kept for the embeddings layer (~150 MB); the oldest go first beyond it
IDLE_EXIT_S = 30.0  # the thread ends after this long with nothing to do, and starts again on demand


class EmbeddingAhead:
    """Vectors made ahead for one embedder, by text; see the module doc."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._queue: list[str] = []
        self._kept: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._cond = threading.Condition()
        self._busy = False
        self._thread: threading.Thread | None = None

    def _key(self, text: str) -> tuple[str, str]:
        return (self.embedder.precision, text_hash(text))

    def submit(self, texts: Sequence[str]) -> None:
        """Embed these texts in the background (those already kept or queued are skipped)."""
        with self._cond:
            queued = set(self._queue)
            new = [t for t in dict.fromkeys(texts) if t not in queued and self._key(t) not in self._kept]
            if not new:
                return
            self._queue.extend(new)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="embedding-ahead", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                if not self._queue and not self._cond.wait_for(lambda: bool(self._queue), timeout=IDLE_EXIT_S):
                    self._thread = None
                    return
                texts = sorted(self._queue[:TEXTS_PER_CALL], key=len)
                del self._queue[:TEXTS_PER_CALL]
                self._busy = True
            try:
                vectors = self.embedder.encode(texts, batch_size=ENCODE_BATCH)
            except Exception as exc:  # the embeddings layer encodes these itself, and reports any error
                log.warning("embedding ahead failed (%s: %s); the embeddings layer will do it", type(exc).__name__, exc)
                vectors = None
            with self._cond:
                if vectors is not None:
                    for text, vector in zip(texts, vectors, strict=True):
                        self._kept[self._key(text)] = vector
                    while len(self._kept) > MAX_KEPT:
                        self._kept.popitem(last=False)
                self._busy = False
                self._cond.notify_all()

    def drain(self) -> None:
        """Wait until every submitted text is embedded (or given up)."""
        with self._cond:
            self._cond.wait_for(lambda: not self._queue and not self._busy)

    def take(self, text: str) -> np.ndarray | None:
        """The vector made ahead for `text`, if any (handed out once)."""
        with self._cond:
            return self._kept.pop(self._key(text), None)


_AHEAD: weakref.WeakKeyDictionary[Embedder, EmbeddingAhead] = weakref.WeakKeyDictionary()
_AHEAD_LOCK = threading.Lock()


def ahead_for(embedder: Embedder) -> EmbeddingAhead:
    """The process's EmbeddingAhead of this embedder (one per loaded model)."""
    with _AHEAD_LOCK:
        if embedder not in _AHEAD:
            _AHEAD[embedder] = EmbeddingAhead(embedder)
        return _AHEAD[embedder]
