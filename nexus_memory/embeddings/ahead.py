"""Embedding ahead: new facts are embedded by a second process while the writer goes on.

In a backfill the writer (Python, one core) and the model (one torch thread) took turns: facts for the
whole batch, then vectors for the whole batch. A thread in the same process does not help: the writer
holds the GIL, and the model needs it between every operation (measured: 1,500 texts took 4.5 s alone
and 29 s beside a busy Python thread). So the facts layer hands each day's new fact texts to
`EmbeddingAhead.submit`; once enough are waiting to be worth a model load, a worker process
(`python -m nexus_memory.embeddings.worker`: the same model, precision and threads) embeds them on the
other core. The embeddings layer submits what is still missing and calls `drain`, which embeds
texts not yet sent to the worker in this process, beside the worker, until everything is done; it
then `take`s the vectors and stores them exactly as before.

Embedding ahead is only a shortcut: nothing is stored from here, a text with no vector kept is
encoded by the embeddings layer as always, and a worker that dies or is killed costs time, not data
(what it had not answered is embedded here).
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import subprocess
import sys
import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Sequence
from typing import IO

import numpy as np

from nexus_memory.embeddings.model import ENCODE_BATCH, Embedder, text_hash
from nexus_memory.embeddings.worker import frame

log = logging.getLogger(__name__)

# A worker still loading its model on a loaded machine reads its closed input late: give it that long.
CLOSE_WAIT_S = 30
START_AT_TEXTS = 512  # a worker costs a model load (~5 s); below this many texts this process embeds them
TEXTS_PER_CALL = 256  # texts per request to the worker (and per chunk this process takes in `drain`)
IN_FLIGHT = 2  # requests sent and not answered; the rest wait here, where `drain` can take them
MAX_KEPT = 100_000  # vectors kept for the embeddings layer (~150 MB); the oldest go first beyond it


class EmbeddingAhead:
    """Vectors made ahead for one embedder, by text, with a worker process; see the module doc."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._unsent: deque[str] = deque()  # submitted, not sent to the worker
        self._in_flight: deque[list[str]] = deque()  # sent, not answered, oldest first
        self._known: set[str] = set()  # texts unsent, in flight or kept
        self._kept: OrderedDict[str, np.ndarray] = OrderedDict()  # text hash -> vector
        self._worker_precision: str | None = None  # what the worker embeds in (its first message)
        self._cond = threading.Condition()
        self._worker: subprocess.Popen[bytes] | None = None

    def submit(self, texts: Sequence[str]) -> None:
        """Embed these texts ahead (those already submitted are skipped)."""
        with self._cond:
            new = [t for t in dict.fromkeys(texts) if t not in self._known]
            self._known.update(new)
            self._unsent.extend(new)
            if self._worker is None and len(self._unsent) >= START_AT_TEXTS:
                self._start_worker()
            self._cond.notify_all()

    def start(self) -> None:
        """Start the worker now and wait until its model is loaded (a benchmark's warm-up)."""
        with self._cond:
            if self._worker is None:
                self._start_worker()
            self._cond.wait_for(lambda: self._worker is None or self._worker_precision is not None)

    def drain(self) -> None:
        """Embed everything submitted: unsent texts here, beside the worker, then wait for the worker."""
        while True:
            with self._cond:
                if not self._unsent:
                    # Wait for the worker's answers, or for texts a worker that died handed back.
                    self._cond.wait_for(lambda: bool(self._unsent) or not self._in_flight)
                    if not self._unsent:
                        return
                chunk = sorted((self._unsent.pop() for _ in range(min(TEXTS_PER_CALL, len(self._unsent)))), key=len)
            vectors = self.embedder.encode(chunk, batch_size=ENCODE_BATCH)
            with self._cond:
                self._keep(chunk, vectors, self.embedder.precision)

    def vector(self, text: str) -> np.ndarray | None:
        """The vector made ahead for `text`, if any (kept until `release`: facts can share a text)."""
        with self._cond:
            return self._kept.get(text_hash(text))

    def release(self, texts: Sequence[str]) -> None:
        """Forget these texts' vectors (stored now)."""
        with self._cond:
            for text in texts:
                self._known.discard(text)
                self._kept.pop(text_hash(text), None)

    def _keep(self, texts: list[str], vectors: np.ndarray, precision: str | None) -> None:
        # Called with the lock held. A vector made in another precision than the embedder's is not kept.
        if precision == self.embedder.precision:
            for text, vector in zip(texts, vectors, strict=True):
                self._kept[text_hash(text)] = vector
            while len(self._kept) > MAX_KEPT:
                self._kept.popitem(last=False)
        else:
            self._known.difference_update(texts)
        self._cond.notify_all()

    # -- the worker ---------------------------------------------------------------------------------

    def _start_worker(self) -> None:
        # Called with the lock held.
        embedder = self.embedder
        embedder.prepare_documents()  # an int8 graph is made once per install (~30 s): here, not in both processes
        command = [sys.executable, "-m", "nexus_memory.embeddings.worker", embedder.base_model]
        command += [embedder.precision, str(embedder.torch_threads)]
        try:
            worker = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=os.environ.copy())
        except OSError as exc:  # this process embeds everything in `drain`
            log.warning("embedding ahead could not start a worker (%s); the embeddings layer will do it", exc)
            return
        self._worker, self._worker_precision = worker, None
        threading.Thread(target=self._read, args=(worker,), name="embedding-ahead-in", daemon=True).start()
        threading.Thread(target=self._write, args=(worker,), name="embedding-ahead-out", daemon=True).start()
        _WORKERS.add(worker)

    def _write(self, worker: subprocess.Popen[bytes]) -> None:
        """Sender thread: a request whenever fewer than IN_FLIGHT are unanswered (never writing under the lock)."""
        stream: IO[bytes] = worker.stdin  # type: ignore[assignment]
        while True:
            with self._cond:
                self._cond.wait_for(
                    lambda: self._worker is not worker or (bool(self._unsent) and len(self._in_flight) < IN_FLIGHT)
                )
                if self._worker is not worker:
                    return
                texts = [self._unsent.popleft() for _ in range(min(TEXTS_PER_CALL, len(self._unsent)))]
                self._in_flight.append(texts)
            try:
                stream.write(frame(texts))
                stream.flush()
            except (OSError, ValueError):  # the worker is gone: the reader sees it and hands the texts back
                return

    def _read(self, worker: subprocess.Popen[bytes]) -> None:
        """Reader thread: the worker's answers, in the order of the requests."""
        stream: IO[bytes] = worker.stdout  # type: ignore[assignment]
        try:
            precision = pickle.load(stream)
            with self._cond:
                self._worker_precision = precision
                self._cond.notify_all()
            while True:
                vectors: np.ndarray = pickle.load(stream)
                with self._cond:
                    if self._worker is not worker or not self._in_flight:
                        return
                    self._keep(self._in_flight.popleft(), vectors, self._worker_precision)
        except (EOFError, OSError, pickle.UnpicklingError, ValueError) as exc:
            if worker.poll() not in (0, None) or not isinstance(exc, EOFError):
                log.warning("embedding ahead worker stopped (%s); this process embeds the rest", exc)
        with self._cond:
            if self._worker is worker:
                self._stop_worker()

    def _stop_worker(self) -> None:
        # Called with the lock held: what the worker had not answered goes back to be embedded here.
        while self._in_flight:
            self._unsent.extendleft(reversed(self._in_flight.pop()))
        worker, self._worker = self._worker, None
        if worker is not None:
            _close(worker)
            _WORKERS.discard(worker)
        self._cond.notify_all()

    def close(self) -> None:
        """Stop the worker (what it had not answered stays submitted, for `drain`)."""
        with self._cond:
            self._stop_worker()


def _close(worker: subprocess.Popen[bytes]) -> None:
    """End a worker: closing its input is its signal to exit; kill it if it does not."""
    try:
        if worker.stdin is not None:
            worker.stdin.close()
        worker.wait(timeout=CLOSE_WAIT_S)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        worker.kill()


_WORKERS: set[subprocess.Popen[bytes]] = set()
atexit.register(lambda: [_close(worker) for worker in list(_WORKERS)])

_AHEAD: weakref.WeakKeyDictionary[Embedder, EmbeddingAhead] = weakref.WeakKeyDictionary()
_AHEAD_LOCK = threading.Lock()


def ahead_for(embedder: Embedder) -> EmbeddingAhead:
    """The process's EmbeddingAhead of this embedder (one per loaded model)."""
    with _AHEAD_LOCK:
        if embedder not in _AHEAD:
            _AHEAD[embedder] = EmbeddingAhead(embedder)
        return _AHEAD[embedder]
