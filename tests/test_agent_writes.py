"""Side effects of fact writes through the agent tools: co-occurrences, merge candidates, the vector."""

from __future__ import annotations

import pytest

from nexus_memory import identity
from nexus_memory.agent_writes import run_tool
from nexus_memory.embeddings import IndexModelMismatch, rebuild_index
from nexus_memory.stores import Stores
from tests.test_recall import FakeEmbedder


@pytest.fixture
def people(stores: Stores) -> dict[str, str]:
    with stores.transaction():
        ids = {name: identity.create_entity(stores.conn, name, "person") for name in ("Sarah Chen", "Tom Baker")}
        identity.add_alias(stores.conn, ids["Tom Baker"], "Tommy B", "nickname")
    return ids


def _pairs(stores: Stores) -> dict[tuple[str, str], int]:
    return {
        (r[0], r[1]): r[2] for r in stores.conn.execute("SELECT entity_a, entity_b, count FROM entity_cooccurrences")
    }


def test_remember_counts_cooccurrences_and_embeds(stores: Stores, people: dict[str, str]) -> None:
    fake = FakeEmbedder()
    result = run_tool(
        stores, "remember_fact", {"text": "Sarah Chen and Tom Baker run the Berlin office"}, embedder=fake
    )
    assert result["side_effects"] == {"cooccurrences": 1, "merge_candidates": [], "embedded": 1}
    pair = tuple(sorted(people.values()))
    assert _pairs(stores) == {pair: 1}
    run_tool(stores, "remember_fact", {"text": "Sarah Chen thanked Tom Baker"}, embedder=fake)
    assert _pairs(stores) == {pair: 2}
    found = run_tool(stores, "search_memory", {"query": "Berlin office"}, embedder=fake)
    assert found["results"][0]["id"] == result["fact_id"]
    assert "side_effects" not in found  # reads set nothing off


def test_a_new_name_inside_a_known_one_is_a_candidate_never_a_merge(stores: Stores, people: dict[str, str]) -> None:
    fake = FakeEmbedder()
    result = run_tool(stores, "remember_fact", {"text": "Sarah likes tea", "entities": ["Sarah"]}, embedder=fake)
    [candidate] = result["side_effects"]["merge_candidates"]
    assert candidate["entity"] == "Sarah" and candidate["similar_to"] == "Sarah Chen"
    [row] = identity.list_candidates(stores.conn)
    assert row["a_name"] == "Sarah Chen" and row["b_name"] == "Sarah" and row["confidence"] < 0.99
    assert stores.conn.execute("SELECT count(*) FROM entities WHERE merged_into IS NOT NULL").fetchone()[0] == 0
    # Through an alias too, and the other way round: a longer new name containing a known one.
    alias = run_tool(stores, "remember_fact", {"text": "x", "entities": ["Tommy"]}, embedder=fake)
    assert [c["similar_to"] for c in alias["side_effects"]["merge_candidates"]] == ["Tommy B"]
    longer = run_tool(stores, "remember_fact", {"text": "y", "entities": ["Sarah Chen Li"]}, embedder=fake)
    assert {c["similar_to"] for c in longer["side_effects"]["merge_candidates"]} == {"Sarah Chen", "Sarah"}
    # A known name creates nothing, so it proposes nothing.
    known = run_tool(stores, "remember_fact", {"text": "z", "entities": ["Tom Baker"]}, embedder=fake)
    assert known["side_effects"]["merge_candidates"] == []


def test_failed_side_effect_keeps_the_write(stores: Stores, monkeypatch: pytest.MonkeyPatch) -> None:
    rebuild_index(stores, "some-other-model", 8)  # the index serves another model than the embedder
    result = run_tool(stores, "remember_fact", {"text": "The car is blue"}, embedder=FakeEmbedder())
    assert result["side_effects"]["embedded"] == 0
    assert IndexModelMismatch.__name__ in result["side_effects"]["embedding_error"]
    assert stores.conn.execute("SELECT text FROM facts WHERE id = ?", (result["fact_id"],)).fetchone()[0]


def test_errors_set_nothing_off(stores: Stores) -> None:
    assert "text" in run_tool(stores, "remember_fact", {"text": ""})["error"]
    assert "error" in run_tool(stores, "correct_fact", {"fact_id": "missing", "new_text": "x"})
    assert stores.conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 0
