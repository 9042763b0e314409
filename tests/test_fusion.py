"""RRF and MMR with hand-computed numbers, and the FTS5 query builder."""

from __future__ import annotations

import numpy as np
import pytest

from nexus_memory.core.stores import Stores
from nexus_memory.recall import keyword
from nexus_memory.recall.fusion import mmr, mmr_scored, rrf_fuse

# --- RRF ---------------------------------------------------------------------------------------


def test_rrf_exact_scores_and_order() -> None:
    fused = rrf_fuse([["a", "b", "c"], ["b", "c", "d"]], k=60)
    assert [item for item, _ in fused] == ["b", "c", "a", "d"]
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)  # 0.0325224749
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 62)  # 0.0320020481
    assert scores["d"] == pytest.approx(1 / 63)


def test_rrf_custom_k_ties_duplicates_and_empty() -> None:
    assert rrf_fuse([["a", "b"], ["b"]], k=1) == [("b", pytest.approx(1 / 3 + 1 / 2)), ("a", 0.5)]
    assert [i for i, _ in rrf_fuse([["x"], ["y"]])] == ["x", "y"]  # tie: first seen first
    assert rrf_fuse([["a", "a", "b"]], k=60) == [("a", pytest.approx(1 / 61)), ("b", pytest.approx(1 / 63))]
    assert rrf_fuse([]) == [] and rrf_fuse([[], []]) == []


def test_rrf_weights_per_list() -> None:
    # a: 2/(20+1) = 0.0952; b: 2/(20+2) + 1/(20+1) = 0.1385 (second in the weighted list, first in the other).
    fused = rrf_fuse([["a", "b"], ["b", "c"]], weights=[2.0, 1.0])
    assert fused == [("b", pytest.approx(2 / 22 + 1 / 21)), ("a", pytest.approx(2 / 21)), ("c", pytest.approx(1 / 22))]
    # Weighted 2, a list's first item beats one ranked second and third by two plain lists.
    assert rrf_fuse([["a"], ["x", "b"], ["y", "z", "b"]], weights=[2, 1, 1])[0][0] == "a"


# --- MMR ---------------------------------------------------------------------------------------

A, B_DUP, B_NEAR, C = (np.array(v, dtype=np.float32) for v in ([1, 0], [1, 0], [0.6, 0.8], [0, 1]))


def test_mmr_demotes_a_duplicate() -> None:
    # relevance a 1.0, b 0.9, c 0.5. Step 1: 0.7*rel -> a 0.70, b 0.63, c 0.35: a.
    # Step 2: b 0.63 - 0.3*1 = 0.33, c 0.35 - 0 = 0.35: c. Then b.
    scored = [("a", 1.0), ("b", 0.9), ("c", 0.5)]
    assert mmr(scored, {"a": A, "b": B_DUP, "c": C}, 3) == ["a", "c", "b"]


def test_mmr_keeps_a_partly_similar_item() -> None:
    # b has cosine 0.6 with a: 0.63 - 0.3*0.6 = 0.45 > c 0.35.
    assert mmr([("a", 1.0), ("b", 0.9), ("c", 0.5)], {"a": A, "b": B_NEAR, "c": C}, 3) == ["a", "b", "c"]


def test_mmr_normalises_relevance_by_the_max() -> None:
    # Same as the duplicate case with every score halved: normalisation makes it identical.
    scored = [("a", 0.5), ("b", 0.45), ("c", 0.25)]
    assert mmr(scored, {"a": A, "b": B_DUP, "c": C}, 3) == ["a", "c", "b"]


def test_mmr_missing_vectors_have_zero_similarity() -> None:
    # b has no vector: no redundancy penalty, so relevance order holds.
    assert mmr([("a", 1.0), ("b", 0.9), ("c", 0.5)], {"a": A, "c": C}, 3) == ["a", "b", "c"]
    assert mmr([("a", 1.0), ("b", 0.9)], {}, 5) == ["a", "b"]


def test_mmr_preselected_lambda_and_limits() -> None:
    # p (already shown) equals a: a 0.7 - 0.3 = 0.4 loses to c 0.7*0.9 = 0.63.
    assert mmr([("a", 1.0), ("c", 0.9)], {"a": A, "c": C, "p": A}, 2, preselected=["p"]) == ["c", "a"]
    assert mmr([("a", 1.0), ("b", 0.9), ("c", 0.5)], {"a": A, "b": B_DUP, "c": C}, 3, lambda_param=1.0) == [
        "a",
        "b",
        "c",
    ]
    assert mmr([("a", 1.0), ("b", 0.9)], {"a": A, "b": C}, 1) == ["a"]
    assert mmr([], {}, 3) == [] and mmr([("a", 1.0)], {}, 0) == []


def _mmr_one_by_one(
    scored: list[tuple[str, float]],
    vectors: dict[str, np.ndarray],
    limit: int,
    lambda_param: float,
    preselected: list[str],
) -> list[tuple[str, float]]:
    """MMR as its definition reads, one vector and one candidate at a time: what mmr_scored must equal."""
    top = max(score for _, score in scored)
    dimension = len(next(iter(vectors.values())))
    wide = {k: np.asarray(v, np.float64) for k, v in vectors.items() if len(v) == dimension}
    unit = {k: v / np.linalg.norm(v) for k, v in wide.items()}
    shown = [unit[k] for k in preselected if k in unit]

    def value(item: tuple[str, float]) -> float:
        sims = [float(unit[item[0]] @ s) for s in shown] if item[0] in unit else []
        return lambda_param * item[1] / top - (1 - lambda_param) * max([0.0, *sims])

    chosen: list[tuple[str, float]] = []
    left = list(scored)
    while left and len(chosen) < limit:
        best = max(left, key=value)  # max keeps the first of equal values, as argmax does
        chosen.append((best[0], value(best)))
        left.remove(best)
        if best[0] in unit:
            shown.append(unit[best[0]])
    return chosen


def test_mmr_scored_equals_the_definition_on_random_candidates() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        keys = [f"k{i}" for i in range(int(rng.integers(5, 60)))]
        vectors = {k: rng.standard_normal(16).astype(np.float32) for k in keys if rng.random() > 0.2}
        vectors["odd"] = rng.standard_normal(8).astype(np.float32)  # another dimension: no vector at all
        scored = [(k, float(rng.random())) for k in keys[3:]] + [("odd", 0.5)]
        got = mmr_scored(scored, vectors, 25, lambda_param=0.7, preselected=[*keys[:3], "odd"])
        want = _mmr_one_by_one(scored, vectors, 25, 0.7, [*keys[:3], "odd"])
        assert [k for k, _ in got] == [k for k, _ in want]
        assert [v for _, v in got] == pytest.approx([v for _, v in want], abs=1e-12)


# --- FTS5 query building -----------------------------------------------------------------------


def test_terms_drop_stopwords_syntax_and_duplicates() -> None:
    assert keyword.extract_terms('What did "Sarah" say about NEAR(the) trip* AND trip OR x?') == [
        "sarah",
        "near",
        "trip",
    ]
    assert keyword.extract_terms("the of and to a in") == []
    assert keyword.extract_terms("莎拉 去 爬山 🙂") == ["莎拉", "去", "爬山"]
    assert keyword.match_expression(["sarah", "and"]) == '"sarah" OR "and"'
    assert keyword.match_expression([]) is None
    assert keyword.quote('a"b') == '"a""b"'
    # Tokens are found first and lower-cased after: "İ" lower-cases to "i" and a combining dot, which would
    # split the word if the text were lower-cased before it was split.
    assert keyword.tokenize("Hello WORLD_x 42, İstanbul") == ["hello", "world", "x", "42", "İstanbul".lower()]
    assert keyword.like_pattern("100%_x\\") == "%100\\%\\_x\\\\%"


def test_choose_terms_prefers_rare_and_present_terms(stores: Stores) -> None:
    for i in range(30):
        stores.conn.execute(
            "INSERT INTO facts (id, text, as_of, ingested_at, created_at) VALUES (?, ?, 0, 0, 0)",
            (f"f{i}", f"common words number {i}" + (" zebra" if i == 3 else "")),
        )
    chosen = keyword.choose_terms(stores.conn, "facts_fts", ["common", "zebra", "absent", "words"], max_terms=2)
    # df: common 30, zebra 1, absent 0 (dropped), words 30; the rarest two, tie to the earlier term.
    assert chosen == ["common", "zebra"]
    assert keyword.fts_query(stores.conn, "facts_fts", keyword.extract_terms("the of and")) is None
    assert keyword.fts_query(stores.conn, "facts_fts", keyword.extract_terms("zebra?")) == '"zebra"'
    # Porter stemming is the table's own: "numbers" probes as "number".
    assert keyword.document_frequency(stores.conn, "facts_fts", "numbers") == 30
    # All probes in one statement count as one probe each, capped alike; a repeated term counts once.
    terms = ["common", "zebra", "absent", "numbers", "zebra"]
    assert keyword.document_frequencies(stores.conn, "facts_fts", terms) == {
        "common": 30,
        "zebra": 1,
        "absent": 0,
        "numbers": 30,
    }
    assert keyword.document_frequencies(stores.conn, "facts_fts", ["common", "words"], cap=5) == {
        "common": 5,
        "words": 5,
    }
    assert keyword.document_frequencies(stores.conn, "facts_fts", []) == {}


def test_long_input_is_capped(stores: Stores) -> None:
    text = " ".join(f"term{i}" for i in range(5_000))
    assert len(keyword.extract_terms(text)) < 1_000
    terms = keyword.extract_terms(text)
    assert keyword.fts_query(stores.conn, "facts_fts", terms) is None  # nothing occurs: no query at all
