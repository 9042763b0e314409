"""The LLM writer's structured mode and auto switching, against the scripted server through the real client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest

from nexus_memory.bench.extract_llm import run_llm
from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory.events.ledger import Event
from nexus_memory.identity import store as identity
from nexus_memory.writer.base import EpisodeInput, WriteResult, WriterFailure
from nexus_memory.writer.llm import LLMWriter
from nexus_memory.writer.llm import writer as llm_writer
from nexus_memory.writer.llm.validation import attribute
from nexus_memory.writer.run import PartitionReport, write_events
from nexus_memory.writer.tools import WriterTools
from tests.fake_openai import FakeOpenAI, content, document, http_error, tool_calls
from tests.test_llm_writer import ALICE, DAY, RECORDS, add_events, count, make_writer, record


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


TYLER_HANDLE = {"platform": "imessage", "sender_id": "+15550199", "peer_kind": "dm"}


def doc(
    *facts: dict[str, Any], links: list[dict[str, Any]] | None = None, claims: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {"facts": list(facts), "causal_links": links or [], "identity_claims": claims or []}


def fact(text: str, ref: str, *entities: tuple[str, str]) -> dict[str, Any]:
    return {"text": text, "source_ref": ref, "entities": [{"name": n, "type": t} for n, t in entities]}


def write_direct(stores: Stores, writer: LLMWriter, events: list[Event]) -> WriteResult:
    """One episode in one transaction, returning the WriteResult (mode, dropped) the runner records."""
    with stores.transaction():
        return writer.write(WriterTools(stores, "run1", writer=writer.name), EpisodeInput(None, events))


def fact_texts(stores: Stores) -> list[str]:
    return sorted(r[0] for r in stores.conn.execute("SELECT text FROM facts"))


GOOD = doc(
    fact("I started at Acme this week", "e1", ("I", "person"), ("Acme", "organization")),
    fact("Acme opened an office in Berlin", "e2", ("Acme", "organization"), ("Berlin", "location")),
    fact("Alice moved to Berlin", "e2", ("Alice", "person"), ("Berlin", "location")),
    links=[{"cause": 2, "effect": 3, "strength": 0.8}],
)


# -- a valid document ----------------------------------------------------------------------------
def test_valid_document_is_written_through_the_writer_tools(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:2])
    fake.add(document(GOOD))
    result = write_direct(stores, make_writer(fake, mode="structured"), events)

    assert (result.mode, result.dropped, result.fallback) == ("structured", {}, "")
    assert (result.prompt_tokens, result.completion_tokens) == (300, 60)
    assert fact_texts(stores) == [
        "Acme opened an office in Berlin",
        "Alice moved to Berlin",
        "Alice started at Acme this week (the week of 29 April 2024)",  # "I" is the sender; dates as offline
    ]
    rows = {r["text"]: dict(r) for r in stores.conn.execute("SELECT * FROM facts")}
    assert rows["Alice started at Acme this week (the week of 29 April 2024)"]["source_event_id"] == events[0].id
    assert rows["Alice moved to Berlin"]["as_of"] == events[1].as_of
    assert json.loads(rows["Alice moved to Berlin"]["metadata"])["mode"] == "structured"
    # Alice is the sender's delivery entity, not a second "Alice"; Acme is one entity for two facts.
    alice = stores.conn.execute("SELECT entity_id FROM contacts WHERE handle = ?", (ALICE["sender_id"],)).fetchone()[0]
    linked = stores.conn.execute(
        "SELECT f.text, fe.entity_id FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id"
    ).fetchall()
    alice_facts = {r[0] for r in linked if r[1] == identity.canonical_id(stores.conn, alice)}
    assert alice_facts == {t for t in fact_texts(stores) if t.startswith("Alice")}
    assert count(stores, "entities WHERE name = 'Acme'") == 1
    assert count(stores, "entities WHERE name = 'Alice'") == 0
    assert count(stores, "causal_links") == 1

    [request] = fake.requests
    assert "tools" not in request
    sent = request["response_format"]["json_schema"]["schema"]
    assert sent["properties"]["facts"]["items"]["properties"]["source_ref"]["enum"] == ["e1", "e2"]
    assert "[e1] id=imessage:m1" in request["messages"][1]["content"]


def test_structured_mode_through_the_runner_records_the_episode(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:2])
    fake.add(document(GOOD))
    outcome = write_events(stores, events, make_writer(fake, mode="structured"))
    assert (outcome.status, outcome.facts) == ("ok", 3)
    assert count(stores, "memory_processing_log") == 2
    # The run metadata says which mode wrote the episode (PartitionReport.as_dict / layers.py details).
    assert outcome.mode == "structured"
    assert PartitionReport("p", [outcome]).as_dict()["modes"] == {"structured": 1}


def test_nothing_to_remember_is_an_ok_episode(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[2:])
    fake.add(document(doc()))
    result = write_direct(stores, make_writer(fake, mode="structured"), events)
    assert (result.mode, count(stores, "facts")) == ("structured", 0)


# -- invalid output ------------------------------------------------------------------------------
def test_invalid_json_is_retried_then_the_failure_is_recorded_and_nothing_written(
    stores: Stores, fake: FakeOpenAI
) -> None:
    events = add_events(stores, RECORDS[:2])
    fake.add(document("{not json"), document('{"facts": [{"text": "Alice'), document("Sure! Alice moved."))
    outcome = write_events(stores, events, make_writer(fake, mode="structured", max_retries=2))

    assert outcome.status == "failed"
    assert "structured mode" in outcome.error and "3 attempt(s)" in outcome.error and "not valid JSON" in outcome.error
    assert (outcome.prompt_tokens, outcome.completion_tokens) == (900, 180)  # failed work still cost tokens
    assert (count(stores, "facts"), count(stores, "entities WHERE source = 'inferred'")) == (0, 0)
    assert count(stores, "memory_processing_log") == 0
    # Each retry shows the model its rejected answer and why, at a higher temperature.
    retry = fake.requests[1]
    assert retry["messages"][-2] == {"role": "assistant", "content": "{not json"}
    assert "rejected" in retry["messages"][-1]["content"] and retry["temperature"] > 0


def test_schema_violation_is_retried_then_a_good_answer_is_used(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:2])
    fake.add(document({"facts": [{"text": "Alice moved to Berlin"}]}), document(GOOD))
    result = write_direct(stores, make_writer(fake, mode="structured"), events)
    assert result.mode == "structured" and "does not fit the schema" in result.notes
    assert "'source_ref'" in fake.requests[1]["messages"][-1]["content"]
    assert count(stores, "facts") == 3


def test_facts_that_fail_validation_are_dropped_and_counted(stores: Stores, fake: FakeOpenAI) -> None:
    tyler = record(TYLER_HANDLE, "m9", "t9", f"{DAY}T10:00:00Z", "Hey, it's Tyler. I bought a new bike yesterday.")
    events = add_events(stores, [RECORDS[0], tyler])
    fake.add(
        document(
            doc(
                fact("Alice started at Acme", "e1", ("Alice", "person"), ("Acme", "organization")),
                fact("Alice lives in Paris", "e9", ("Alice", "person")),  # no such event
                fact("Alice works at Google", "e1", ("Google", "organization")),  # not in the text
                fact("Tyler bought a new bike", "e2", ("Tyler", "person")),  # a name the handle only claims
                fact("I bought a new bike yesterday", "e2", ("I", "person")),
                fact("   ", "e1"),
                fact("Priya started at Acme", "e1", ("Acme", "organization")),  # a name from nowhere
                fact("I started this week", "e1", ("Northwind", "organization")),  # a stray entity only
                fact("Alice is a leader, Alice is a leader, Alice is a leader", "e1"),
                fact("How is Acme?", "e1"),
                fact("2024-05-01T09:00:00Z", "e1"),
                fact("2024-05-01T09:00:00Z Alice (inbound): Big news", "e1"),
                links=[{"cause": 3, "effect": 1, "strength": 0.9}, {"cause": 1, "effect": 5, "strength": 0.5}],
                claims=[
                    {"source_ref": "e2", "type": "name", "value": "Tyler"},
                    {"source_ref": "e2", "type": "name", "value": "Robert"},  # not in the message
                ],
            )
        )
    )
    result = write_direct(stores, make_writer(fake, mode="structured"), events)

    assert result.mode == "structured"
    assert result.dropped == {
        "fact:unknown_source_ref": 1,
        "fact:entity_not_in_episode": 1,
        "fact:claimed_identity": 1,
        "fact:empty": 2,
        "fact:prompt_text": 1,
        "fact:name_not_in_episode": 1,
        "fact:repetitive": 1,
        "fact:question": 1,
        "entity:not_in_episode": 1,
        "link:fact_dropped": 1,
        "link:no_cause_in_text": 1,
        "claim:not_in_message": 1,
    }
    assert "Google" in result.notes and "Tyler" in result.notes
    assert fact_texts(stores) == [
        "+15550199 bought a new bike yesterday (on 30 April 2024)",
        "Alice started at Acme",
        "Alice started this week (the week of 29 April 2024)",
    ]
    assert count(stores, "entities WHERE name = 'Northwind'") == 0
    # The claim is a merge proposal for a person to accept, never a merge.
    [candidate] = stores.conn.execute(
        "SELECT c.status, a.name, a.type FROM merge_candidates c JOIN entities a ON a.id = c.entity_a_id"
    ).fetchall()
    assert tuple(candidate) == ("pending", "Tyler", "person")
    assert count(stores, "entities WHERE merged_into IS NOT NULL") == 0


def test_attribution_rewrites_first_person_and_bare_pronouns() -> None:
    assert attribute("I love my new job", "Priya", "Sam") == "Priya loves Priya's new job"
    assert attribute("He already chewed my shoes", "Marco", None) == "Marco said he already chewed Marco's shoes"
    assert attribute("Biscuit chewed the shoes", "Marco", None) == "Biscuit chewed the shoes"
    assert attribute("Thank you for the tea", "Ann", "Bo") == "Thank you for the tea"  # a formula, not Bo


# -- auto ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "failure",
    [
        http_error(500, "Failed to parse tool call arguments as JSON"),
        http_error(500, "The model produced output that does not match the expected tool call format"),
        content("I think Alice started at Acme."),  # no tool call at all
    ],
)
def test_auto_switches_an_episode_to_structured_when_tool_calls_fail(
    stores: Stores, fake: FakeOpenAI, failure: Any
) -> None:
    events = add_events(stores, RECORDS[:2])
    fake.add(failure, document(GOOD))
    result = write_direct(stores, make_writer(fake, mode="auto"), events)

    assert result.mode == "structured" and result.fallback.startswith("tool calls failed")
    assert "auto:" in result.notes
    assert count(stores, "facts") == 3
    first, second = fake.requests
    assert "tools" in first and "response_format" not in first
    assert "tools" not in second and second["response_format"]["type"] == "json_schema"


def test_auto_keeps_the_tool_loop_when_it_works_and_fails_plainly_when_nothing_can_help(
    stores: Stores, fake: FakeOpenAI
) -> None:
    events = add_events(stores, RECORDS[:1])
    writer = make_writer(fake, mode="auto", max_retries=1)
    fake.add(tool_calls(("insert_fact", {"text": "Alice started at Acme", "source_event_id": "e1"})))
    fake.add(tool_calls(("finish", {"summary": "1 fact"})))
    assert write_direct(stores, writer, events).mode == "tools"

    other = add_events(stores, RECORDS[2:])
    fake.add(http_error(401, "bad key"))  # retrying cannot help, and no other mode can either
    with pytest.raises(WriterFailure, match="tools mode") as failure:
        write_direct(stores, writer, other)
    assert failure.value.mode == "tools"
    assert all("tools" in r for r in fake.requests)


def test_auto_tries_structured_once_the_tool_loop_has_given_up(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:2])
    fake.add(http_error(500), http_error(500), document(GOOD))  # two failed attempts (max_retries=1)
    result = write_direct(stores, make_writer(fake, mode="auto", max_retries=1), events)
    assert result.mode == "structured" and result.fallback.startswith("the tool loop gave up")
    assert count(stores, "facts") == 3


def test_auto_goes_straight_to_structured_after_repeated_tool_failures(
    stores: Stores, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(llm_writer, "AUTO_TOOL_FAILURES", 1)
    events = add_events(stores, RECORDS)
    writer = make_writer(fake, mode="auto")
    fake.add(http_error(500, "Failed to parse tool call arguments as JSON"), document(doc()))
    write_direct(stores, writer, events[:1])
    sent = len(fake.requests)
    fake.add(document(doc()))
    result = write_direct(stores, writer, events[2:])
    assert result.mode == "structured" and "off for this run" in result.fallback
    assert len(fake.requests) == sent + 1 and "tools" not in fake.requests[-1]


# -- busy servers and budgets --------------------------------------------------------------------
def test_429_and_503_are_waited_out_honouring_retry_after(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:2])
    waits: list[float] = []
    fake.add(
        http_error(429, "slow down", {"Retry-After": "3"}),
        http_error(503, "loading model", {"Retry-After": "0.25"}),
        http_error(503, "loading model"),  # no Retry-After: exponential backoff
        document(GOOD),
    )
    writer = make_writer(fake, mode="structured", backoff_s=0.5, sleep=waits.append)
    result = write_direct(stores, writer, events)
    assert waits == [3.0, 0.25, 2.0]
    assert result.mode == "structured" and "attempt" not in result.notes  # waits are not failed attempts
    assert count(stores, "facts") == 3


def test_unsupported_json_schema_falls_back_to_json_object(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:2])
    fake.add(http_error(400, "response_format type 'json_schema' is not supported"), document(GOOD))
    result = write_direct(stores, make_writer(fake, mode="structured"), events)
    assert count(stores, "facts") == 3 and "json_object" in result.notes
    assert fake.requests[1]["response_format"] == {"type": "json_object"}


def test_token_budget_ends_the_episode(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:2])
    fake.add(document("{}"), document("{}"), document(GOOD))
    outcome = write_events(stores, events, make_writer(fake, mode="structured", max_retries=2, token_budget=500))
    assert outcome.status == "failed" and "token budget spent: 720 of 500" in outcome.error
    assert len(fake.requests) == 2 and count(stores, "facts") == 0


# -- bench extract --writer llm ------------------------------------------------------------------
def test_bench_extract_llm_reports_each_episode_next_to_the_offline_writer(
    tmp_path: Path, settings: Settings, fake: FakeOpenAI
) -> None:
    session = [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "Hey Bo!"},
        {"speaker": "Bo", "dia_id": "D1:2", "text": "I adopted a cat named Tilly last week."},
        {"speaker": "Ann", "dia_id": "D1:3", "text": "So cute! Is she a Siamese?"},
    ]
    sample = {
        "sample_id": "conv-x",
        "conversation": {"speaker_a": "Ann", "speaker_b": "Bo", "session_1_date_time": "1:56 pm on 8 May, 2023"}
        | {"session_1": session},
        "observation": {"session_1_observation": {"Bo": [["Bo adopted a cat named Tilly.", "D1:2"]]}},
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]))

    def answer(request: dict[str, Any]) -> Any:
        prompt = request["messages"][1]["content"]
        if "adopted a cat" in prompt.split("NEW EVENTS")[1]:
            kept = fact("I adopted a cat named Tilly", "e2", ("Tilly", "pet"))
            return document(doc(kept, fact("Bo moved to Mars", "e2", ("Mars", "location"))))
        return document(doc())

    fake.add(answer, answer)
    configured = replace(settings, llm_base_url=fake.base_url, llm_model="fake-model", llm_timeout_s=5)
    report = run_llm(path, settings=configured, episode_turns=2, mode="structured")

    assert (report["episodes"], report["turns"]) == (2, 3)
    first, second = report["per_episode"]
    assert (first["status"], first["mode"], first["turns"], first["facts_kept"]) == ("ok", "structured", 2, 1)
    assert (first["facts_dropped"], first["dropped"]) == (1, {"fact:entity_not_in_episode": 1})
    assert report["examples"] == [{"turn": "Bo: I adopted a cat named Tilly last week.", "fact": ANY}]
    assert report["examples"][0]["fact"].startswith("Bo adopted a cat named Tilly")
    assert (second["status"], second["facts_kept"]) == ("ok", 0)
    llm = report["llm"]
    assert (llm["ok_rate"], llm["ok_by_mode"], llm["prompt_tokens"]) == (1.0, {"structured": 2}, 600)
    assert report["offline"]["observation_pairs"] == llm["observation_pairs"] == 1
    assert llm["observation_coverage"] == report["offline"]["observation_coverage"] == 1.0
