"""The noise gate of memory injection: which recalled facts are evidence for a prompt."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from nexus_memory.core import db
from nexus_memory.core.stores import Stores
from nexus_memory.identity.participant import Participant
from nexus_memory.injection import relevance
from nexus_memory.injection.relevance import PromptReading, is_evidence, store_reading
from nexus_memory.recall import keyword
from nexus_memory.recall.prompt import read_prompt
from nexus_memory.recall.results import RecallResult
from tests.test_recall import JUNE_2023, add_entity, add_fact

SARAH = "ent_sarah"


def _result(similarity: float | None, *, entities: tuple[str, ...] = (), ranks: dict | None = None) -> RecallResult:
    scores = {} if similarity is None else {"semantic": similarity}
    ranks = ranks if ranks is not None else ({"semantic": 1} if similarity is not None else {"keyword": 1})
    return RecallResult(
        "f1",
        "fact",
        "text",
        0.0,
        JUNE_2023,
        [],
        [{"id": e, "name": e, "type": "person"} for e in entities],
        ranks,
        None,
        None,
        None,
        metadata={"scores": scores},
    )


def reading_of(conn: db.Connection, prompt: str, participants: Sequence[Participant] = ()) -> PromptReading:
    """What the gate reads of `prompt`: the prompt read once, then what the store knows of it."""
    return store_reading(conn, read_prompt(conn, prompt, participants=participants))


KNOWN = PromptReading(named=frozenset({SARAH}), strangers=(), rare_terms=("pottery",))
NOTHING = PromptReading(named=frozenset(), strangers=(), rare_terms=())
STRANGERS = PromptReading(named=frozenset(), strangers=("priya",), rare_terms=("pottery",))
DAY = (JUNE_2023 - 3_600_000, JUNE_2023 + 3_600_000)


@pytest.mark.parametrize(
    ("result", "reading", "rare", "window", "expected"),
    [
        (_result(0.55), NOTHING, False, (None, None), True),  # strong on its own
        (_result(0.42), NOTHING, False, (None, None), True),  # a clear topic match
        (_result(0.33), NOTHING, False, (None, None), False),  # a vague one alone is noise
        (_result(0.33, entities=(SARAH,)), KNOWN, False, (None, None), True),  # ... unless a named entity agrees
        (_result(0.33), NOTHING, True, (None, None), True),  # ... or a rare shared word
        (
            _result(0.45, entities=("ent_maria",)),
            KNOWN,
            True,
            (None, None),
            False,
        ),  # asked about Sarah, the fact is about Maria
        (_result(0.33), KNOWN, True, (None, None), True),  # a fact linked to nobody (the user) is no one else
        (_result(0.52, entities=("ent_maria",)), KNOWN, False, (None, None), True),  # ... a strong match all the same
        (_result(0.33), NOTHING, False, DAY, True),  # ... or the time the prompt asked about
        (_result(0.25, entities=(SARAH,)), KNOWN, False, DAY, True),  # weak, but two signals agree
        (_result(0.25, entities=(SARAH,)), KNOWN, False, (None, None), False),  # ... one is not enough
        (_result(0.15, entities=(SARAH,)), KNOWN, True, DAY, False),  # too far whatever agrees
        (_result(0.55), STRANGERS, True, (None, None), False),  # about someone unknown: not even a topic
        (_result(0.62), STRANGERS, False, (None, None), True),  # ... a near-paraphrase still is
        (_result(None, ranks={"recency": 1}), NOTHING, False, DAY, True),  # "what happened yesterday?"
        (_result(None), NOTHING, False, (None, None), False),  # keyword-only, vectors elsewhere: not enough
    ],
)
def test_evidence_rule(result: RecallResult, reading: PromptReading, rare: bool, window: tuple, expected: bool) -> None:
    assert is_evidence(result, reading, rare, window=window) is expected


def test_a_block_opens_only_on_a_lead() -> None:
    """Evidence is injected only when one item is strong on the prompt's topic: its similarity plus
    WORD_WEIGHT times the share of the prompt's words (names aside) it holds reaches LEAD_SIM."""
    assert relevance.leads(_result(0.5), held=0.0)
    assert not relevance.leads(_result(0.42), held=0.0)  # a name and a vague topic: no lead
    assert relevance.leads(_result(0.42), held=0.5)  # ... half the words the prompt asks about: a lead
    assert relevance.leads(_result(None, ranks={"recency": 1}), held=0.0)


def test_without_vectors_the_lexical_signals_decide() -> None:
    keyword_only = _result(None, entities=(SARAH,))
    assert is_evidence(keyword_only, KNOWN, False, vectors=False)
    assert is_evidence(_result(None), KNOWN, True, vectors=False)
    assert not is_evidence(_result(None), NOTHING, False, vectors=False)
    assert not is_evidence(_result(None), STRANGERS, True, vectors=False)


def test_read_prompt_against_the_store(stores: Stores) -> None:
    sarah = add_entity(stores, "Sarah Connor")
    add_fact(stores, "Sarah Connor took a pottery class in Lisbon", entities=[sarah])
    for i in range(200):
        add_fact(stores, f"The user went for a walk number {i}")
    conn = stores.conn

    reading = reading_of(conn, "Did Sarah like the pottery class or the walk?")
    assert reading.named == {sarah} and reading.strangers == ()
    assert "pottery" in reading.rare_terms and "walk" not in reading.rare_terms  # in every fact: not rare

    reading = reading_of(conn, "When did Priya meet Mr. Okafor in May?")
    assert reading.named == frozenset()
    assert reading.strangers == ("priya", "okafor")  # May is a month, When starts the sentence
    assert reading.about_strangers
    # A name the store knows besides them (Lisbon is in a fact): not a prompt about strangers only.
    reading = reading_of(conn, "When did Priya visit Lisbon with Mr. Okafor?")
    assert reading.strangers == ("priya", "okafor") and reading.knows_a_name and not reading.about_strangers
    # A short form of a known name is no stranger; a common noun entity or a date names nobody.
    assert reading_of(conn, "How is Sar doing?").strangers == ()
    add_entity(stores, "pottery", type="concept")
    add_entity(stores, "May 2023", type="date")
    assert reading_of(conn, "any pottery news from May 2023?").named == frozenset()
    assert reading_of(conn, "any Pottery news?").named != frozenset()

    # A capitalised word starting a sentence says nothing; lower-case prompts name nobody.
    assert reading_of(conn, "Pottery? Tell me. Quantum physics is hard").strangers == ()
    assert reading_of(conn, "what did priya do").strangers == ()


def test_strangers_are_bounded_and_odd_text_is_safe(stores: Stores) -> None:
    prompt = "and " + " ".join(f"Name{i}x" for i in range(50))
    assert len(reading_of(stores.conn, prompt).strangers) == relevance.MAX_STRANGERS
    for odd in ("", '\ud800 NEAR( "* 🙂', "O'Brien's", "x" * 10_000, 'say "AND" OR NOT Zed*'):
        reading_of(stores.conn, odd)


def test_a_name_its_facts_hold_needs_a_lead_too(stores: Stores) -> None:
    """A capitalised word the store's facts hold, though no entity, makes a prompt about someone known:
    vague topic matches alone inject nothing; a prompt naming nothing is spared the lead rule."""
    add_fact(stores, "Tim lent the user a ladder")
    vague = [_result(0.42), _result(0.41)]
    about_tim = read_prompt(stores.conn, "What soup did Tim make last week?")
    assert relevance.evidence(stores.conn, about_tim, vague) == []
    lead = _result(0.55)
    assert relevance.evidence(stores.conn, about_tim, [*vague, lead]) == [*vague, lead]
    assert relevance.evidence(stores.conn, read_prompt(stores.conn, "what soup could I make tonight?"), vague) == vague


def test_fact_texts_hold_what_a_match_on_the_store_finds(stores: Stores) -> None:
    """FactTexts answers from the recalled texts what a MATCH over facts_fts answers: the same tokenizer
    (stems: 'running' holds 'runs'), whole words only, an OR of terms; and it tells two sets of texts apart."""
    texts = {
        add_fact(stores, text): text
        for text in (
            "Sarah went running by the lake",
            "The user's café serves soups",
            "Tim lent the user a ladder",
            "Nothing about that here",
        )
    }
    terms = [["runs"], ["cafe"], ["soup", "ladder"], ["lad"], ["lake", "user"], ["zebra"], [], ["'\"NEAR("]]
    held = relevance.FactTexts(texts)
    for group in terms:
        expression = keyword.match_expression(group)
        by_store = (
            set()
            if expression is None
            else {
                r[0]
                for r in stores.conn.execute(
                    "SELECT f.id FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid WHERE facts_fts MATCH ?",
                    [expression],
                )
            }
        )
        assert held.holding(group) == by_store, group
    sarah = next(i for i, t in texts.items() if t.startswith("Sarah"))
    assert held.holding(["runs"]) == {sarah}
    other = relevance.FactTexts({"x": "a ladder"})
    assert other.holding(["ladder"]) == {"x"}
    assert held.holding(["ladder"], among=[sarah]) == set()  # refilled with its own texts, and `among` kept
    assert len(held.holding(["ladder"])) == 1
