"""Answer in context: a block holds an answer when every content word of it occurs there as a word; BM25
turns packed to the same budget, and the whole conversation as the ceiling."""

from __future__ import annotations

import pytest

from nexus_memory.bench.answer_context import TurnIndex, answer_words, holds, line, score_question, summarise
from nexus_memory.bench.locomo import CATEGORIES
from nexus_memory.core.tokens import estimate_tokens


def test_answer_words_drop_stopwords_and_punctuation_keep_numbers_and_months() -> None:
    assert answer_words("The sunday before 25 May, 2023") == {"sunday", "25", "may", "2023"}
    assert answer_words(2022) == {"2022"}
    assert answer_words("Psychology, counseling certification") == {"psychology", "counseling", "certification"}
    assert answer_words("to the") == frozenset()


@pytest.mark.parametrize(
    ("answer", "block", "expected"),
    [
        ("7 May 2023", "- 7 May 2023: Caroline went to the LGBTQ support group.", True),
        ("7 May 2023", "- Caroline went to the LGBTQ support group (2023-05-07)", False),  # words, not meaning
        ("Adoption agencies", "Caroline is researching adoption agencies.", True),
        ("Adoption agencies", "Caroline is researching adoption.", False),
        ("single", "Caroline is singled out.", False),  # whole words only
        ("the", "anything at all", None),  # no content word: not scored
    ],
)
def test_holds(answer: str, block: str, expected: bool | None) -> None:
    assert holds(answer, block) is expected


TURNS = [
    ("D1:1", "8 May 2023, Caroline: I went to the LGBTQ support group yesterday."),
    ("D1:2", "8 May 2023, Melanie: That sounds lovely. I painted a sunrise last year."),
    ("D1:3", "8 May 2023, Caroline: I have been researching adoption agencies for weeks now, " + "really " * 40),
    ("D2:1", "25 May 2023, Melanie: I ran a charity race for mental health on Sunday."),
]


def test_bm25_packs_the_best_turns_within_the_budget() -> None:
    index = TurnIndex(TURNS)
    assert index.ranked("When did Melanie run a charity race?")[0] == "D2:1"
    small = index.packed("adoption agencies Caroline research", 30)
    assert sum(estimate_tokens(x) + 1 for x in small.splitlines()) <= 30
    assert "adoption" not in small  # the long turn does not fit in 30 tokens
    assert "adoption agencies" in index.packed("adoption agencies Caroline research", 200)
    assert index.packed("quantum chromodynamics", 800) == ""
    assert all(text in index.whole() for _, text in TURNS)


def test_score_question_and_summary() -> None:
    index = TurnIndex(TURNS)
    question = "When did Melanie run a charity race?"
    memory = {400: "", 800: "- 25 May 2023: Melanie ran a charity race."}
    row = score_question("25 May 2023", memory, index, question)
    assert row == {"memory@400": False, "memory@800": True, "bm25@400": True, "bm25@800": True, "ceiling": True}
    assert score_question("the", memory, index, question) is None
    other = {"memory@400": False, "memory@800": False, "bm25@400": False, "bm25@800": False, "ceiling": False}
    rows = [{"category": 2, **row}, {"category": 4, **other}, {"category": 5, **row}, {"category": 2}]
    summary = summarise(rows, CATEGORIES)
    assert summary["overall"] == {
        "memory@400": 0.0, "memory@800": 0.5, "bm25@400": 0.5, "bm25@800": 0.5, "ceiling": 0.5, "n": 2
    }  # fmt: skip
    assert set(summary["per_category"]) == {"temporal", "single_hop"}
    assert summary["per_category"]["temporal"]["memory@800"] == 1.0
    assert "overall 0.50/0.50/0.50" in line(summary)
