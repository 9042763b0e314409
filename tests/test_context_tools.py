"""get_context (memory injection) and the agent tools: schemas, validation, dispatch, write tools."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from openai.types.chat import ChatCompletionFunctionTool
from openai.types.shared import FunctionDefinition

from nexus_memory.agents.tools import TOOLS, call_tool, tool_schemas
from nexus_memory.core.json_schema import validate
from nexus_memory.core.stores import Stores
from nexus_memory.identity import store as identity
from nexus_memory.identity.participant import Participant
from nexus_memory.injection.context import get_context
from nexus_memory.recall import keyword, query_entities
from tests.test_recall import (
    JUNE_2023,
    MAY_2023,
    FakeEmbedder,
    access_count,
    add_entity,
    add_fact,
    add_mental_model,
    embed_all,
)

# --- get_context -------------------------------------------------------------------------------


@pytest.fixture
def memory(stores: Stores) -> dict[str, str]:
    sarah = add_entity(stores, "Sarah")
    m = {
        "sarah": sarah,
        "birthday": add_fact(stores, "Sarah's birthday is on the fourth of July", entities=[sarah], session_id="old"),
        "allergy": add_fact(stores, "The user is allergic to peanuts", session_id="old", as_of=JUNE_2023),
        "current": add_fact(stores, "The user is planning a peanut-free birthday cake", session_id="now"),
    }
    embed_all(stores, FakeEmbedder())
    return m


def test_context_block_with_dates_and_reflection(stores: Stores, memory: dict[str, str]) -> None:
    add_mental_model(stores, "weekly", "old reflection", subtype="reflection", updated_at=MAY_2023)
    first = add_mental_model(
        stores, "weekly", "The user cares about food safety", subtype="reflection", updated_at=JUNE_2023
    )
    add_mental_model(
        stores,
        "weekly",
        "The user cares about food safety and family",
        subtype="reflection",
        parent_id=first,
        updated_at=JUNE_2023 + 1,
    )
    block = get_context(stores, "Sarah birthday peanuts?", session_id="now", embedder=FakeEmbedder(), strict=True)
    assert block.startswith("## Relevant memory\n")
    # Facts under the day they were said, in that order.
    assert "### 10 May 2023\n- Sarah's birthday is on the fourth of July\n" in block
    assert "### 20 June 2023\n- The user is allergic to peanuts\n" in block
    assert block.index("10 May 2023") < block.index("20 June 2023")
    assert "peanut-free" not in block  # the current session's own facts are not injected
    assert block.endswith("## Weekly insight\nThe user cares about food safety and family\n")


def test_context_is_empty_for_noise(stores: Stores, memory: dict[str, str]) -> None:
    add_mental_model(stores, "weekly", "A reflection", subtype="reflection")
    fake = FakeEmbedder()
    assert get_context(stores, "hello, how are you?", session_id="now", embedder=fake, strict=True) == ""
    assert get_context(stores, "quantum chromodynamics lecture", session_id="now", embedder=fake, strict=True) == ""
    assert get_context(stores, "", embedder=fake, strict=True) == ""
    assert get_context(stores, '\ud800 NEAR( "* 🙂', embedder=fake, strict=True) == ""


def test_context_counts_injection_as_access_and_limits(stores: Stores, memory: dict[str, str]) -> None:
    block = get_context(
        stores, "Sarah birthday peanuts", session_id="now", max_facts=1, embedder=FakeEmbedder(), strict=True
    )
    assert block.count("\n- ") == 1
    assert access_count(stores, "facts", memory["birthday"]) + access_count(stores, "facts", memory["allergy"]) == 1


def _count_texts(monkeypatch: pytest.MonkeyPatch, function: Callable[..., Any], text_at: int) -> Counter[str]:
    """Count the calls of `function` by the text they read, through every module that holds it.

    The packer's topic words (`observations.topics.content_words`: date notes left out, as the fact
    lines it compares them with are read) are a reading of their own, so that module is left alone."""
    calls: Counter[str] = Counter()

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[args[text_at]] += 1
        return function(*args, **kwargs)

    for name, module in list(sys.modules.items()):
        if name.startswith("nexus_memory.") and name != "nexus_memory.observations.topics":
            for attribute, value in list(vars(module).items()):
                if value is function:
                    monkeypatch.setattr(module, attribute, counted)
    return calls


@pytest.mark.parametrize(
    ("prompt", "texts"),
    [
        ("When is Sarah's birthday party?", ["When is Sarah's birthday party?"]),
        # With a date, recall searches the prompt without it and the gate weighs it whole: two texts.
        (
            "What was Sarah's birthday plan in May 2023?",
            ["What was Sarah's birthday plan?", "What was Sarah's birthday plan in May 2023?"],
        ),
    ],
)
@pytest.mark.parametrize("participants", [(), (Participant("chat", "u1", "Sarah"),)])
def test_one_get_context_reads_the_prompt_once(
    stores: Stores,
    memory: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    prompt: str,
    texts: list[str],
    participants: tuple[Participant, ...],
) -> None:
    """Recall (one call for every layer), the noise gate and the packer share one reading:
    the prompt is tokenised and matched against entity names once, and so is each name in it."""
    add_mental_model(stores, "Sarah", "Sarah plans a birthday party every year")
    embed_all(stores, FakeEmbedder())
    terms = _count_texts(monkeypatch, keyword.extract_terms, 0)
    names = _count_texts(monkeypatch, query_entities.match_query_entities, 1)
    get_context(stores, prompt, embedder=FakeEmbedder(), strict=True, participants=participants)
    assert {text: terms[text] for text in texts} == dict.fromkeys(texts, 1)
    assert {text: names[text] for text in texts} == dict.fromkeys(texts, 1)
    assert max(names.values()) == 1  # each capitalised run ("When", "Sarah's", "Sarah") once too


def test_context_stays_silent_on_a_prompt_about_strangers(stores: Stores, memory: dict[str, str]) -> None:
    fake = FakeEmbedder()
    # "birthday" is shared, but nobody called Priya is known: another person's birthday is noise.
    assert get_context(stores, "When is Priya's birthday party?", session_id="now", embedder=fake, strict=True) == ""
    assert "fourth of July" in get_context(stores, "When is Sarah's birthday party?", embedder=fake, strict=True)


def test_context_with_the_real_model(stores: Stores, memory: dict[str, str]) -> None:
    from nexus_memory.embeddings import model, step

    embedder = model.get_embedder()  # the bundled model is a dependency: missing it is a failure
    stores.conn.execute("DELETE FROM embeddings")
    step.rebuild_index(stores, embedder.model_name, embedder.dimension)
    step.embed_pending(stores, embedder)
    assert "allergic to peanuts" in get_context(
        stores, "Can I offer nut snacks to my guest?", session_id="now", strict=True
    )
    assert get_context(stores, "hello there, how are you doing?", session_id="now", strict=True) == ""


# --- tool schemas ------------------------------------------------------------------------------


def test_schemas_are_valid_openai_tools() -> None:
    names = [t["function"]["name"] for t in TOOLS]
    assert names == [
        "recall",
        "search_memory",
        "get_context",
        "record_events",
        "remember_fact",
        "correct_fact",
        "confirm_fact",
        "forget",
        "memory_stats",
        "get_entity_info",
        "list_observations",
        "show_observation",
        "list_mental_models",
        "show_mental_model",
        "create_mental_model",
        "refresh_mental_model",
    ]
    for tool in TOOLS:
        parsed = ChatCompletionFunctionTool.model_validate(tool)
        assert parsed.type == "function"
        FunctionDefinition.model_validate(tool["function"])
        params = tool["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params["required"]) <= set(params["properties"])
        json.dumps(tool)
    assert [t["function"]["name"] for t in tool_schemas(["recall"])] == ["recall"]


def test_validation_errors_are_clear() -> None:
    schema = TOOLS[0]["function"]["parameters"]
    assert validate(schema, {"query": "x"}) == []
    assert validate(schema, {}) == ["missing required argument 'query'"]
    assert validate(schema, {"query": 3}) == ["query must be a string, got int"]
    assert validate(schema, {"query": "x", "max_results": True}) == ["max_results must be an integer, got bool"]
    assert validate(schema, {"query": "x", "max_results": 0}) == ["max_results must be >= 1"]
    assert validate(schema, {"query": "x", "budget": "huge"})[0].startswith("budget must be one of")
    assert validate(schema, {"query": "x", "scope": ["facts", "gossip"]})[0].startswith("scope[1] must be one of")
    assert validate(schema, {"query": "x", "bogus": 1})[0].startswith("unknown argument 'bogus'")
    assert validate(schema, []) == ["arguments must be an object, got list"]


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("nope", {}, "unknown tool"),
        ("recall", "{not json", "not valid JSON"),
        ("recall", "[1, 2]", "must be an object"),
        ("recall", {"query": None}, "query must be a string"),
        ("remember_fact", {"text": "   "}, "text must not be empty"),
        ("correct_fact", {"fact_id": "missing", "new_text": "x"}, "no fact with id"),
        ("confirm_fact", {"fact_id": "missing"}, "no fact with id"),
        ("get_entity_info", {"entity": "Nobody"}, "no entity named"),
        ("memory_stats", {"extra": 1}, "unknown argument"),
    ],
)
def test_call_tool_returns_errors_instead_of_raising(
    stores: Stores, name: str, arguments: object, message: str
) -> None:
    result = call_tool(stores, name, arguments)  # type: ignore[arg-type]
    assert message in result["error"]


def test_internal_errors_become_error_results(stores: Stores, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("nexus_memory.agents.tools.search.recall", broken)
    result = call_tool(stores, "search_memory", {"query": "anything at all"})
    assert result == {"error": "internal error in search_memory: RuntimeError: disk on fire"}
    monkeypatch.setattr("nexus_memory.injection.pack.recall", broken)
    assert get_context(stores, "anything") == ""  # an agent hook: a failure injects nothing
    with pytest.raises(RuntimeError, match="disk on fire"):
        get_context(stores, "anything", strict=True)


# --- tools at work -----------------------------------------------------------------------------


def test_recall_and_search_memory_tools(stores: Stores, memory: dict[str, str]) -> None:
    fake = FakeEmbedder()
    found = call_tool(stores, "search_memory", json.dumps({"query": "peanuts allergy", "limit": 1}), embedder=fake)
    assert [r["id"] for r in found["results"]] == [memory["allergy"]]
    assert found["results"][0]["date"] == "2023-06-20"
    full = call_tool(
        stores, "recall", {"query": "Sarah", "entity": "Sarah", "budget": "high", "max_results": 3}, embedder=fake
    )
    assert {r["id"] for r in full["results"]} == {memory["birthday"]}
    assert full["results"][0]["entities"] == ["Sarah"]
    json.dumps(full)


def test_remember_correct_confirm_cycle(stores: Stores, memory: dict[str, str]) -> None:
    remembered = call_tool(
        stores, "remember_fact", {"text": "Sarah moved to Lisbon", "entities": ["Lisbon"]}, session_id="now"
    )
    assert remembered["entities"] == ["Lisbon", "Sarah"]
    assert identity.find_entities(stores.conn, "lisbon")[0].source == "user"
    row = stores.conn.execute(
        "SELECT platform, session_id, metadata FROM facts WHERE id = ?", (remembered["fact_id"],)
    ).fetchone()
    assert (row[0], row[1], json.loads(row[2])) == ("memory_tool", "now", {"source": "user"})
    assert [r["id"] for r in call_tool(stores, "search_memory", {"query": "Lisbon"})["results"]] == [
        remembered["fact_id"]
    ]

    corrected = call_tool(
        stores,
        "correct_fact",
        {"fact_id": remembered["fact_id"], "new_text": "Sarah moved to Porto", "reason": "misheard"},
    )
    assert corrected["supersedes"] == remembered["fact_id"]
    assert corrected["entities"] == ["Sarah", "Lisbon"]  # the old fact's links are carried over
    texts = [r["text"] for r in call_tool(stores, "search_memory", {"query": "Sarah moved", "limit": 10})["results"]]
    assert "Sarah moved to Porto" in texts and "Sarah moved to Lisbon" not in texts
    again = call_tool(stores, "correct_fact", {"fact_id": remembered["fact_id"], "new_text": "Faro"})
    assert "already corrected" in again["error"]

    confirmed = call_tool(stores, "confirm_fact", {"fact_id": corrected["fact_id"]})
    assert confirmed["confirmed"] is True and (confirmed["confidence"], confirmed["decay_rate"]) == (1.0, 0.0)
    assert "already corrected" in call_tool(stores, "confirm_fact", {"fact_id": remembered["fact_id"]})["error"]


def test_stats_and_entity_info(stores: Stores, memory: dict[str, str]) -> None:
    stats = call_tool(stores, "memory_stats", None)
    assert stats["counts"]["facts"] == 3
    assert stats["latest_fact_date"] == "2023-06-20"
    sal = add_entity(stores, "Sal")
    add_fact(stores, "Sal plays the cello", entities=[sal], as_of=JUNE_2023 + 5)
    identity.merge_entities(stores.conn, memory["sarah"], sal)
    identity.add_alias(stores.conn, memory["sarah"], "Sare", "nickname")
    info = call_tool(stores, "get_entity_info", {"entity": "sare", "limit": 5})
    assert info["entity"]["id"] == memory["sarah"]
    assert {a["alias"] for a in info["aliases"]} >= {"Sal", "Sare"}
    assert info["merged"] == [{"id": sal, "name": "Sal", "type": "person"}]
    assert [f["text"] for f in info["facts"]] == ["Sal plays the cello", "Sarah's birthday is on the fourth of July"]
