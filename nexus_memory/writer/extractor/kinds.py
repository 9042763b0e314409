"""Derived event kinds by cue phrase: correction, decision, commitment, action item, stated preference."""

from __future__ import annotations

import re

# Derived kinds by cue, tried in this order (the first that matches wins).
KIND_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "correction",
        re.compile(
            r"^(?:actually|correction|to clarify|i meant|sorry,? i meant|let me correct)\b"
            r"[,:]?|\bnot\s+(?!just\b|only\b|simply\b|merely\b|that\b)[^,.]{1,40},\s*"
            r"(?:it['\u2019]s|it is|it was)\s+|"
            r"\bi\s+(?:was\s+)?(?:wrong|mistaken)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "decision",
        re.compile(
            r"\b(?:we|i)\s+(?:have\s+|'ve\s+|\u2019ve\s+|finally\s+|just\s+)?decided\b|"
            r"\bdecided\s+to\b|\blet['\u2019]?s\s+go\s+with\b|"
            r"\bwe(?:['\u2019]re| are)\s+going\s+with\b|"
            r"\b(?:we|i)\s+(?:chose|agreed|settled on|made the decision)\b|\bdecision\s+is\b",
            re.IGNORECASE,
        ),
    ),
    (
        "commitment",
        re.compile(
            r"\blet['\u2019]?s\s+meet\b|\bi\s+promise\b|\bsee\s+you\s+(?:at|on|there|tomorrow|"
            r"next)\b|\bi['\u2019]ll\s+be\s+there\b|\bwe['\u2019]ll\s+meet\b|\bmeet\s+you\s+(?:at|on)\b|"
            r"\bi\s+(?:swear|guarantee)\b|\bcount\s+on\s+me\b|\bcount\s+me\s+in\b|\bi\s+give\s+you\s+my\s+word\b",
            re.IGNORECASE,
        ),
    ),
    (
        "action_item",
        re.compile(
            r"\bi['\u2019]ll\s+(?!be\s+(?:happy|glad|there)\b)\w+|\bi\s+will\s+\w+|"
            r"\bto-?do\b|\bi\s+(?:need|have|got)\s+to\b|\bi\s+must\b|^(?:please\s+)?remind\s+me\s+to\b|"
            r"\bi['\u2019]m\s+going\s+to\s+\w+|\bi\s+plan\s+to\b|\bi['\u2019]m\s+planning\s+to\b",
            re.IGNORECASE,
        ),
    ),
    (
        "preference_stated",
        re.compile(
            r"\bi\s+(?:really\s+|absolutely\s+|just\s+|totally\s+|also\s+)?"
            r"(?:prefer|love|hate|like|enjoy|adore|dislike|can['\u2019]t stand|"
            r"don['\u2019]t like)\s+(?!it\b|that\b|this\b|you\b|hearing\b|seeing\b|how\b|"
            r"to hear\b|when\b|what\b)|\bmy\s+(?:all-time\s+|absolute\s+)?favou?rite\b|"
            r"\bi['\u2019]m\s+(?:a\s+)?(?:big\s+)?fan\s+of\b",
            re.IGNORECASE,
        ),
    ),
)


def classify_kind(sentence: str) -> str:
    """The derived event kind of a sentence by cue phrase, or 'fact'."""
    text = sentence.replace("\u2019", "'")
    for kind, pattern in KIND_CUES:
        if pattern.search(text):
            return kind
    return "fact"
