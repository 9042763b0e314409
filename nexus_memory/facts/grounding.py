"""Grounding: a text a model wrote is kept as memory only when what it asserts is in its sources.

One rule for every LLM output that becomes memory: the writer's facts (sources: the event each cites),
consolidation's observations (the facts it was shown), mental-model narratives and the weekly
reflection (the facts or the digest they were given). A claim is grounded when

- every number and every name (a capitalised word inside a sentence: people, places, months) in it is
  in the sources or the context, and
- at least `GROUNDED_SHARE` of its other content words (stopwords left out, light stemming: "moved" is
  "move") are in the sources.

The context is what the platform delivered with the sources, not what anyone said: who speaks, to whom,
where and when (the writer's deliveryContext). Its words are allowed in a claim and not counted, so
"Ann adopted a cat" from Ann's "I adopted a cat" is 2 of 2. Citation refs ("[f3]") are not words.

`GROUNDED_SHARE` was chosen from data (docs/writer.md, "What the LLM writer may store: grounding";
`bench/extract_llm.py`, `calibrate_grounding`): on LoCoMo dev, between the offline writer's facts and
LoCoMo's own paraphrased observations (said) and the prompt's example moved onto the speaker, facts of
another conversation and facts cited against the next turn (not said).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from nexus_memory.core.calendar_words import NUMBER_WORDS
from nexus_memory.core.words import STOPWORDS, word_set

GROUNDED_SHARE = 0.6  # content words of a claim found in its sources, at least (measured: docs/writer.md)
BORROWED_WORDS = 2  # a claim with this many words of a prompt's examples that its sources lack is a copied example

# Words a faithful rewrite adds ("Ann said she ...", "Bo told Ann ..."), and the halves a split at
# apostrophes leaves of "don't", "isn't", "won't": no claim is judged by them.
FREE_WORDS = STOPWORDS | word_set(
    """
    said say says saying told tell tells mentioned mention mentions asked ask asks answered also really themself
    don doesn didn isn aren wasn weren won wouldn couldn shouldn hasn haven hadn can cannot
    """
)
_CITATION = re.compile(r"\[[a-z]{1,2}\d+\]")  # [f3], [o1]
_TOKEN = re.compile(r"(?P<number>\d+(?:,\d{3})*(?:\.\d+)?)|(?P<word>[^\W\d_]+)")
_SENTENCE_MARKS = ".!?:;\n\u2022*#>"
_OPENERS = " \t\"'([\u201c\u2018"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n+")
_QUOTED = re.compile(r"\"([^\"]{1,300})\"(\s*:)?")  # a quote may wrap a line; a JSON key ("text": ...) is no example
_EXAMPLE_SECTION = re.compile(r"^#+[^\n]*\bexamples?\b[^\n]*\n(.*?)(?=^#+ |\Z)", re.I | re.M | re.S)
# (suffix, what replaces it, letters that must remain); "-es" loses only its "s", and the "e" goes after,
# so "agrees" and "agree" meet at "agre".
_SUFFIXES = (("ies", "y", 2), ("ied", "y", 2), ("oes", "o", 1), ("ing", "", 3), ("ed", "", 3), ("s", "", 3))
_NOT_PLURAL = ("ss", "us", "is")
_DIGITS = {word: str(n) for word, n in NUMBER_WORDS.items() if " " not in word and word not in ("a", "an", "few")}


def stem(word: str) -> str:
    """A light English stem: "moved", "moves", "moving" and "move" are all "mov"; "tries" and "tried" are
    "try", "goes" is "go"; "class", "focus" and "analysis" keep their "s"."""
    for suffix, replacement, keep in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= keep and word[-2:] not in _NOT_PLURAL:
            word = word[: -len(suffix)] + replacement
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiousl":
        word = word[:-1]  # "stopped" -> "stopp" -> "stop"
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


@dataclass(frozen=True)
class Term:
    """One content word or number of a text: its normal form, stem, and whether it must be found as it is."""

    text: str
    stem: str
    literal: bool  # a number, or a capitalised word inside a sentence (a name, a place, a month)


def terms(text: str) -> list[Term]:
    """The content words and numbers of `text`, in order (stopwords and citation refs left out)."""
    text = _CITATION.sub(" ", text)
    found: list[Term] = []
    for match in _TOKEN.finditer(text):
        if match.group("number"):
            number = match.group("number").replace(",", "")
            if "." not in number:
                number = number.lstrip("0") or "0"  # "05" of a date is 5
            found.append(Term(number, number, True))
            continue
        word = match.group("word")
        low = word.lower()
        if low in _DIGITS:
            found.append(Term(_DIGITS[low], _DIGITS[low], False))
        elif low not in FREE_WORDS and len(low) > 1:
            named = word[0].isupper() and not _starts_sentence(text, match.start())
            found.append(Term(low, stem(low), named))
    return found


def _starts_sentence(text: str, position: int) -> bool:
    """True when the word at `position` opens a sentence, a line or a list item (capitalised by rule, not a name)."""
    while position > 0 and text[position - 1] in _OPENERS:
        position -= 1
    return position == 0 or text[position - 1] in _SENTENCE_MARKS


def sentences(text: str) -> list[str]:
    """A prose text's sentences (and lines), for judging them one by one."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def example_text(prompt: str) -> str:
    """What a prompt shows as examples: its double-quoted strings and everything under an "Example" heading."""
    shown = [" ".join(m.group(1).split()) for m in _QUOTED.finditer(prompt) if not m.group(2) and len(m.group(1)) > 2]
    shown += [m.group(1) for m in _EXAMPLE_SECTION.finditer(prompt)]
    return "\n".join(shown)


@dataclass(frozen=True)
class Grounding:
    """How far a claim is in its sources."""

    share: float  # of the claim's counted content words, those found in the sources
    missing: tuple[str, ...]  # counted content words not in the sources
    missing_literals: tuple[str, ...]  # names and numbers not in the sources or the context

    @property
    def grounded(self) -> bool:
        return not self.missing_literals and self.share >= GROUNDED_SHARE

    def why(self) -> str:
        """One line for a drop note or a model: what the sources do not say."""
        if self.missing_literals:
            return f"{', '.join(self.missing_literals)} not in the source"
        missing = ", ".join(self.missing[:8])
        return f"{self.share:.2f} of its words in the source (at least {GROUNDED_SHARE}); not there: {missing}"


class Source:
    """The words of some source texts, read once, to judge any number of claims against them."""

    def __init__(self, texts: Iterable[str], context: Iterable[str] = ()) -> None:
        self.words, self.stems = _vocabulary(texts)
        self.context_words, self.context_stems = _vocabulary(context)

    def has(self, term: Term) -> bool:
        return term.text in self.words or (not term.literal and term.stem in self.stems)

    def in_context(self, term: Term) -> bool:
        return term.text in self.context_words or (not term.literal and term.stem in self.context_stems)

    def ground(self, claim: str) -> Grounding:
        """How far `claim` is in these sources: context words are allowed and not counted."""
        counted = [t for t in terms(claim) if not self.in_context(t)]
        missing = [t for t in counted if not self.has(t)]
        share = 1 - len(missing) / len(counted) if counted else 1.0
        return Grounding(
            round(share, 3),
            tuple(dict.fromkeys(t.text for t in missing)),
            tuple(dict.fromkeys(t.text for t in missing if t.literal)),
        )

    def borrowed(self, claim: str, examples: Source) -> list[str]:
        """The claim's words that these sources lack and `examples` (a prompt's examples) hold."""
        found = (t for t in terms(claim) if not self.has(t) and not self.in_context(t) and examples.has(t))
        return list(dict.fromkeys(t.text for t in found))


def ungrounded(text: str, source: Source) -> list[tuple[str, Grounding]]:
    """The sentences of a prose text (an observation, a narrative, a reflection) its source does not hold."""
    return [(sentence, found) for sentence in sentences(text) if not (found := source.ground(sentence)).grounded]


def names_in(texts: Iterable[str]) -> list[str]:
    """The names (capitalised words inside sentences) of some texts: who "he" or "she" may be."""
    return list(dict.fromkeys(t.text for text in texts for t in terms(text) if t.literal and not t.text[0].isdigit()))


def date_words(ms: int) -> str:
    """A time as the words a text may write it with: "7 5 2023 May Sunday" (day, month, year, names)."""
    day = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return f"{day.day} {day.month} {day.year} {day:%B %A}"


def _vocabulary(texts: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    found = [t for text in texts for t in terms(text)]
    return frozenset(t.text for t in found), frozenset(t.stem for t in found)
