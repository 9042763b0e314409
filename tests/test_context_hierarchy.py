"""The read path over layers 5 and 6: recall(scope=...) finds observations and mental models and says which
are stale, the tags filter scopes mental models, get_context packs the hierarchy within a token budget."""

from __future__ import annotations

import pytest

from nexus_memory.agents.tools import call_tool
from nexus_memory.core.stores import Stores
from nexus_memory.core.tokens import estimate_tokens
from nexus_memory.embeddings.model import get_embedder
from nexus_memory.embeddings.step import embed_pending
from nexus_memory.injection.context import get_context
from nexus_memory.injection.pack import build_context
from nexus_memory.mental_models import create_model
from nexus_memory.observations import consolidate
from nexus_memory.recall import recall
from tests.memory_builders import embed, fact, person

MARATHON = [
    ("Alice Chen is training for the Berlin marathon in September.", "2023-05-02"),
    ("Alice Chen ran 30 km on Sunday for her Berlin marathon training.", "2023-06-04"),
    ("Alice Chen bought new running shoes for the Berlin marathon.", "2023-06-10"),
]


@pytest.fixture
def alice(stores: Stores) -> str:
    alice = person(stores, "Alice Chen")
    for text, day in MARATHON:
        fact(stores, text, day, alice)
    fact(stores, "Alice Chen adopted a cat named Luna.", "2023-06-05", alice)
    embed(stores)
    consolidate(stores)
    return alice


def _models(stores: Stores) -> None:
    create_model(stores, "Alice's running", "How is Alice's marathon training going?", tags=["family"])
    create_model(stores, "Alice's running plan", "What is Alice's marathon plan?")
    embed_pending(stores, get_embedder(), target_types=("mental_model",))


def _moves(stores: Stores, alice: str) -> None:
    fact(stores, "Alice Chen lives in Boston with her sister.", "2023-05-02", alice)
    fact(stores, "Alice Chen moved to Denver for a new job at Acme.", "2023-07-14", alice)
    embed(stores)
    consolidate(stores)
    create_model(stores, "Alice's home", "Where does Alice live?", tags=["family"])
    create_model(stores, "Alice's whereabouts", "Where does Alice live now?")
    embed_pending(stores, get_embedder(), target_types=("mental_model",))


def test_recall_searches_observations_and_says_which_are_stale(stores: Stores, alice: str) -> None:
    [obs] = recall(stores, "How is the marathon training going?", scope=("observations",), touch=False).results
    assert obs.type == "observation" and not obs.is_stale
    assert len(obs.source_event_ids) == 3 and len(obs.metadata["fact_ids"]) == 3  # provenance to events
    fact(stores, "Alice Chen finished the Berlin marathon in 3 hours 50 minutes.", "2023-09-24", alice)
    [stale] = recall(stores, "How is the marathon training going?", scope=("observations",), touch=False).results
    assert stale.id == obs.id and stale.is_stale
    found = call_tool(stores, "recall", {"query": "marathon training", "scope": ["observations"]})
    assert found["results"][0]["stale"] is True


def test_tags_scope_mental_models(stores: Stores, alice: str) -> None:
    _models(stores)

    def names(tags: list[str] | None) -> set[str]:
        results = recall(stores, "marathon", scope=("mental_models",), tags=tags, touch=False).results
        return {r.metadata["name"] for r in results}

    assert names(None) == {"Alice's running", "Alice's running plan"}
    assert names(["family"]) == {"Alice's running", "Alice's running plan"}  # untagged ones are for everyone
    assert names(["work"]) == {"Alice's running plan"}
    assert names([]) == {"Alice's running plan"}
    tool = call_tool(stores, "recall", {"query": "marathon", "scope": ["mental_models"], "tags": ["work"]})
    assert [r["text"].split(":")[0] for r in tool["results"]] == ["Alice's running plan"]


def test_get_context_packs_the_hierarchy_within_the_budget(stores: Stores, alice: str) -> None:
    prompt = "How is Alice's marathon training going?"
    block = get_context(stores, prompt, max_tokens=400)
    assert block.startswith("## Observations\n### Alice Chen — ")
    assert "- 4 June 2023: ran 30 km on Sunday" in block  # a dated line under its header, subject not repeated
    assert block.count("ran 30 km") == 1  # shown in the observation, not repeated among the facts
    assert estimate_tokens(block) <= 400


@pytest.mark.parametrize("budget", [40, 80, 120, 200, 300])
def test_the_block_as_written_fits_its_budget(stores: Stores, alice: str, budget: int) -> None:
    """Section and day headings, titles and newlines are paid from the budget, not added on top of it."""
    _moves(stores, alice)
    for prompt in ("Where does Alice live now?", "How is Alice's marathon training going?", "Alice marathon"):
        block = get_context(stores, prompt, max_tokens=budget)
        assert estimate_tokens(block) <= budget, block


def test_get_context_puts_mental_models_first_and_honours_tags(stores: Stores, alice: str) -> None:
    _moves(stores, alice)
    block = get_context(stores, "Where does Alice live now?", max_tokens=800, tags=["work"])
    assert block.startswith("## Mental models\n### Alice's whereabouts\n")
    assert "Alice Chen used to live in Boston until May 2023; since July 2023 Alice Chen lives in Denver." in block
    assert "### Alice's home" not in block  # tagged for family only: not for this caller
    assert block.index("## Mental models") < block.index("## Observations")


def test_a_stale_observation_is_followed_by_its_newer_facts(stores: Stores, alice: str) -> None:
    fact(stores, "Alice Chen finished the Berlin marathon in 3 hours 50 minutes.", "2023-09-24", alice)
    embed(stores)  # embedded, not consolidated yet
    items = build_context(stores, "How did Alice's Berlin marathon go?", max_tokens=600)
    [obs] = [i for i in items if i.type == "observation"]
    assert obs.is_stale and "(stale: newer facts follow)" in obs.title
    assert any(line.startswith("- newer, not consolidated yet: 24 September 2023") for line in obs.lines)
    assert obs.source_event_ids and len(obs.fact_ids) == 4


def test_facts_only_and_a_small_budget(stores: Stores, alice: str) -> None:
    items = build_context(stores, "Alice marathon", max_tokens=60, layers=("fact",))
    assert items and all(i.type == "fact" for i in items)
    assert sum(i.tokens for i in items) <= 60
    tiny = build_context(stores, "How is Alice's marathon training going?", max_tokens=40)
    assert sum(i.tokens for i in tiny) <= 40


def test_under_a_fact_cap_each_slot_shows_another_turn(stores: Stores) -> None:
    """Two facts of one source turn take one slot of max_facts: the next slot goes to another turn."""
    from nexus_memory.injection.pack import Recalled, pack
    from nexus_memory.recall.results import RecallResult

    def result(fact_id: str, event: str, text: str) -> RecallResult:
        return RecallResult(
            fact_id, "fact", text, 0.0, None, [event], [], {"semantic": 1}, None, None, None,
            metadata={"scores": {"semantic": 0.6}},
        )  # fmt: skip

    recalled = Recalled(
        [],
        [
            result("f1", "e1", "Alice Chen runs at dawn."),
            result("f2", "e1", "Alice Chen runs along the river."),
            result("f3", "e2", "Alice Chen ran 30 km on Sunday."),
        ],
    )
    capped = pack(stores, "How does Alice run?", recalled, max_tokens=800, max_facts=2)
    assert [item.id for item in capped] == ["f1", "f3"]
    uncapped = pack(stores, "How does Alice run?", recalled, max_tokens=800)
    assert [item.id for item in uncapped] == ["f1", "f2", "f3"]
