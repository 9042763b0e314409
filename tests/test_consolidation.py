"""Offline consolidation on hand-made fact sequences: isolated facts, clusters, contradictions with dates,
two people with one first name, re-consolidation, version chains and staleness."""

from __future__ import annotations

import pytest

from nexus_memory.core.stores import Stores
from nexus_memory.identity import store as identity
from nexus_memory.observations import consolidate
from nexus_memory.observations.duplicates import near_duplicate_pairs
from nexus_memory.recall import recall
from tests.memory_builders import count, current_observations, embed, fact, person


@pytest.fixture
def alice(stores: Stores) -> str:
    return person(stores, "Alice Chen")


def test_an_isolated_fact_is_consolidated_without_an_observation(stores: Stores, alice: str) -> None:
    fact(stores, "Alice Chen adopted a cat named Luna.", "2023-05-02", alice)
    embed(stores)
    report = consolidate(stores)
    assert (report.consolidated, report.isolated, report.observations_created) == (1, 1, 0)
    assert count(stores, "facts", "is_consolidated = 0") == 0
    assert count(stores, "analysis_runs") == 0


def test_small_talk_is_isolated(stores: Stores, alice: str) -> None:
    fact(stores, "Alice Chen said totally.", "2023-05-02", alice)
    fact(stores, "Alice Chen said totally.", "2023-05-03", alice)
    embed(stores)
    assert consolidate(stores).isolated == 2
    assert count(stores, "analysis_runs") == 0


def test_a_cluster_becomes_one_observation_in_time_order_with_dates(stores: Stores, alice: str) -> None:
    later = fact(stores, "Alice Chen ran 30 km on Sunday for her Berlin marathon training.", "2023-06-04", alice)
    first = fact(stores, "Alice Chen is training for the Berlin marathon in September.", "2023-05-02", alice)
    other = fact(stores, "Alice Chen works at Google as a data engineer.", "2023-05-10", alice)
    embed(stores)
    report = consolidate(stores)
    assert report.observations_created == 1
    [obs] = current_observations(stores)
    assert obs["fact_ids"] == {first, later} and other not in obs["fact_ids"]
    text = obs["output_text"]
    assert text.startswith("Alice Chen — ")
    assert text.index("2 May 2023: Alice Chen is training") < text.index("4 June 2023: Alice Chen ran 30 km")
    assert "Berlin" in text and "30 km" in text  # names, places and numbers survive
    # The knowledge episode groups the facts' source events, under the consolidation definition.
    episode = stores.conn.execute(
        """SELECT ep.event_count, d.strategy FROM analysis_runs r JOIN episodes ep ON ep.id = r.episode_id
           JOIN episode_definitions d ON d.id = ep.definition_id WHERE r.id = ?""",
        (obs["id"],),
    ).fetchone()
    assert tuple(episode) == (2, "consolidation")
    assert (
        count(stores, "episode_events", f"episode_id = (SELECT episode_id FROM analysis_runs WHERE id = '{obs['id']}')")
        == 2
    )


def test_a_contradiction_reads_as_a_change_worked_out_from_the_dates(stores: Stores, alice: str) -> None:
    fact(stores, "Alice Chen moved to Denver for a new job at Acme.", "2023-06-14", alice)
    fact(stores, "Alice Chen lives in Boston with her sister.", "2023-05-02", alice)
    fact(stores, "Alice Chen lives in Boston near the river.", "2023-05-20", alice)
    embed(stores)
    consolidate(stores)
    [obs] = current_observations(stores)
    assert len(obs["fact_ids"]) == 3
    assert (
        "Alice Chen used to live in Boston until May 2023; since June 2023 Alice Chen lives in Denver."
        in (obs["output_text"])
    )


def test_two_people_with_the_same_first_name_are_never_merged(stores: Stores) -> None:
    sam_lee = person(stores, "Sam", handle="sam.lee@example.com")
    sam_rivera = person(stores, "Sam", handle="sam.rivera@example.com")
    lee = [
        fact(stores, "Sam loves sailing on the bay every weekend.", "2023-05-02", sam_lee),
        fact(stores, "Sam bought a small sailboat for sailing on the bay.", "2023-05-09", sam_lee),
    ]
    rivera = [
        fact(stores, "Sam loves sailing on the bay on weekends.", "2023-05-03", sam_rivera),
        fact(stores, "Sam rented a sailboat for sailing on the bay.", "2023-05-10", sam_rivera),
    ]
    embed(stores)
    consolidate(stores)
    observations = current_observations(stores)
    assert sorted(o["fact_ids"] for o in observations) == sorted([set(lee), set(rivera)])
    assert {o["entity_id"] for o in observations} == {sam_lee, sam_rivera}
    assert near_duplicate_pairs(stores.conn) == []  # alike, but of two different entities


def test_unrelated_topics_stay_apart(stores: Stores, alice: str) -> None:
    fact(stores, "Alice Chen is training for the Berlin marathon in September.", "2023-05-02", alice)
    fact(stores, "Alice Chen ran 30 km on Sunday for her Berlin marathon training.", "2023-05-04", alice)
    fact(stores, "Alice Chen works at Google as a data engineer.", "2023-05-05", alice)
    fact(stores, "Alice Chen's manager at Google promoted her to senior data engineer.", "2023-05-06", alice)
    embed(stores)
    consolidate(stores)
    texts = sorted(o["output_text"] for o in current_observations(stores))
    assert len(texts) == 2
    assert all(("marathon" in t) != ("Google" in t) for t in texts)


def test_reconsolidation_adds_nothing(stores: Stores, alice: str) -> None:
    fact(stores, "Alice Chen is training for the Berlin marathon in September.", "2023-05-02", alice)
    fact(stores, "Alice Chen ran 30 km on Sunday for her Berlin marathon training.", "2023-06-04", alice)
    fact(stores, "Alice Chen adopted a cat named Luna.", "2023-05-03", alice)
    embed(stores)
    consolidate(stores)
    tables = ("analysis_runs", "episodes", "episode_events", "observation_facts", "embeddings")
    before = {t: count(stores, t) for t in tables}
    again = consolidate(stores)
    assert again.facts_seen == 0
    with stores.transaction():  # the same facts handed to consolidation once more
        stores.conn.execute("UPDATE facts SET is_consolidated = 0")
    report = consolidate(stores)
    assert report.facts_seen == 3 and report.observations_created == report.observations_versioned == 0
    assert {t: count(stores, t) for t in tables} == before


def test_version_chain_and_staleness(stores: Stores, alice: str) -> None:
    fact(stores, "Alice Chen is training for the Berlin marathon in September.", "2023-05-02", alice)
    fact(stores, "Alice Chen ran 30 km on Sunday for her Berlin marathon training.", "2023-06-04", alice)
    embed(stores)
    consolidate(stores)
    [v1] = current_observations(stores)
    assert v1["is_stale"] == 0 and v1["parent_id"] is None
    # A new fact about Alice makes her observations stale until consolidation has seen it.
    new = fact(stores, "Alice Chen finished the Berlin marathon in 3 hours 50 minutes.", "2023-09-24", alice)
    assert current_observations(stores)[0]["is_stale"] == 1
    embed(stores)
    report = consolidate(stores)
    assert report.observations_versioned == 1 and report.observations_created == 0
    [v2] = current_observations(stores)
    assert v2["parent_id"] == v1["id"] and v2["root_id"] == v1["root_id"] == v1["id"]
    assert v2["id"] == f"{v1['id']}-v2" and v2["is_stale"] == 0
    assert v2["fact_ids"] == v1["fact_ids"] | {new}
    parent_episode = stores.conn.execute(
        "SELECT ep.parent_id FROM analysis_runs r JOIN episodes ep ON ep.id = r.episode_id WHERE r.id = ?", (v2["id"],)
    ).fetchone()[0]
    assert (
        parent_episode
        == stores.conn.execute("SELECT episode_id FROM analysis_runs WHERE id = ?", (v1["id"],)).fetchone()[0]
    )
    # The old version stays for history; recall answers with the new one only, and says it is current.
    assert count(stores, "analysis_runs") == 2
    results = recall(stores, "Alice marathon time", scope=("observations",), touch=False).results
    assert [r.id for r in results] == [v2["id"]] and results[0].is_stale is False


def test_a_fact_on_another_topic_leaves_the_observation_unstale_after_consolidation(stores: Stores, alice: str) -> None:
    fact(stores, "Alice Chen is training for the Berlin marathon in September.", "2023-05-02", alice)
    fact(stores, "Alice Chen ran 30 km on Sunday for her Berlin marathon training.", "2023-06-04", alice)
    embed(stores)
    consolidate(stores)
    fact(stores, "Alice Chen adopted a cat named Luna.", "2023-07-01", alice)
    assert current_observations(stores)[0]["is_stale"] == 1
    embed(stores)
    consolidate(stores)
    [obs] = current_observations(stores)
    assert obs["is_stale"] == 0 and obs["parent_id"] is None  # looked at, not changed


def test_facts_wait_for_their_vectors(stores: Stores, alice: str) -> None:
    fact(stores, "Alice Chen is training for the Berlin marathon in September.", "2023-05-02", alice)
    report = consolidate(stores)
    assert report.waiting_for_vectors == 1 and count(stores, "facts", "is_consolidated = 1") == 0


def test_observations_of_a_merged_entity_move_to_the_survivor(stores: Stores, alice: str) -> None:
    handle = person(stores, "achen", handle="alice@example.com")
    moved = {
        fact(stores, "achen is training for the Berlin marathon in September.", "2023-05-02", handle),
        fact(stores, "achen ran 30 km on Sunday for the Berlin marathon training.", "2023-06-04", handle),
    }
    fact(stores, "Alice Chen adopted a cat named Luna.", "2023-06-20", alice)
    embed(stores)
    consolidate(stores)
    assert {o["entity_id"] for o in current_observations(stores)} == {handle}
    with stores.transaction():
        identity.merge_entities(stores.conn, alice, handle)
    report = consolidate(stores)
    assert report.observations_retired == 1
    [obs] = current_observations(stores)
    assert obs["entity_id"] == alice and obs["fact_ids"] == moved
    assert count(stores, "analysis_runs", "status = 'deleted'") == 1


def test_a_corrected_fact_leaves_its_observation_at_the_next_consolidation(stores: Stores, alice: str) -> None:
    from nexus_memory.agents.tools import call_tool
    from nexus_memory.lifecycle.reconsolidate import run_consolidation
    from nexus_memory.mental_models import create_model, get_model, refresh_model

    first = fact(stores, "Alice Chen is training for the Berlin marathon in September.", "2023-05-02", alice)
    later = fact(stores, "Alice Chen ran 30 km on Sunday for her Berlin marathon training.", "2023-06-04", alice)
    third = fact(stores, "Alice Chen ran 25 km on Saturday for her Berlin marathon training.", "2023-06-10", alice)
    embed(stores)
    consolidate(stores)
    [obs] = current_observations(stores)
    assert obs["fact_ids"] == {first, later, third}
    model = create_model(stores, "Alice's running", "How is Alice's marathon training going?")
    assert "30 km" in model.description
    corrected = call_tool(stores, "correct_fact", {"fact_id": later, "new_text": "Alice Chen swam 3 km on Sunday."})
    assert "error" not in corrected
    # Until it is consolidated again, recall does not hand out the text that quotes the hidden fact.
    assert recall(stores, "Berlin marathon 30 km", scope=("observations",), touch=False).results == []
    embed(stores)
    outcome = run_consolidation(stores, offline=True)
    assert outcome["failed"] == 0
    again = [o for o in current_observations(stores) if first in o["fact_ids"]]
    assert len(again) == 1 and again[0]["id"] != obs["id"]
    assert later not in again[0]["fact_ids"] and "30 km" not in again[0]["output_text"]
    assert get_model(stores, model.root_id).is_stale  # its dossier says so until it is refreshed
    assert "> **Stale**" in (stores.settings.dossiers / f"{model.root_id}.md").read_text()
    refresh_model(stores, model.root_id)
    assert "30 km" not in (stores.settings.dossiers / f"{model.root_id}.md").read_text()


def test_an_observations_category_is_that_of_all_its_members_words() -> None:
    """The running counts kept as facts join give the category of every member's words read at once."""
    import random
    from collections import Counter

    from nexus_memory.observations.topics import category, category_counts, top_category

    vocabulary = [
        "job",
        "boss",
        "hiking",
        "dog",
        "cat",
        "running",
        "wife",
        "kid",
        "money",
        "budget",
        "laptop",
        "deploy",
        "pizza",
        "concert",
        "hello",
    ]
    rng = random.Random(5)
    for _ in range(200):
        members = [[rng.choice(vocabulary) for _ in range(rng.randint(0, 4))] for _ in range(rng.randint(1, 6))]
        running: Counter[str] = Counter()
        for words in members:
            running.update(category_counts(words))
        assert top_category(running) == category(w for words in members for w in words)
    assert top_category(Counter()) is None
