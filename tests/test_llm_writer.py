"""The LLM writer against a scripted OpenAI-compatible server, through the real `openai` client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory.episodes.grouping import build_episodes
from nexus_memory.events.ledger import Event, RawRecord, ingest, parse_event, parse_timestamp
from nexus_memory.llm.client import LLMClient
from nexus_memory.writer.llm import TOOL_NAMES, LLMWriter, calls_in_content, parse_arguments
from nexus_memory.writer.run import pending_episodes, process_partition, write_events
from nexus_memory.writer.tools import ToolError
from tests.fake_openai import (
    FakeOpenAI,
    Reply,
    content,
    http_error,
    iter_messages,
    result_ids,
    sleep,
    tool_calls,
    tool_results,
)

DAY = "2024-05-01"
ALICE = {"platform": "imessage", "sender_id": "+15551234567", "sender_name": "Alice", "peer_kind": "dm"}
BOB = {"platform": "imessage", "sender_id": "bob@example.com", "sender_name": "Bob", "peer_kind": "dm"}


def record(who: dict[str, Any], msg_id: str, thread: str, time: str, text: str) -> dict[str, Any]:
    return {**who, "id": msg_id, "thread_id": thread, "session_id": f"s-{thread}", "as_of": time, "content": text}


RECORDS = [
    record(ALICE, "m1", "t1", f"{DAY}T09:00:00Z", "Hi! Big news: I started at Acme this week."),
    record(
        ALICE,
        "m2",
        "t1",
        f"{DAY}T09:01:00Z",
        "We moved to Berlin because Acme opened an office there. Miso the cat too.",
    ),
    record(BOB, "m3", "t2", f"{DAY}T15:00:00Z", "lol ok see you"),
]


def add_events(stores: Stores, records: list[dict[str, Any]]) -> list[Event]:
    ingest(stores, [RawRecord("test", i, r, json.dumps(r)) for i, r in enumerate(records, 1)])
    return [parse_event(r, source="test") for r in records]


def count(stores: Stores, table: str) -> int:
    return stores.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def processing(stores: Stores) -> list[dict[str, Any]]:
    rows = stores.conn.execute("SELECT * FROM episode_processing ORDER BY updated_at").fetchall()
    return [dict(r) for r in rows]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def make_writer(fake: FakeOpenAI, **kwargs: Any) -> LLMWriter:
    """A writer on the fake server; the tool loop unless a test asks for another mode. `timeout_s`,
    `backoff_s` and `sleep` are the client's, the rest the writer's."""
    kwargs.setdefault("mode", "tools")
    client = {"timeout_s": 5, "backoff_s": 0.01} | {
        k: kwargs.pop(k) for k in ("timeout_s", "backoff_s", "sleep") if k in kwargs
    }
    return LLMWriter(LLMClient(fake.base_url, "fake-model", **client), **kwargs)


def finish(summary: str = "done", usage: tuple[int, int] = (100, 20)) -> Reply:
    return tool_calls(("finish", {"summary": summary}), usage=usage)


def one_fact(text: str, source: str = "e1") -> list[Reply]:
    """A minimal good episode: one fact, then finish."""
    return [tool_calls(("insert_fact", {"text": text, "source_event_id": source})), finish()]


# -- happy path ----------------------------------------------------------------------------------
def test_scripted_happy_path_writes_facts_entities_links_and_tokens(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:2])
    build_episodes(stores, DAY, "imessage")

    def link_step(request: dict[str, Any]) -> Reply:
        alice, acme = result_ids(request, "entity_id")
        office, moved = result_ids(request, "fact_id")
        return tool_calls(
            ("link_fact_entity", {"fact_id": moved, "entity_id": alice}),
            ("link_fact_entity", {"fact_id": office, "entity_id": acme}),
            ("insert_causal_link", {"from_fact_id": office, "to_fact_id": moved, "strength": 0.8}),
            usage=(300, 40),
        )

    fake.add(
        tool_calls(
            ("create_entity", {"name": "Alice", "type": "person"}),
            ("create_entity", {"name": "Acme", "type": "organization"}),
            ("insert_fact", {"text": "Acme opened an office in Berlin", "source_event_id": "e2", "as_of": DAY}),
            ("insert_fact", {"text": "Alice moved to Berlin", "source_event_id": events[1].id, "as_of": "2024"}),
            usage=(200, 30),
        ),
        link_step,
        finish("2 facts", usage=(400, 10)),
    )
    report = process_partition(stores, DAY, "imessage", make_writer(fake))

    [outcome] = report.outcomes
    assert (outcome.status, outcome.facts, outcome.error) == ("ok", 2, None)
    facts = {r["text"]: dict(r) for r in stores.conn.execute("SELECT * FROM facts")}
    assert facts["Acme opened an office in Berlin"]["as_of"] == parse_timestamp(DAY)  # ISO converted
    assert facts["Alice moved to Berlin"]["as_of"] == events[1].as_of  # a bare year: the event's time
    assert {f["source_event_id"] for f in facts.values()} == {events[1].id}
    assert json.loads(facts["Alice moved to Berlin"]["metadata"])["writer"] == "llm:fake-model"
    assert count(stores, "fact_entities") == 2
    assert count(stores, "causal_links") == 1
    assert count(stores, "memory_processing_log") == 2
    [row] = processing(stores)
    assert (row["status"], row["writer"], row["facts_written"]) == ("ok", "llm:fake-model", 2)
    assert (row["prompt_tokens"], row["completion_tokens"]) == (900, 80)

    first = fake.requests[0]
    assert {t["function"]["name"] for t in first["tools"]} == TOOL_NAMES
    assert first["messages"][0]["role"] == "system" and "Memory Writer" in first["messages"][0]["content"]
    prompt = first["messages"][1]["content"]
    for expected in ("[e1] id=imessage:m1", "[e2] id=imessage:m2", "sender_id=+15551234567", "sender_name=Alice"):
        assert expected in prompt
    assert "direction=inbound" in prompt and "peer_kind=dm" in prompt and "thread_id=t1" in prompt
    assert "2024-05-01T09:01:00Z" in prompt and "sender_entity_id=" in prompt
    # Each tool call got its own `tool` answer, tied by id.
    assert len(list(iter_messages(fake, "tool"))) >= 7


def test_context_events_are_marked_context_only(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:2])
    fake.add(finish("nothing new"))
    outcome = write_events(stores, events[1:], make_writer(fake))
    assert outcome.status == "ok"
    prompt = fake.requests[0]["messages"][1]["content"]
    context_part, new_part = prompt.split("NEW EVENTS")
    assert "CONTEXT EVENTS" in context_part and "started at Acme" in context_part
    assert "[e1] id=imessage:m2" in new_part and "started at Acme" not in new_part


def test_chatter_only_episode_finishes_without_facts(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[2:])
    fake.add(finish("small talk only"))
    outcome = write_events(stores, events, make_writer(fake))
    assert (outcome.status, outcome.facts) == ("ok", 0)
    assert count(stores, "memory_processing_log") == 1


# -- failures and retries ------------------------------------------------------------------------
def test_garbage_fails_cleanly_then_rerun_processes_only_that_episode(stores: Stores, fake: FakeOpenAI) -> None:
    add_events(stores, RECORDS)  # thread t1 (Alice) and t2 (Bob): two episodes
    build_episodes(stores, DAY, "imessage")
    writer = make_writer(fake, max_retries=2)
    fake.add(*one_fact("Alice started a job at Acme"))  # episode 1 (t1)
    fake.add(
        tool_calls(("insert_fact", {"text": "Bob will see the owner soon", "source_event_id": "e1"})),
        content("lorem ipsum }{ dolor"),  # attempt 1 wrote a fact, then garbage
        content("<|im_end|><|im_end|>"),  # attempt 2
        content("I think the answer is 42."),  # attempt 3
    )
    report = process_partition(stores, DAY, "imessage", writer)

    assert [o.status for o in report.outcomes] == ["ok", "failed"]
    failed = report.outcomes[1]
    assert "malformed output" in failed.error and "3 attempt(s)" in failed.error
    assert [r["text"] for r in stores.conn.execute("SELECT text FROM facts")] == ["Alice started a job at Acme"]
    bob_event = "imessage:m3"
    assert not stores.conn.execute("SELECT 1 FROM facts WHERE source_event_id = ?", (bob_event,)).fetchone()
    assert not stores.conn.execute("SELECT 1 FROM memory_processing_log WHERE event_id = ?", (bob_event,)).fetchone()
    rows = {r["episode_id"]: r for r in processing(stores)}
    assert rows[failed.episode_id]["status"] == "failed" and "malformed" in rows[failed.episode_id]["error"]

    # Rerun: only the failed episode goes to the model again.
    sent = len(fake.requests)
    fake.add(*one_fact("Bob said ok, see you"))
    rerun = process_partition(stores, DAY, "imessage", writer, only_failed=True)
    # Done this time; "lol ok see you" states nothing, so the fact is refused as the offline writer skips it.
    assert [(o.episode_id, o.status, o.facts) for o in rerun.outcomes] == [(failed.episode_id, "ok", 0)]
    assert len(fake.requests) == sent + 2
    assert all(bob_event in r["messages"][1]["content"] for r in fake.requests[sent:])
    assert pending_episodes(stores, DAY, "imessage") == []
    assert processing(stores)[-1]["attempts"] == 2


def test_failed_attempt_is_rolled_back_before_the_retry(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:1])
    fake.add(
        tool_calls(
            ("create_entity", {"name": "Acme Corp", "type": "organization"}),
            ("insert_fact", {"text": "Alice joined Acme Corp", "source_event_id": "e1"}),
        ),
        content("garbage"),
        *one_fact("Alice started working at Acme"),
    )
    outcome = write_events(stores, events, make_writer(fake))
    assert (outcome.status, outcome.facts) == ("ok", 1)
    rows = stores.conn.execute("SELECT text, as_of FROM facts").fetchall()
    assert [tuple(r) for r in rows] == [("Alice started working at Acme", events[0].as_of)]  # as_of omitted
    assert not stores.conn.execute("SELECT 1 FROM entities WHERE name = 'Acme Corp'").fetchone()
    # The retry starts from the episode again, not from the failed conversation.
    assert len(fake.requests[2]["messages"]) == 2


def test_timeout_is_retried_then_recorded_as_failure(stores: Stores, fake: FakeOpenAI) -> None:
    add_events(stores, RECORDS[:1])
    build_episodes(stores, DAY, "imessage")
    fake.add(sleep(3), sleep(3))
    report = process_partition(stores, DAY, "imessage", make_writer(fake, timeout_s=0.5, max_retries=1))
    [outcome] = report.outcomes
    assert outcome.status == "failed" and "timeout" in outcome.error
    assert outcome.seconds < 3
    assert (count(stores, "facts"), count(stores, "memory_processing_log")) == (0, 0)
    assert processing(stores)[0]["status"] == "failed"


def test_server_error_then_success(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:1])
    fake.add(http_error(500), *one_fact("Alice started a job at Acme"))
    writer = make_writer(fake)
    with stores.transaction():
        from nexus_memory.writer.base import EpisodeInput
        from nexus_memory.writer.tools import WriterTools

        result = writer.write(WriterTools(stores, "run1", writer=writer.name), EpisodeInput(None, events))
    assert "API error 500" in result.notes
    assert (result.prompt_tokens, result.completion_tokens, result.tool_calls) == (200, 40, 2)
    assert count(stores, "facts") == 1


def test_auth_error_is_not_retried(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:1])
    fake.add(http_error(401, "bad key"), *one_fact("never"))
    outcome = write_events(stores, events, make_writer(fake, max_retries=2))
    assert outcome.status == "failed" and "401" in outcome.error
    assert len(fake.requests) == 1


def test_refusal_fails_the_episode(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:1])
    fake.add(*[content("", refusal="I can't help with that") for _ in range(2)])
    outcome = write_events(stores, events, make_writer(fake, max_retries=1))
    assert outcome.status == "failed" and "refused" in outcome.error


def test_no_finish_within_max_steps_fails(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:1])
    fake.add(*[tool_calls(("recall", {"query": "Alice"})) for _ in range(3)])
    outcome = write_events(stores, events, make_writer(fake, max_steps=3, max_retries=0))
    assert outcome.status == "failed" and "max_steps=3" in outcome.error


# -- tool errors go back to the model ------------------------------------------------------------
def test_invalid_tool_arguments_are_returned_to_the_model_which_recovers(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:2])
    seen: list[Any] = []

    def recover(request: dict[str, Any]) -> Reply:
        seen.extend(tool_results(request))
        return tool_calls(("insert_fact", {"text": "Alice has a cat named Miso", "source_event_id": "e2"}))

    fake.add(
        tool_calls(
            ("insert_fact", '{"text": "Alice likes tea", "source_event_id": '),  # truncated JSON
            ("insert_fact", {"text": "Alice lives in Berlin", "source_event_id": "e9"}),  # not in the episode
            ("insert_fact", {"text": "Alice lives in Berlin"}),  # two events: source required
            ("link_fact_entity", {"fact_id": "nope", "entity_id": "nope"}),
            ("insert_causal_link", {"from_fact_id": "a", "to_fact_id": "b", "strength": "very"}),
            ("create_entity", {"name": "Acme", "type": "organization", "colour": "red"}),
            ("delete_everything", {}),
        ),
        recover,
        finish(),
    )
    outcome = write_events(stores, events, make_writer(fake, max_tool_errors=10))
    assert (outcome.status, outcome.facts) == ("ok", 1)
    errors = [r["error"] for r in seen]
    assert len(errors) == 7
    assert "not valid JSON" in errors[0]
    assert "e9" in errors[1] and "e1" in errors[1]
    assert "source_event_id" in errors[2]
    assert "unknown fact_id" in errors[3]
    assert "number" in errors[4]
    assert "colour" in errors[5]
    assert "unknown tool" in errors[6]
    assert [r[0] for r in stores.conn.execute("SELECT text FROM facts")] == ["Alice has a cat named Miso"]
    assert count(stores, "entities WHERE name = 'Acme'") == 0


def test_error_budget_ends_the_episode_without_retries(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:1])
    bad = ("link_fact_entity", {"fact_id": "x", "entity_id": "y"})
    fake.add(tool_calls(("insert_fact", {"text": "Alice works at Acme"}), bad, bad, bad), *one_fact("never"))
    outcome = write_events(stores, events, make_writer(fake, max_tool_errors=2, max_retries=2))
    assert outcome.status == "failed" and "too many tool errors" in outcome.error
    assert len(fake.requests) == 1
    assert count(stores, "facts") == 0


def test_recall_answers_or_explains(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:1])
    fake.add(tool_calls(("recall", {"query": "Alice Acme", "scope": "entities", "time_after": DAY})), finish())
    outcome = write_events(stores, events, make_writer(fake))
    assert outcome.status == "ok"
    [result] = tool_results(fake.requests[1])
    assert isinstance(result, list) or "error" in result


# -- content fallback ----------------------------------------------------------------------------
def test_tool_call_written_as_json_in_content_is_accepted(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:1])
    call = {"name": "insert_fact", "arguments": {"text": "Alice started a job at Acme", "source_event_id": "e1"}}
    fake.add(
        content(f"Sure! Here is the call:\n```json\n{json.dumps(call)}\n```"),
        content('{"name": "finish", "arguments": {"summary": "one fact"}}'),
    )
    outcome = write_events(stores, events, make_writer(fake))
    assert (outcome.status, outcome.facts) == ("ok", 1)
    follow_up = fake.requests[1]["messages"]
    assert follow_up[-1]["role"] == "user" and "fact_id" in follow_up[-1]["content"]


def test_calls_in_content_shapes() -> None:
    text = 'x {"name": "Alice"} [{"name": "finish", "arguments": "{\\"summary\\": \\"s\\"}"}] {"tool_call": ' + (
        '{"name": "recall", "parameters": {"query": "q"}}}'
    )
    calls = calls_in_content(text)
    assert [(c.name, parse_arguments(c.arguments)) for c in calls] == [
        ("finish", {"summary": "s"}),
        ("recall", {"query": "q"}),
    ]
    assert calls_in_content("no json here {broken") == []


def test_parse_arguments_is_strict() -> None:
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments("") == {}
    for bad in ('{"a": ', "[1, 2]", 'text {"a": 1}'):
        with pytest.raises(ToolError):
            parse_arguments(bad)


def test_from_settings(settings: Settings) -> None:
    from dataclasses import replace

    with pytest.raises(ValueError, match="NEXUS_LLM_BASE_URL"):
        LLMWriter.from_settings(replace(settings, llm_base_url="", llm_model=""))
    writer = LLMWriter.from_settings(
        replace(settings, llm_base_url="http://127.0.0.1:9/v1", llm_model="m", llm_timeout_s=7)
    )
    assert (writer.name, writer.mode) == ("llm:m", "auto")
    assert (writer.client.timeout_s, writer.client.openai.max_retries) == (7, 0)
    assert writer.tool_loop.budget.total_tokens == settings.llm_budget_writer
    with pytest.raises(ValueError, match="NEXUS_LLM_MODE"):
        LLMWriter.from_settings(replace(settings, llm_base_url="http://127.0.0.1:9/v1", llm_model="m", llm_mode="x"))
