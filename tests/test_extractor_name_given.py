"""A name given with a contracted "is" ("Her name's Coco") is a fact, as "Her name is Coco" is."""

from __future__ import annotations

import pytest

from nexus_memory.writer.extractor import extract
from nexus_memory.writer.extractor.sentences import has_verb
from tests.test_offline_extractor import event, texts


@pytest.mark.parametrize(
    ("said", "fact"),
    [
        # Three words with "name's" read as a possessive had no verb, so the sentence was a fragment and dropped.
        ("Her name's Coco.", "Caroline said her name's Coco."),
        ("His name's Max.", "Caroline said his name's Max."),
        ("Her name\u2019s Coco.", "Caroline said her name\u2019s Coco."),
        ("The dog's name's Luna.", "Caroline said the dog's name's Luna."),
        ("My brother's name is Tom.", "Caroline's brother's name is Tom."),
        ("Her name is Coco.", "Caroline said her name is Coco."),
    ],
)
def test_a_name_given_is_a_fact_with_or_without_the_contraction(said: str, fact: str) -> None:
    assert texts(extract([event(said)])) == [fact]


def test_a_name_given_after_another_sentence_is_kept_too() -> None:
    assert texts(extract([event("We got a puppy. Her name's Coco.")])) == [
        "Caroline said we got a puppy.",
        "Caroline said her name's Coco.",
    ]


@pytest.mark.parametrize(
    ("clause", "verb"), [("her name's Coco", True), ("her name Coco", False), ("Mel's cat", False)]
)
def test_only_the_name_s_is_read_as_is(clause: str, verb: bool) -> None:
    # A possessive before a noun stays verbless ("Mel's cat"): only a name is said rather than owned.
    assert has_verb(clause) is verb
