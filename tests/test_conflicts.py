"""Conflicts: a later statement of the same kind about the same entity supersedes the earlier one; two people,
two times that both stay true, and two statements of one message do not; the LLM path and its failures."""

from __future__ import annotations

import json
import re

import pytest
from fake_openai import FakeOpenAI, content
from lifecycle_world import build, facts_with, message

from nexus_memory.core.config import load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.facts.state import CONFLICT_CONFIDENCE
from nexus_memory.lifecycle import conflicts
from nexus_memory.lifecycle.statements import read_statement

MONTH = 30 * 1440  # minutes


@pytest.fixture
def world(stores: Stores) -> Stores:
    build(
        stores,
        [
            message(1, "alice@example.com", "I live in Paris.", sender_name="Alice", minute=0),
            message(2, "bob@example.com", "I live in Rome.", sender_name="Bob", minute=5),
            message(3, "alice@example.com", "I lived in Madrid for years.", sender_name="Alice", minute=10),
            message(4, "carol@example.com", "I work at Acme. I work at Beta Labs too.", sender_name="Carol", minute=20),
            message(5, "alice@example.com", "I visited Oslo in March.", sender_name="Alice", minute=30),
            message(6, "alice@example.com", "I moved to Berlin.", sender_name="Alice", minute=4 * MONTH),
            message(7, "alice@example.com", "I visited Lima in May.", sender_name="Alice", minute=4 * MONTH + 5),
            message(8, "bob@example.com", "My favorite color is green.", sender_name="Bob", minute=4 * MONTH + 9),
        ],
    )
    return stores


def superseded(stores: Stores) -> dict[str, str]:
    rows = stores.conn.execute(
        """SELECT o.text, n.text FROM fact_conflicts c JOIN facts o ON o.id = c.old_fact_id
           JOIN facts n ON n.id = c.new_fact_id"""
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def test_statements_read_only_current_states() -> None:
    assert read_statement("Ben moved to Lisbon last month.").value == "Lisbon"  # type: ignore[union-attr]
    assert read_statement("Alice's favorite color is blue.").key == "color"  # type: ignore[union-attr]
    for text in (
        "Alice lived in Paris.",
        "Alice no longer lives in Paris.",
        "Alice might move to Rome.",
        "If Alice moves to Rome she will be happy.",
        "Alice said she lives in Rome.",
        "Alice visited Rome.",
    ):
        assert read_statement(text) is None, text


def test_a_later_statement_supersedes_the_earlier_one(world: Stores) -> None:
    report = conflicts.detect_conflicts(world, use_llm=False)
    assert (
        report.conflicts_found == 1
        and report.facts_checked == world.conn.execute("SELECT count(*) FROM facts").fetchone()[0]
    )
    assert superseded(world) == {"Alice lives in Paris.": "Alice moved to Berlin."}
    paris, berlin = facts_with(world, "Paris")[0], facts_with(world, "Berlin")[0]
    row = world.conn.execute("SELECT confidence, superseded_by, hidden_at FROM fact_state WHERE fact_id = ?", (paris,))
    assert tuple(row.fetchone()) == (CONFLICT_CONFIDENCE, berlin, None)  # lowered, not hidden
    # A second run looks only at new facts.
    assert conflicts.detect_conflicts(world, use_llm=False).facts_checked == 0


def test_an_older_statement_arriving_late_is_the_superseded_one(world: Stores) -> None:
    conflicts.detect_conflicts(world, use_llm=False)
    build(world, [message(9, "alice@example.com", "I live in Lyon.", sender_name="Alice", minute=-MONTH)])
    report = conflicts.detect_conflicts(world, use_llm=False)
    assert report.facts_checked == 1 and report.conflicts_found == 2
    found = superseded(world)
    assert found["Alice lives in Lyon."] in ("Alice lives in Paris.", "Alice moved to Berlin.")


def test_non_conflicts_two_people_two_times_one_message(world: Stores) -> None:
    conflicts.detect_conflicts(world, use_llm=False)
    texts = set(superseded(world)) | set(superseded(world).values())
    assert not any("Rome" in t or "Madrid" in t or "Acme" in t or "Beta" in t or "Oslo" in t for t in texts)


def answer_superseding(pattern: str):
    """A scripted model that names, as contradicted, the shown fact whose text matches `pattern`."""

    def reply(request: dict) -> object:
        prompt = request["messages"][-1]["content"]
        ids = [m.group(1) for m in re.finditer(r"^- (\S+) \(\d{4}-\d\d-\d\d\): (.*)$", prompt, re.M) if pattern in m[2]]
        return content(json.dumps({"contradicted": [{"fact_id": i, "statement": "residence"} for i in ids]}))

    return reply


def test_llm_judges_and_a_bad_answer_is_retried_next_run(stores: Stores) -> None:
    build(
        stores,
        [
            message(1, "alice@example.com", "I live in Paris.", sender_name="Alice", minute=0),
            message(2, "alice@example.com", "I moved to Berlin.", sender_name="Alice", minute=MONTH),
        ],
    )
    good = answer_superseding("Paris")
    with FakeOpenAI([content("not json at all"), good, good, good]) as server:
        settings = load_settings(data_dir=stores.data_dir, llm_base_url=server.base_url, llm_model="fake")
        object.__setattr__(stores, "settings", settings)
        first = conflicts.detect_conflicts(stores)  # Paris: garbage; Berlin: contradicts Paris
        assert (first.detector, first.facts_checked, first.conflicts_found) == ("llm:fake", 2, 1)
        assert len(first.failures) == 1 and "not valid JSON" in first.failures[0]
        second = conflicts.detect_conflicts(stores)  # the fact that failed is looked at again
        assert second.facts_checked == 2 and not second.failures
        assert conflicts.detect_conflicts(stores).facts_checked == 0
    assert superseded(stores) == {"Alice lives in Paris.": "Alice moved to Berlin."}
    assert server.requests[0]["response_format"]["type"] == "json_schema"
