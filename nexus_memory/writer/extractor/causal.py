"""Cause and effect inside one sentence ("X because Y", "Since X, Y") and links to the sentence before."""

from __future__ import annotations

import re

from nexus_memory.writer.extractor.sentences import has_verb, is_clause, starts_with_subject
from nexus_memory.writer.extractor.text import capitalise, finish
from nexus_memory.writer.extractor.words import WORD_RE

# Causal cues inside a sentence: (regex, cause side, strength). "left"/"right" say which side is the cause.
CAUSAL_INFIX: tuple[tuple[re.Pattern[str], str, float], ...] = (
    (re.compile(r",?\s+because\s+(?!of\b)", re.IGNORECASE), "right", 0.85),
    (
        re.compile(
            r",?\s+(?:which|and this|and that|this|that)\s+(?:has\s+|have\s+)?(?:led|leads)\s+to\s+", re.IGNORECASE
        ),
        "left",
        0.75,
    ),
    (re.compile(r"\s+(?:has\s+|have\s+|had\s+)?(?:led|leads)\s+to\s+", re.IGNORECASE), "left", 0.75),
    (re.compile(r"\s+(?:resulted|results)\s+in\s+", re.IGNORECASE), "left", 0.75),
    (re.compile(r",?\s+due\s+to\s+", re.IGNORECASE), "right", 0.8),
    (re.compile(r",?\s+as\s+a\s+result\s+of\s+", re.IGNORECASE), "right", 0.8),
    (re.compile(r"\s+(?:was|were|is|are|been)?\s*caused\s+by\s+", re.IGNORECASE), "right", 0.85),
    (re.compile(r"[,;]?\s+(?:and\s+)?therefore,?\s+", re.IGNORECASE), "left", 0.8),
    (re.compile(r",?\s+so\s+that\s+", re.IGNORECASE), "left", 0.6),
    (re.compile(r"[,;]\s+so\s+(?!that\b|much\b|many\b|far\b|glad\b|happy\b)", re.IGNORECASE), "left", 0.6),
)
# Causal cues at sentence start: "Because X, Y" / "Since X, Y" (cause first, then effect).
CAUSAL_PREFIX: tuple[tuple[re.Pattern[str], float], ...] = (
    (re.compile(r"^because\s+(?P<cause>[^,]+),\s+(?P<effect>.+)$", re.IGNORECASE), 0.85),
    (
        re.compile(
            r"^since\s+(?P<cause>(?!\d|last\b|then\b|yesterday\b|childhood\b|high school\b|college\b|"
            r"the\s+(?:day|time|beginning|start|age)\b)[^,]+),\s+(?P<effect>.+)$",
            re.IGNORECASE,
        ),
        0.6,
    ),
)
# Sentence-initial links to the previous sentence: "As a result, Y" means previous -> Y.
CAUSAL_LINK_PREV = re.compile(
    r"^(?:as\s+a\s+result|therefore|because\s+of\s+(?:this|that)|that's\s+why|"
    r"this\s+is\s+why|thanks\s+to\s+(?:this|that))\s*,?\s+",
    re.IGNORECASE,
)


def split_causal(sentence: str) -> tuple[str, str, float, bool] | None:
    """(cause, effect, strength, cause_first) when a causal cue joins two clauses, else None.

    Conservative on purpose: both sides must be clauses (a verb each), so "because of the rain"
    or "caused by a leak" stay one fact without a pair.
    """
    for pattern, strength in CAUSAL_PREFIX:
        match = pattern.match(sentence)
        if match and has_verb(match.group("cause")) and is_clause(match.group("effect")):
            return (
                finish(capitalise(match.group("cause"))),
                finish(capitalise(match.group("effect"))),
                strength,
                True,
            )
    for pattern, cause_side, strength in CAUSAL_INFIX:
        match = pattern.search(sentence)
        if not match:
            continue
        left, right = sentence[: match.start()].strip(), sentence[match.end() :].strip()
        if not (has_verb(left) and has_verb(right)) or len(WORD_RE.findall(right)) < 2:
            continue
        if not starts_with_subject(right) and cause_side == "right":
            continue
        left, right = finish(capitalise(left)), finish(capitalise(right))
        if cause_side == "left":
            return left, right, strength, True
        return right, left, strength, False
    return None
