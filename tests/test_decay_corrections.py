"""Decay with a fixed clock, the threshold soft-delete, confirm and correct."""

from __future__ import annotations

import math

import pytest
from lifecycle_world import add_mental_model, add_observation, build, facts_with, message
from test_recall import FakeEmbedder

from nexus_memory.agents.tools import call_tool
from nexus_memory.core.ids import now_ms
from nexus_memory.core.stores import Stores
from nexus_memory.facts import state
from nexus_memory.facts.insert import insert_fact
from nexus_memory.injection.context import get_context
from nexus_memory.lifecycle import decay
from nexus_memory.recall import recall

DAY = decay.DAY_MS
FAKE = FakeEmbedder()


@pytest.fixture
def world(stores: Stores) -> Stores:
    build(
        stores,
        [
            message(1, "dana@example.com", "I keep the spare key under the blue planter.", sender_name="Dana"),
            message(2, "ben@example.com", "I moved to Lisbon last month.", sender_name="Ben"),
            message(3, "ben@example.com", "My sister plays the cello.", sender_name="Ben"),
        ],
    )
    return stores


def created_at(stores: Stores, fact_id: str) -> int:
    return stores.conn.execute("SELECT created_at FROM facts WHERE id = ?", (fact_id,)).fetchone()[0]


def confidence(stores: Stores, fact_id: str, now: int) -> float:
    found = state.get_state(stores.conn, fact_id, stores.settings.decay_rate)
    assert found is not None
    return decay.current_confidence(found, now)


def recalled(stores: Stores, query: str) -> list[str]:
    return [r.text for r in recall(stores, query, scope=["facts"], touch=False, embedder=FAKE).results]


def test_decay_arithmetic() -> None:
    assert decay.decayed(1.0, 0.1, 10) == pytest.approx(math.exp(-1))
    assert decay.decayed(0.3, 0.01, 100) == pytest.approx(0.3 * math.exp(-1))
    assert decay.decayed(0.8, 0.0, 10_000) == 0.8  # protected
    assert decay.decayed(1.0, 0.1, -5) == 1.0  # a clock in the future counts as no time


def test_decay_run_with_a_fixed_clock(world: Stores) -> None:
    key = facts_with(world, "planter")[0]
    start = created_at(world, key)
    # Ten days at 0.1 a day: e^-1 everywhere, nothing below the threshold yet.
    report = decay.run_decay(world, now=start + 10 * DAY, rate=0.1, threshold=0.05)
    assert (report.checked, report.soft_deleted, report.below_half, report.protected) == (3, 0, 3, 0)
    assert report.mean_confidence == pytest.approx(math.exp(-1), abs=1e-3)
    assert confidence(world, key, start + 10 * DAY) == pytest.approx(math.exp(-0.1))  # the configured 0.01/day
    # Thirty-one days: e^-3.1 = 0.045 < 0.05, every fact is soft-deleted; running again changes nothing.
    report = decay.run_decay(world, now=start + 31 * DAY, rate=0.1, threshold=0.05)
    assert report.soft_deleted == 3 and report.hidden_total == 3
    assert decay.run_decay(world, now=start + 31 * DAY, rate=0.1, threshold=0.05).soft_deleted == 0
    row = world.conn.execute("SELECT hidden_reason FROM fact_state WHERE fact_id = ?", (key,)).fetchone()
    assert row[0] == "decayed"
    assert world.conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 3  # kept for audit


def test_the_default_rate_keeps_a_month_old_fact(world: Stores) -> None:
    start = created_at(world, facts_with(world, "planter")[0])
    assert decay.run_decay(world, now=start + 31 * DAY).soft_deleted == 0  # 0.01/day: e^-0.31
    assert decay.run_decay(world, now=start + 400 * DAY).soft_deleted == 3  # e^-4 = 0.018


def test_an_imported_history_is_not_hidden_by_its_age(stores: Stores) -> None:
    # Said 400 days ago, written to memory now: decay counts time in memory, so the import keeps it.
    now = now_ms()
    old = insert_fact(stores.conn, "Ann had a red bike.", now - 400 * DAY)
    found = state.get_state(stores.conn, old["fact_id"], stores.settings.decay_rate)
    assert found is not None and found.clock_start >= now - DAY
    assert decay.run_decay(stores, now=now + DAY).soft_deleted == 0
    assert decay.run_decay(stores, now=now + 400 * DAY).soft_deleted == 1  # unused for 400 days in memory


def test_soft_deleted_facts_are_hidden_from_recall_and_get_context(world: Stores) -> None:
    assert "Dana keeps the spare key under the blue planter." in recalled(world, "spare key planter")
    assert "spare key" in get_context(world, "where is the spare key planter?", embedder=FAKE)
    key = facts_with(world, "planter")[0]
    run_id = add_observation(world, [key], "Dana keeps a spare key under the blue planter")
    decay.run_decay(world, now=created_at(world, key) + 400 * DAY)
    assert recalled(world, "spare key planter") == []
    assert get_context(world, "where is the spare key planter?", embedder=FAKE) == ""
    assert world.conn.execute("SELECT is_stale FROM analysis_runs WHERE id = ?", (run_id,)).fetchone()[0] == 1


def test_recall_restarts_the_decay_clock(world: Stores) -> None:
    key = facts_with(world, "planter")[0]
    assert world.conn.execute("SELECT count(*) FROM fact_state").fetchone()[0] == 0
    before = now_ms()
    recall(world, "spare key planter", scope=["facts"], embedder=FAKE)  # touch=True counts an access
    found = state.get_state(world.conn, key, 0.01)
    assert found is not None and found.clock_start >= before - 1000


def test_confirm_protects_a_fact(world: Stores) -> None:
    key, lisbon = facts_with(world, "planter")[0], facts_with(world, "Lisbon")[0]
    confirmed = call_tool(world, "confirm_fact", {"fact_id": key})
    assert (confirmed["confirmed"], confirmed["confidence"], confirmed["decay_rate"]) == (True, 1.0, 0.0)
    report = decay.run_decay(world, now=created_at(world, key) + 10_000 * DAY)
    assert report.protected == 1 and report.soft_deleted == 2
    assert "Dana keeps the spare key under the blue planter." in recalled(world, "spare key planter")
    assert recalled(world, "Lisbon") == []
    # Confirming a fact that had decayed brings it back, protected.
    call_tool(world, "confirm_fact", {"fact_id": lisbon})
    assert recalled(world, "Lisbon") == ["Ben moved to Lisbon last month (in April 2024)."]
    assert call_tool(world, "confirm_fact", {"fact_id": "nope"})["error"] == "no fact with id 'nope'"


def test_correct_hides_the_old_fact_and_marks_what_rests_on_it_stale(world: Stores) -> None:
    lisbon = facts_with(world, "Lisbon")[0]
    entity = world.conn.execute(
        "SELECT entity_id FROM fact_entities WHERE fact_id = ? ORDER BY entity_id LIMIT 1", (lisbon,)
    ).fetchone()[0]
    run_id = add_observation(world, [lisbon], "Ben lives in Lisbon")
    model_id = add_mental_model(world, "Ben", "Ben lives in Lisbon", entity_id=entity)
    corrected = call_tool(world, "correct_fact", {"fact_id": lisbon, "new_text": "Ben moved to Porto last month."})
    assert corrected["supersedes"] == lisbon and corrected["observations_stale"] == 1
    assert corrected["mental_models_stale"] == 1
    moved = [t for t in recalled(world, "Ben moved") if "moved" in t]
    assert moved == ["Ben moved to Porto last month."]
    row = world.conn.execute(
        "SELECT hidden_reason, superseded_by FROM fact_state WHERE fact_id = ?", (lisbon,)
    ).fetchone()
    assert tuple(row) == ("corrected", corrected["fact_id"])
    assert world.conn.execute("SELECT is_stale FROM analysis_runs WHERE id = ?", (run_id,)).fetchone()[0] == 1
    assert world.conn.execute("SELECT is_stale FROM mental_models WHERE id = ?", (model_id,)).fetchone()[0] == 1
    info = call_tool(world, "get_entity_info", {"entity": "ben@example.com"})
    assert [f["text"] for f in info["facts"] if "moved" in f["text"]] == ["Ben moved to Porto last month."]
