"""Real names senders give for themselves: "I'm Marcus", "my name is Marcus", "call me Marcus"."""

from __future__ import annotations

import re

from nexus_memory.writer.extractor.words import INTRO_NOT_NAMES, NOT_NAMES, PLACES

# A name given in an introduction: "I'm Marcus", "my name is Marcus", "this is Marcus", "call me Marcus".
INTRO_RE = re.compile(
    r"\b(?P<cue>I['\u2019]m|I am|[Mm]y name is|[Mm]y name['\u2019]s|[Tt]his is|[Cc]all me|[Ii]t['\u2019]s)\s+"
    r"(?P<name>[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?(?:\s+[A-Z][a-z]+)?)(?![\w'\u2019])"
)
# What may come right before an introduction cue: the start, a clause break, or a greeting.
INTRO_BEFORE_RE = re.compile(r"(?:^|[.!?,;:\-]\s*|\b(?:hey|hi|hello|and)\s+)$", re.IGNORECASE)


def find_introductions(content: str) -> list[str]:
    """Names the sender gives for themselves ('I'm Marcus'); not 'I'm Happy' / 'I'm Going'."""
    return [m.group("name") for m in INTRO_RE.finditer(content) if intro_ok(m)]


def intro_ok(match: re.Match[str]) -> bool:
    """Reject introduction look-alikes: adjectives, verbs, nationalities, 'this is Paris', possessives."""
    if not INTRO_BEFORE_RE.search(match.string[max(0, match.start() - 8) : match.start()]):
        return False  # "what I'm Reading" mid-clause is not an introduction
    name = match.group("name")
    first = name.split()[0]
    if first.lower() in INTRO_NOT_NAMES or first in NOT_NAMES or first in PLACES:
        return False
    cue = match.group("cue").lower().replace("\u2019", "'")
    rest = match.string[match.end() : match.end() + 3]
    if rest.startswith(("'s", "\u2019s")):
        return False
    if cue in ("this is", "it's"):
        # "This is Marcus" only opens a message (phone / voicemail style), and only with a comma/end after.
        return match.start() == 0 or match.string[: match.start()].strip().lower() in ("hi,", "hey,", "hello,")
    return True
