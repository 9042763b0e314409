"""The worker process of embedding ahead: `python -m nexus_memory.embeddings.worker MODEL PRECISION THREADS`
(the parent's base model and recipe, so both embed under one vector identity).

It reads lists of texts on stdin (each a pickle behind its 8-byte length) and writes, for each, a
pickled float32 array of their vectors on stdout, after first writing the precision it embeds in.
It exits when stdin closes (the parent finished or died), so it never outlives the process that
started it, and after IDLE_EXIT_S with nothing asked, so an idle one does not hold a model's memory
(the parent starts another when it needs one).
"""

from __future__ import annotations

import os
import pickle
import select
import sys

import numpy as np

from nexus_memory.core.config import load_settings
from nexus_memory.embeddings.model import ENCODE_BATCH, get_embedder

IDLE_EXIT_S = 60.0


def main(argv: list[str]) -> int:
    model_name, precision, threads = argv[0], argv[1], int(argv[2])
    requests, answers = sys.stdin.fileno(), os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr  # stdout carries answers only: any print goes to stderr
    settings = load_settings(embedding_model=model_name, embed_precision=precision, query_backend="torch")
    embedder = get_embedder(threads=threads, settings=settings)  # the model and recipe of the settings
    pickle.dump(embedder.precision, answers)
    answers.flush()
    while True:
        if not select.select([requests], [], [], IDLE_EXIT_S)[0]:
            return 0
        header = _read_exactly(requests, 8)
        if header is None:
            return 0
        body = _read_exactly(requests, int.from_bytes(header, "big"))
        if body is None:
            return 0
        texts: list[str] = pickle.loads(body)
        order = np.argsort([len(text) for text in texts], kind="stable")  # similar lengths batch faster
        answer = np.empty((len(texts), embedder.dimension), np.float32)
        answer[order] = embedder.encode([texts[i] for i in order], batch_size=ENCODE_BATCH)  # in the order asked
        pickle.dump(answer, answers, protocol=pickle.HIGHEST_PROTOCOL)
        answers.flush()


def _read_exactly(fd: int, size: int) -> bytes | None:
    """`size` bytes from a pipe (reads come in pieces), or None at its end. Unbuffered, so `select` sees
    every request not yet read."""
    parts, left = [], size
    while left:
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            return None
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def frame(texts: list[str]) -> bytes:
    """A request as the worker reads it: its pickle's length in 8 bytes, then the pickle."""
    body = pickle.dumps(texts, protocol=pickle.HIGHEST_PROTOCOL)
    return len(body).to_bytes(8, "big") + body


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
