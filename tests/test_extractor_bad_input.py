"""The offline writer on bad input of every kind: it raises nothing, makes no fact from nothing, and its patterns
stay linear on long adversarial text (each case below would take minutes with a backtracking or re-reading
pattern; none asserts a time)."""

from __future__ import annotations

import re

import pytest

from nexus_memory.core.calendar_words import MONTHS, WEEKDAYS
from nexus_memory.core.words import word_set
from nexus_memory.events.ledger import Event
from nexus_memory.writer.extractor import extract, find_entities
from nexus_memory.writer.extractor import remarks as remark_rules
from nexus_memory.writer.extractor import sentences as sentence_rules

MAY_8 = 1683554160000  # 2023-05-08 13:56 UTC
WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
# Words the writer itself writes around what was said: attribution, a kept answer with its question, a shared
# photo, agreement of a verb with the name put for "I"/"you", and the dates it resolves.
WRITER_WORDS = (
    word_set(
        """said asked answered yes no shared a photo of is was has does doesn't isn't wasn't hasn't the on from to
    weekend week month year day s themself"""
    )
    | set(MONTHS)
    | set(WEEKDAYS)
)
CAROLINE, MELANIE, JON = "Caroline", "Melanie", "Jon"


def chat(content: str, sender: str = CAROLINE, peer: str | None = MELANIE, *, at: int = 0, **kw: str) -> Event:
    return Event(
        id=f"e{at}",
        platform="test",
        sender_id=sender,
        content=content,
        as_of=MAY_8 + at * 60_000,
        peer_id=peer,
        peer_kind="dm" if peer else "group",
        **kw,
    )


def invented(facts: list[str], said: list[str]) -> list[str]:
    """The words of the facts that nobody said and the writer does not write: a verb's -s, -es or -ed ending
    put for agreement, and a contraction undone ('I'm' -> 'is'), are the said word."""
    heard = {w.lower() for text in said for w in WORD.findall(text)} | {w.lower() for w in (CAROLINE, MELANIE, JON)}
    out = []
    for fact in facts:
        for word in WORD.findall(re.sub(r"\([^)]*\)", " ", fact)):
            low = word.lower()
            stems = {low, low.removesuffix("s"), low.removesuffix("es"), low.removesuffix("ies") + "y"}
            if not stems & (heard | WRITER_WORDS):
                out.append(word)
    return out


def facts_of(*messages: Event) -> list[str]:
    return [fact.text for fact in extract(list(messages)).facts]


# Messages with nothing to keep: no fact may come of them.
NOTHING = [
    "",
    "   ",
    "\n\n\t \n",
    "\u200b\u200b",
    "\U0001f602\U0001f602\U0001f525",
    "\u2764\ufe0f\U0001f44d",
    "!!!???...",
    "???",
    "... - ; : , ! ?",
    "\u201c\u201d\u2018\u2019",
    '""',
    "''",
    "(((((",
    "Hi!",
    "ok",
    "lol \U0001f602",
]


@pytest.mark.parametrize("content", NOTHING)
def test_a_message_with_nothing_in_it_makes_no_fact(content: str) -> None:
    assert facts_of(chat(content)) == []


# Messages of every odd shape: whatever is kept comes from their words.
ODD = [
    "https://example.com/some/path?q=1",
    "see https://example.com",
    "\u6211\u4eca\u5929\u53bb\u4e86\u516c\u56ed\u3002",  # Chinese
    "\u042f \u0445\u043e\u0434\u0438\u043b \u0432 \u043f\u0430\u0440\u043a \u0432\u0447\u0435\u0440\u0430.",  # Russian
    "Fui al parque ayer con mi hermana.",
    "\u0630\u0647\u0628\u062a \u0625\u0644\u0649 \u0627\u0644\u062d\u062f\u064a\u0642\u0629.",  # Arabic
    "I WENT TO THE PARK WITH MAX YESTERDAY!!!",
    "I LOVE IT. SO MUCH. THANKS!",
    "My favorite book is \u201cThe Name of the Wind\u201d.",
    'My favorite book is "The Name of the Wind.',
    "I read \u201cBecoming Nicole",
    "She said \u201cI\u2019m reading \u2018The Hobbit\u2019 again\u201d.",
    'I loved "The "Big" Sleep" and "Casablanca".',
    "'Tis the season, innit'",
    "Really? I got the job!",
    "?? I moved to Boston.",
    "I got the job? Yes. Finally!",
    "Will and I went hiking.",
    "May is my sister and she loves hiking.",
    "Rose gave me a gift. Max is my dog. Bill paid the bill.",
    "I told Will I will come. Ask May if she may join.",
    "Love and acceptance should be everyone's right.",
    "Got any cool art projects coming up",
    "J.K. Rowling is my favorite author. I moved to the U.S. Then I started school.",
    "I play Counter-Strike: Global Offensive every night.",
    "We had to say goodbye to Max.",
    "a" * 5000,
    ("word " * 3000).strip(),
    "I " * 2000,
    "\u2019" * 3000,
    '"' * 3000,
    "J.K. " * 2000,
    "Halo: " * 2000,
]


@pytest.mark.parametrize("content", ODD, ids=lambda c: c[:30])
def test_an_odd_message_raises_nothing_and_keeps_only_its_own_words(content: str) -> None:
    facts = facts_of(chat(content))
    assert invented(facts, [content]) == []


def test_fifty_kilobytes_of_text_makes_facts_of_its_own_words() -> None:
    paragraph = (
        "Yesterday I went to the park with my sister. We talked about J.K. Rowling and Counter-Strike: Global "
        "Offensive for hours! Love and acceptance should be everyone's right. Any plans for the weekend? "
    )
    content = paragraph * (50_000 // len(paragraph) + 1)
    facts = facts_of(chat(content))
    assert facts and invented(facts, [content]) == []


# Long strings shaped against each pattern of the new rules: a pattern that backtracks or reads the text again
# for each of its words takes minutes on these, a linear one milliseconds.
ADVERSARIAL = {
    "wish": "I wish you " + "and you " * 6000,
    "hope": "I hope " + "that " * 10_000 + "you",
    "offer": "let me know " + "if " * 15_000,
    "exhortation": "let's " + "so " * 15_000,
    "framed": "It's " + "so " * 15_000 + "great that you",
    "guess": "I bet " + "you " * 15_000 + "must have been",
    "vague": "It was " + "really " * 7000 + "close",
    "polar": "Yes" + "," * 50_000,
    "pointed": "Did you make " + "it " * 15_000 + "x",
    "initials": "J.K. " * 10_000,
    "single initials": "A. " * 16_000,
    "subtitles": "Halo: " * 8000,
    "quotes": "'a " * 16_000,
    "curly quotes": "\u201cA " * 16_000,
    "capitals": "Caroline Went To Paris " * 2000,
    "love and": "Love and " * 6000,
    "any": "Any " * 12_000,
    "said": "said " * 10_000,
}


@pytest.mark.parametrize("content", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_long_adversarial_text_is_read_in_linear_time(content: str) -> None:
    for pattern in (
        remark_rules.WISH_RE,
        remark_rules.OFFER_RE,
        remark_rules.EXHORTATION_RE,
        remark_rules.FRAMED_JUDGEMENT_RE,
        remark_rules.GUESS_RE,
        sentence_rules.POLAR_ANSWER_RE,
        sentence_rules.POINTED_RE,
    ):
        pattern.search(content)
    remark_rules.remark_class(content)
    sentence_rules.polar_question(content + "?")
    sentence_rules.polar_answer(content)
    find_entities(content)
    facts = facts_of(chat(content))
    assert invented(facts, [content]) == []


def asked_and_answered(*turns: tuple[str, str, str | None]) -> list[str]:
    """The facts of the last turn, the earlier ones its thread's context: (sender, content, peer) each."""
    events = [chat(content, sender, peer, at=i) for i, (sender, content, peer) in enumerate(turns)]
    return [fact.text for fact in extract(events[-1:], context=events[:-1]).facts]


@pytest.mark.parametrize(
    "turns",
    [
        # asked of Melanie, answered by Jon
        ((CAROLINE, "Did you finish the mural?", MELANIE), (JON, "Yes, the big one.", CAROLINE)),
        ((CAROLINE, "Did you finish the mural?", MELANIE), (JON, "Yes!", CAROLINE)),
        # asked of the group, a remark between, then a yes
        ((CAROLINE, "Did you finish the mural?", None), (MELANIE, "Nice!", None), (JON, "Yes, it looks great.", None)),
        # the asker answers herself
        ((CAROLINE, "Did you finish the mural?", MELANIE), (CAROLINE, "Yes!", MELANIE)),
    ],
)
def test_a_yes_answers_only_the_question_put_to_its_sender(turns: tuple[tuple[str, str, str | None], ...]) -> None:
    assert not any("Asked" in fact or "mural" in fact for fact in asked_and_answered(*turns))


def test_a_yes_answers_the_question_put_to_its_sender() -> None:
    facts = asked_and_answered((CAROLINE, "Did you finish the mural?", MELANIE), (MELANIE, "Yes!", CAROLINE))
    assert facts == ['Asked "Did Melanie finish the mural?", Melanie answered: Yes.']


def test_a_reply_in_another_thread_answers_no_question_of_this_one() -> None:
    question = chat("Did you finish the mural?", CAROLINE, MELANIE, at=0, thread_id="t1")
    elsewhere = chat("Yes!", MELANIE, CAROLINE, at=1, thread_id="t2")
    here = chat("Yes!", MELANIE, CAROLINE, at=1, thread_id="t1")
    assert [fact.text for fact in extract([question, elsewhere]).facts] == []
    assert [fact.text for fact in extract([question, here]).facts] == [
        'Asked "Did Melanie finish the mural?", Melanie answered: Yes.'
    ]


@pytest.mark.parametrize(
    ("content", "name"),
    [
        ("Will and I went hiking.", "Will"),
        ("May is my sister.", "May"),
        ("Rose gave me a gift.", "Rose"),
        ("Max is my dog.", "Max"),
    ],
)
def test_a_name_that_is_also_a_word_keeps_its_capital(content: str, name: str) -> None:
    facts = facts_of(chat(content))
    assert facts and all(name in fact for fact in facts)
