"""The context block's facts: one recall per block, day headings instead of a date per line, and the time a
fact is about deciding whether it is about the time the prompt asks about."""

from __future__ import annotations

from typing import Any

import pytest

from nexus_memory.core.stores import Stores
from nexus_memory.injection import pack as pack_module
from nexus_memory.injection.context import get_context
from nexus_memory.injection.pack import Recalled, pack
from nexus_memory.injection.relevance import PromptReading, is_evidence
from nexus_memory.recall.results import RecallResult
from tests.test_recall import DAY, JUNE_2023, MAY_2023, FakeEmbedder, add_fact, add_mental_model, embed_all


def _result(fact_id: str, text: str, as_of: int | None = None, similarity: float = 0.6) -> RecallResult:
    return RecallResult(
        fact_id, "fact", text, 0.0, as_of, [f"ev-{fact_id}"], [], {"semantic": 1}, None, None, None,
        metadata={"scores": {"semantic": similarity}},
    )  # fmt: skip


def test_facts_are_shown_under_the_day_they_were_said(stores: Stores) -> None:
    add_fact(stores, "Sarah bought pottery clay in Lisbon", as_of=JUNE_2023, session_id="old")
    add_fact(stores, "Sarah took a pottery class in Porto", as_of=MAY_2023, session_id="old")
    add_fact(stores, "Sarah glazed the pottery bowl in Porto", as_of=MAY_2023 + 60_000, session_id="old")
    embed_all(stores, FakeEmbedder())
    block = get_context(stores, "Sarah pottery Porto Lisbon", session_id="now", embedder=FakeEmbedder(), strict=True)
    lines = block.splitlines()
    assert lines[0] == "## Relevant memory"
    # Each day once, as a heading, in the order said; the lines under it carry no date of their own.
    assert [line for line in lines if line.startswith("### ")] == ["### 10 May 2023", "### 20 June 2023"]
    may, june = lines.index("### 10 May 2023"), lines.index("### 20 June 2023")
    assert set(lines[may + 1 : june]) == {
        "- Sarah took a pottery class in Porto",
        "- Sarah glazed the pottery bowl in Porto",
    }
    assert lines[june + 1] == "- Sarah bought pottery clay in Lisbon"


def test_the_budget_pays_for_a_day_heading_once(stores: Stores) -> None:
    same_day = [_result(f"f{i}", f"Alice Chen ran {i + 10} km at dawn", MAY_2023 + i) for i in range(4)]
    items = pack(stores, "How far does Alice run?", Recalled([], same_day), max_tokens=800)
    assert [item.title for item in items] == ["10 May 2023", "", "", ""]
    spent = sum(item.tokens + (1 if item.title else 0) for item in items)
    assert spent <= 800
    # A budget that holds the heading and one line holds no second heading's worth of lines.
    tight = pack(stores, "How far does Alice run?", Recalled([], same_day), max_tokens=items[0].tokens + 1)
    assert [item.id for item in tight] == ["f0"]


NOTHING = PromptReading(named=frozenset(), strangers=(), rare_terms=())
JUNE = (JUNE_2023 - 5 * DAY, JUNE_2023 + 5 * DAY)


@pytest.mark.parametrize(
    ("said", "about", "expected"),
    [
        (MAY_2023, (JUNE_2023, JUNE_2023 + DAY), True),  # said in May about a day in June: about June
        (JUNE_2023, (MAY_2023, MAY_2023 + DAY), False),  # said in June about May: not about June
        (JUNE_2023, None, True),  # names no time: the day it was said stands in
        (MAY_2023, (MAY_2023, JUNE_2023), True),  # a span reaching into June
    ],
)
def test_the_time_a_fact_is_about_decides_the_window(said: int, about: tuple[int, int] | None, expected: bool) -> None:
    weak = RecallResult(
        "f1", "fact", "text", 0.0, said, [], [], {"semantic": 1}, None, None, None,
        metadata={"scores": {"semantic": 0.33}},
    )  # fmt: skip
    assert is_evidence(weak, NOTHING, False, window=JUNE, about_time=about) is expected


def test_one_recall_per_block(stores: Stores, monkeypatch: pytest.MonkeyPatch) -> None:
    """Models, observations and facts come from one recall (one embedding, one search, one fusion)."""
    add_mental_model(stores, "Sarah", "Sarah plans a pottery party every year")
    add_fact(stores, "Sarah took a pottery class in Porto", session_id="old")
    embed_all(stores, FakeEmbedder())
    calls: list[Any] = []
    real = pack_module.recall

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs.get("scope"))
        return real(*args, **kwargs)

    monkeypatch.setattr(pack_module, "recall", counted)
    block = get_context(stores, "Sarah pottery party", embedder=FakeEmbedder(), strict=True)
    assert calls == [["mental_models", "observations", "facts"]]
    assert "pottery class in Porto" in block
