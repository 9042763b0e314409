"""Cause and effect inside one sentence ("X because Y", "Since X, Y", "We moved it: the vendor slipped") and
links to the sentence before, either way: "As a result, Y" (the one before is the cause), "That's because Y"
(this one is the reason for the one before).

Conservative on purpose: a link needs a cue word, or, for a reason after a colon or a dash, a first
clause that reports a change or a decision (moved, postponed, cancelled, switched, ...), the kind of
statement whose explanation follows that way; both sides must be clauses.
"""

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
    r"^(?:as\s+a\s+result|therefore|because\s+of\s+(?:this|that)|that(?:'|\u2019)?s\s+why|that\s+is\s+why|"
    r"this\s+is\s+why|thanks\s+to\s+(?:this|that))\s*,?\s+",
    re.IGNORECASE,
)
# Sentence-initial reasons for the previous sentence: "That's because Y" means Y -> previous.
CAUSAL_REASON_PREV: tuple[tuple[re.Pattern[str], float], ...] = (
    (
        re.compile(
            r"^(?:(?:that|this|it)(?:'|\u2019)?s|(?:that|this|it)\s+(?:is|was))\s+(?:all\s+|just\s+|mostly\s+)?"
            r"because\s+(?!of\b)",
            re.IGNORECASE,
        ),
        0.85,
    ),
    (re.compile(r"^the\s+(?:main\s+|only\s+|real\s+)?reason\s+(?:is|was)\s+(?:that\s+)?", re.IGNORECASE), 0.8),
    (re.compile(r"^because\s+(?!of\b)(?=[^,]+$)", re.IGNORECASE), 0.75),  # "Because Y." with no effect after it
)
# A first clause that reports a change or a decision: what a reason after a colon or a dash explains.
CHANGE_VERB = re.compile(
    r"\b(?:moved|moving|postponed|postponing|delayed|delaying|pushed|pushing|cancell?ed|cancell?ing|"
    r"rescheduled|rescheduling|switched|switching|changed|changing|dropped|dropping|decided|quit|"
    r"stopped|stopping|paused|pausing|pulled|slipped|slipping)\b",
    re.IGNORECASE,
)
_COLON_OR_DASH = re.compile(r"\s*:\s+|\s+(?:-{1,2}|\u2013|\u2014)\s+|\u2014")


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
    return _reason_after_colon(sentence)


def _reason_after_colon(sentence: str) -> tuple[str, str, float, bool] | None:
    """'We moved the launch: the vendor slipped' -> (the vendor slipped, we moved the launch): a change or a
    decision, then a clause after a colon or a dash, which is how its reason is often given."""
    match = _COLON_OR_DASH.search(sentence)
    if not match:
        return None
    left, right = sentence[: match.start()].strip(), sentence[match.end() :].strip()
    if CHANGE_VERB.search(left) and is_clause(left) and is_clause(right) and not right.endswith("?"):
        return finish(capitalise(right)), finish(capitalise(left)), 0.6, False
    return None


def reason_for_previous(sentence: str) -> tuple[str, float] | None:
    """(the reason, strength) when a sentence gives the reason for the one before it ("That's because the
    vendor slipped.", "The reason is that ...", "Because it rained."), else None."""
    if sentence.rstrip().endswith("?"):
        return None
    for pattern, strength in CAUSAL_REASON_PREV:
        match = pattern.match(sentence)
        if match and is_clause(sentence[match.end() :]):
            return finish(capitalise(sentence[match.end() :])), strength
    return None
