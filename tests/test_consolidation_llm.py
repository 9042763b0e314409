"""The LLM consolidator against the scripted loopback server: valid, malformed, refused and timed-out
answers; failures leave nothing half-written and are rerun."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from nexus_memory.core.stores import Stores
from nexus_memory.llm.client import Budget, LLMClient, LLMError, Usage
from nexus_memory.observations import consolidate
from nexus_memory.observations.llm import LLMConsolidator
from tests.fake_openai import FakeOpenAI, content, http_error, sleep
from tests.memory_builders import count, current_observations, embed, fact, person

FIRST = "Alice Chen is training for the Berlin marathon in September."
SECOND = "Alice Chen ran 30 km on Sunday for her Berlin marathon training."
THIRD = "Alice Chen finished the Berlin marathon in 3 hours 50 minutes."


def answer(*actions: dict, usage: tuple[int, int] = (200, 40)) -> object:
    return content(json.dumps({"actions": list(actions)}), usage)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def two_facts(stores: Stores) -> tuple[str, str]:
    alice = person(stores, "Alice Chen")
    first = fact(stores, FIRST, "2023-05-02", alice)
    second = fact(stores, SECOND, "2023-06-04", alice)
    embed(stores)
    return first, second


def llm(server: FakeOpenAI, *, timeout_s: float = 5, max_retries: int = 2) -> LLMConsolidator:
    return LLMConsolidator(LLMClient(server.base_url, "fake-model", timeout_s=timeout_s), max_retries=max_retries)


CREATE = {
    "action": "create",
    "topic": "marathon",
    "text": "Alice Chen is training for the Berlin marathon (September 2023); ran 30 km on 4 June 2023.",
    "fact_refs": ["f1"],
    "reason": "two facts about her marathon training",
}


def test_valid_answers_create_then_update(stores: Stores, two_facts: tuple[str, str], server: FakeOpenAI) -> None:
    server.add(answer(CREATE))
    report = consolidate(stores, llm(server))
    # The first fact had nothing related (no call); the second was shown the first as f1.
    assert len(server.requests) == 1
    request = server.requests[0]
    assert request["response_format"]["type"] == "json_schema"
    assert "[f1]" in request["messages"][1]["content"] and FIRST in request["messages"][1]["content"]
    assert (report.observations_created, report.prompt_tokens, report.completion_tokens) == (1, 200, 40)
    [obs] = current_observations(stores)
    assert obs["output_text"] == CREATE["text"] and obs["fact_ids"] == set(two_facts)

    alice = obs["entity_id"]
    third = fact(stores, THIRD, "2023-09-24", alice)
    embed(stores)
    server.add(
        answer(
            {
                "action": "update",
                "observation": "o1",
                "text": "Alice Chen ran the Berlin marathon on 24 September 2023 in 3:50 after training since May.",
                "reason": "it happened",
            }
        )
    )
    report = consolidate(stores, llm(server))
    assert report.observations_versioned == 1
    [v2] = current_observations(stores)
    assert v2["parent_id"] == obs["id"] and "3:50" in v2["output_text"] and v2["fact_ids"] == {*two_facts, third}
    assert "[o1] " + CREATE["text"] in server.requests[1]["messages"][1]["content"]


def test_a_create_that_copies_an_observation_updates_it(
    stores: Stores, two_facts: tuple[str, str], server: FakeOpenAI
) -> None:
    server.add(answer(CREATE))
    consolidate(stores, llm(server))
    third = fact(stores, THIRD, "2023-09-24", current_observations(stores)[0]["entity_id"])
    embed(stores)
    server.add(answer({**CREATE, "fact_refs": []}))  # the same text again
    report = consolidate(stores, llm(server))
    assert report.observations_created == 0 and report.observations_versioned == 1
    [obs] = current_observations(stores)
    assert third in obs["fact_ids"]


def test_malformed_output_is_retried_with_the_reason(
    stores: Stores, two_facts: tuple[str, str], server: FakeOpenAI
) -> None:
    server.add(
        content("Sure! Here are the actions: create one."), answer({**CREATE, "fact_refs": ["f9"]}), answer(CREATE)
    )
    report = consolidate(stores, llm(server, max_retries=2))
    assert report.failed == 0 and report.observations_created == 1
    assert len(server.requests) == 3
    assert "not valid JSON" in server.requests[1]["messages"][-1]["content"]  # told what was wrong
    assert "f9" in server.requests[2]["messages"][-1]["content"]
    assert report.prompt_tokens == 100 + 200 + 200


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(lambda: content("not json at all"), id="malformed"),
        pytest.param(lambda: content(json.dumps({"actions": [{"action": "create"}]})), id="schema"),
        pytest.param(lambda: content("", refusal="I can't help with that."), id="refused"),
        pytest.param(lambda: sleep(3, content(json.dumps({"actions": []}))), id="timed_out"),
        pytest.param(lambda: http_error(500), id="server_error"),
    ],
)
def test_failures_write_nothing_and_are_rerun(
    stores: Stores, two_facts: tuple[str, str], server: FakeOpenAI, bad
) -> None:
    second = two_facts[1]
    server.add(bad(), bad())
    report = consolidate(stores, llm(server, max_retries=1, timeout_s=1))
    assert report.failed == 1 and report.failures[0]["fact_id"] == second
    assert "gave up" in report.failures[0]["error"] and "after 2 attempt(s)" in report.failures[0]["error"]
    # Nothing half-written: no observation, no episode, the fact still pending, the reason on record.
    assert count(stores, "analysis_runs") == count(stores, "episodes") == count(stores, "observation_facts") == 0
    assert [r[0] for r in stores.conn.execute("SELECT id FROM facts WHERE is_consolidated = 0")] == [second]
    error = stores.conn.execute("SELECT error FROM fact_consolidation_failures WHERE fact_id = ?", (second,)).fetchone()
    assert error is not None and error[0] == report.failures[0]["error"]
    # Rerun with a working model: the failed fact is done and its failure cleared.
    server.add(answer(CREATE))
    again = consolidate(stores, llm(server))
    assert again.facts_seen == 1 and again.observations_created == 1 and again.failed == 0
    assert count(stores, "fact_consolidation_failures") == 0


def test_a_fatal_api_error_is_not_retried(stores: Stores, two_facts: tuple[str, str], server: FakeOpenAI) -> None:
    server.add(http_error(401, "bad key"), answer(CREATE))
    report = consolidate(stores, llm(server, max_retries=2))
    assert report.failed == 1 and len(server.requests) == 1 and "401" in report.failures[0]["error"]


def test_an_empty_answer_isolates_the_fact(stores: Stores, two_facts: tuple[str, str], server: FakeOpenAI) -> None:
    server.add(answer())
    report = consolidate(stores, llm(server))
    assert (
        report.isolated == 2
        and count(stores, "analysis_runs") == 0
        and count(stores, "facts", "is_consolidated = 0") == 0
    )


def test_a_json_document_in_a_code_fence_is_read(server: FakeOpenAI) -> None:
    client = LLMClient(server.base_url, "m", timeout_s=5)
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    server.add(content('```json\n{"ok": true}\n```'), content('{"ok": "yes"}'))
    ask = [{"role": "user", "content": "?"}]
    assert client.structured_call(schema, ask, Budget(), Usage(), name="t", retries=0).data == {"ok": True}
    with pytest.raises(LLMError, match="must be a boolean"):
        client.structured_call(schema, ask, Budget(), Usage(), name="t", retries=0)
