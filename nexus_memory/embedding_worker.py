"""The worker process of embedding ahead: `python -m nexus_memory.embedding_worker MODEL PRECISION THREADS`.

It reads pickled lists of texts on stdin and writes, for each, a pickled float32 array of their
vectors on stdout, after first writing the precision it embeds in. It exits when stdin closes (the
parent finished or died), so it never outlives the process that started it.
"""

from __future__ import annotations

import os
import pickle
import sys

import numpy as np

from nexus_memory.config import load_settings
from nexus_memory.embeddings import ENCODE_BATCH, get_embedder


def main(argv: list[str]) -> int:
    model_name, precision, threads = argv[0], argv[1], int(argv[2])
    requests, answers = sys.stdin.buffer, os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr  # stdout carries answers only: any print goes to stderr
    settings = load_settings(embedding_model=model_name, embed_precision=precision, query_backend="torch")
    embedder = get_embedder(model_name, threads=threads, settings=settings)
    pickle.dump(embedder.precision, answers)
    answers.flush()
    while True:
        try:
            texts: list[str] = pickle.load(requests)
        except EOFError:
            return 0
        order = np.argsort([len(text) for text in texts], kind="stable")  # similar lengths batch faster
        answer = np.empty((len(texts), embedder.dimension), np.float32)
        answer[order] = embedder.encode([texts[i] for i in order], batch_size=ENCODE_BATCH)  # in the order asked
        pickle.dump(answer, answers, protocol=pickle.HIGHEST_PROTOCOL)
        answers.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
