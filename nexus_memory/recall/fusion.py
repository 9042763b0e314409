"""From the strategies' ranked lists to one order: weighted RRF, clear higher-layer matches first, MMR.

`rrf_fuse` and `mmr` are pure functions over ids, scores and vectors, tested with hand-computed
numbers; the functions after them apply them to the strategies' lists the way recall does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from nexus_memory.embeddings.vectors.index import VectorIndex

# Deviation from the design's k = 60 (see docs/recall.md): on the LoCoMo dev split, k = 20 with the
# semantic list weighted 2 (STRATEGY_WEIGHTS) gave recall@10 0.746 against 0.719 for plain k = 60,
# better on 4 of its 5 conversations. 60 comes from fusing long TREC runs; recall fuses 2-4 lists of
# at most ~50 and uses the top 10, where the head of each list is what counts.
RRF_K = 20
MMR_LAMBDA = 0.7
# The semantic list counts double in RRF: a mid recall fuses one semantic list against keyword and
# entity lists, and without this the lexical side outvotes the model 2:1 (LoCoMo dev: see RRF_K).
# The answer-type list (recall/answer_type.py) counts 0.75: four of five leave-one-conversation-out fits chose it.
STRATEGY_WEIGHTS = {"semantic": 2.0, "answer_type": 0.75}
HIGHER_LAYER_MIN_SIM = 0.35  # MiniLM: unrelated sentences sit around 0.0-0.2, paraphrases above 0.5

# A ranked list: (key, raw strategy score), best first. Keys are "<type>:<id>".
Ranked = list[tuple[str, float]]


def result_key(target_type: str, target_id: str) -> str:
    return f"{target_type}:{target_id}"


def split_key(key: str) -> tuple[str, str]:
    target_type, _, target_id = key.partition(":")
    return target_type, target_id


def rrf_fuse(
    ranked_lists: Sequence[Sequence[str]], k: int = RRF_K, *, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Fuse ranked id lists: score(id) = sum over lists of weight / (k + rank), rank 1-based.

    `weights` gives one weight per list (default 1 each). Ties keep the order in which ids were first
    seen (lists in order, then rank), so the output is deterministic. An id repeated inside one list
    counts only at its best rank there.
    """
    scores: dict[str, float] = {}
    for index, ranked in enumerate(ranked_lists):
        weight = 1.0 if weights is None else weights[index]
        seen: set[str] = set()
        for rank, item_id in enumerate(ranked, start=1):
            if item_id in seen:
                continue
            seen.add(item_id)
            scores[item_id] = scores.get(item_id, 0.0) + weight / (k + rank)
    # sorted() is stable, and dicts keep first-insertion order: equal scores stay first-seen first.
    return sorted(scores.items(), key=lambda item: -item[1])


def mmr(
    scored: Sequence[tuple[str, float]],
    vectors: Mapping[str, np.ndarray],
    limit: int,
    *,
    lambda_param: float = MMR_LAMBDA,
    preselected: Sequence[str] = (),
) -> list[str]:
    """Maximal Marginal Relevance: pick `limit` ids balancing relevance against redundancy.

    relevance = score / max(score) over `scored` (so the best candidate has relevance 1);
    pick argmax of lambda * relevance - (1 - lambda) * max cosine similarity to anything already
    picked. Candidates without a vector have similarity 0 to everything. `preselected` ids count as
    already picked (for diversity) but are not returned. Ties go to the earlier candidate.
    """
    picked = mmr_scored(scored, vectors, limit, lambda_param=lambda_param, preselected=preselected)
    return [item_id for item_id, _ in picked]


def mmr_scored(
    scored: Sequence[tuple[str, float]],
    vectors: Mapping[str, np.ndarray],
    limit: int,
    *,
    lambda_param: float = MMR_LAMBDA,
    preselected: Sequence[str] = (),
) -> list[tuple[str, float]]:
    """`mmr`'s picks with the value each was picked at: non-increasing (a candidate's value only falls as
    more is picked, and each pick is the best left), so it is the score that decides their order."""
    if limit <= 0 or not scored:
        return []
    ids = [item_id for item_id, _ in scored]
    raw = np.array([score for _, score in scored], dtype=np.float64)
    top = float(raw.max())
    relevance = raw / top if top > 0 else np.zeros_like(raw)
    matrix, has_vector = _unit_matrix(ids, vectors)
    # max_sim[i] = highest similarity of candidate i to any selected item so far (never below 0). A row
    # without a vector is zeros, so its similarity to anything is 0.
    max_sim = np.zeros(len(ids), dtype=np.float64)
    before, before_has = _unit_matrix(preselected, vectors, matrix.shape[1])
    if before_has.any():
        max_sim = np.maximum(max_sim, (matrix @ before[before_has].T).max(axis=1))
    # A picked candidate's relevance becomes -inf: its value stays -inf whatever its similarity.
    weighted = lambda_param * relevance
    chosen: list[tuple[str, float]] = []
    for _ in range(min(limit, len(ids))):
        value = weighted - (1.0 - lambda_param) * max_sim
        best = int(np.argmax(value))  # argmax returns the first maximum: ties go to the earlier id
        chosen.append((ids[best], float(value[best])))
        weighted[best] = -np.inf
        if has_vector[best]:
            max_sim = np.maximum(max_sim, matrix @ matrix[best])
    return chosen


def _unit_matrix(
    ids: Sequence[str], vectors: Mapping[str, np.ndarray], dimension: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of L2-normalised vectors (zeros where an id has none, or one of another `dimension` than the
    first vector's) and a mask of which rows are real: one stack and one division for all rows."""
    if dimension is None:
        dimension = next((np.asarray(v).size for v in vectors.values()), 0)
    found = [vectors.get(item_id) for item_id in ids]
    real = [i for i, v in enumerate(found) if v is not None and np.asarray(v).size == dimension]
    matrix = np.zeros((len(ids), dimension), dtype=np.float64)
    has_vector = np.zeros(len(ids), dtype=bool)
    if real:
        rows = np.array([np.asarray(found[i]).ravel() for i in real], dtype=np.float64)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        matrix[real] = rows / np.where(norms > 0, norms, 1.0)
        has_vector[real] = True
    return matrix, has_vector


# --- applied to the strategies' lists -----------------------------------------------------------


def fuse_strategies(lists: Mapping[str, Sequence[Ranked]]) -> list[tuple[str, float]]:
    """Weighted RRF over every non-empty list, each weighted by its strategy."""
    named = [(name, ranked) for name, group in lists.items() for ranked in group if ranked]
    return rrf_fuse(
        [[key for key, _ in ranked] for _, ranked in named],
        weights=[STRATEGY_WEIGHTS.get(name, 1.0) for name, _ in named],
    )


def clear_higher_layer_matches(
    lists: Mapping[str, Sequence[Ranked]], ordered: Sequence[str], *, have_query_vector: bool
) -> list[str]:
    """Mental models, then observations, that clearly match: they answer before raw facts."""
    similarity = {k: s for ranked in lists["semantic"] for k, s in ranked}
    term_share = {k: s for ranked in lists["keyword"] for k, s in ranked if not k.startswith("fact:")}
    good: list[str] = []
    for target_type in ("mental_model", "observation"):
        for key in ordered:
            if not key.startswith(target_type + ":"):
                continue
            sim = similarity.get(key)
            if (sim is not None and sim >= HIGHER_LAYER_MIN_SIM) or (
                not have_query_vector and term_share.get(key, 0.0) >= 0.5
            ):
                good.append(key)
    return good


def vectors_for(index: VectorIndex | None, keys: Iterable[str]) -> dict[str, np.ndarray]:
    """Stored vectors of these keys (for MMR); none without a vector index."""
    if index is None:
        return {}
    by_type: dict[str, list[str]] = {}
    for key in keys:
        target_type, target_id = split_key(key)
        by_type.setdefault(target_type, []).append(target_id)
    vectors: dict[str, np.ndarray] = {}
    for target_type, ids in by_type.items():
        for target_id, vector in index.vectors(target_type, ids).items():
            vectors[result_key(target_type, target_id)] = vector
    return vectors
