"""First and second person resolved to names, with verb agreement ("I love" -> "Ann loves")."""

from __future__ import annotations

import re

from nexus_memory.writer.extractor.words import (
    ADVERBS,
    CONTRACTIONS,
    IRREGULAR_PAST,
    NO_AGREEMENT,
    PRESENT_VERBS,
    STOPWORDS,
    THIRD_PERSON,
)

# I/me/my/... and you/your/... with an optional contraction and the following word (for agreement).
PRONOUN_RE = re.compile(
    r"(?<![\w'\u2019-])(?P<pro>I|i(?![.\w])|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|[Yy]ou|[Yy]our|[Yy]ours|[Yy]ourself)"
    r"(?P<con>['\u2019](?:m|re|ve|ll|d|s))?(?![\w'\u2019-])"
    r"(?P<gap>\s+(?:(?:" + "|".join(sorted(ADVERBS)) + r")\s+)?)?"
    r"(?P<next>(?!(?:me|my|mine|you|your|yours)\b)[a-z]+(?:['\u2019]t)?)?"
)
# Generic or formulaic "you" that is not the addressee ("thank you", "you know", "see you").
GENERIC_YOU_BEFORE = re.compile(r"\b(?:thank|see|if|when|miss|bless|love|whenever|unless|mind)\s*$", re.IGNORECASE)
GENERIC_YOU_AFTER = re.compile(
    r"^\s*(?:know\b(?!\s+(?:that|how|what|about|i|my))|guys\b|all\b|both\b|two\b|"
    r"never know\b|too\b|later\b|soon\b)",
    re.IGNORECASE,
)

# An auxiliary before I/you: a question's inverted order, whose verb stays bare ("did you think" -> "did Bo think").
_AUX_BEFORE = re.compile(
    r"\b(?:do|does|did|can|could|will|would|should|shall|may|might|must|have|has|had|are|is|am|was|were|"
    r"don't|doesn't|didn't|can't|won't|haven't|hasn't|aren't|isn't|weren't|wasn't)\s+$",
    re.IGNORECASE,
)
# ... and that auxiliary's form before one person's name ("have you been" -> "has Bo been").
_SINGULAR_AUX = {
    "have": "has",
    "do": "does",
    "are": "is",
    "am": "is",
    "were": "was",
    "haven't": "hasn't",
    "don't": "doesn't",
    "aren't": "isn't",
    "weren't": "wasn't",
}


def resolve_pronouns(text: str, speaker: str, peer: str | None) -> tuple[str, bool]:
    """First person -> the speaker's name, second person -> the peer's name (when known).

    Returns (text, whether a first-person pronoun was resolved). Verb agreement is fixed for the
    common cases ("I am" -> "Ann is", "I love" -> "Ann loves", "you're" -> "Bo is").
    """
    used_first = False
    subject_seen: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        nonlocal used_first
        pro = match.group("pro")
        low = pro.lower()
        con = (match.group("con") or "").replace("\u2019", "'").lower()
        gap = match.group("gap") or ""
        nxt = match.group("next") or ""
        first = low in ("i", "me", "my", "mine", "myself")
        if not first:
            before = match.string[: match.start()]
            after = match.string[match.end("pro") + len(match.group("con") or "") :]
            if peer is None or GENERIC_YOU_BEFORE.search(before) or GENERIC_YOU_AFTER.match(after):
                return match.group(0)
        name = speaker if first else peer
        assert name is not None
        used_first = used_first or first
        if low in ("my", "your", "mine", "yours"):
            word = f"{name}'s"
        elif low in ("myself", "yourself"):
            word = "themself" if name in subject_seen else name
        else:
            word = name
        if low in ("i", "you"):
            subject_seen.add(name)
        if con:
            if low in ("i", "you"):
                word += CONTRACTIONS.get(con, con)
            else:
                word += con
        elif low in ("i", "you") and nxt and not _AUX_BEFORE.search(match.string[: match.start()]):
            nxt = _agree(nxt.replace("\u2019", "'"), open_class=low == "i")
        return word + gap + nxt

    resolved = PRONOUN_RE.sub(replace, text)
    if resolved != text:
        named = "|".join(re.escape(n) for n in {speaker, peer} if n)
        # Only in a question's inverted order, after its wh-word ("How long have you been"): "to have you" stays.
        resolved = re.sub(
            r"(\b(?:what|how|where|when|why|who|which)\b(?:\s+[\w'\u2019]+){0,2}\s+)("
            + "|".join(_SINGULAR_AUX)
            + r")(\s+(?:"
            + named
            + r")\b)(?!['\u2019]s\b)",
            lambda m: m.group(1) + _SINGULAR_AUX[m.group(2).lower()] + m.group(3),
            resolved,
            flags=re.IGNORECASE,
        )
    return resolved, used_first


def _agree(verb: str, *, open_class: bool) -> str:
    """Third-person singular form of the present-tense verb that followed I/you.

    After "I" (always a subject) any word is taken as its verb (`open_class`) unless it is a function
    word, an adverb, a modal, a past or -ing form, or a form that is present and past at once ("read").
    After "you" (often an object: "makes you happy") only the listed common verbs change.
    """
    if verb in THIRD_PERSON:
        return THIRD_PERSON[verb]
    if not open_class and verb not in PRESENT_VERBS:
        return verb
    if (
        verb in STOPWORDS
        or verb in ADVERBS
        or verb in IRREGULAR_PAST
        or verb in NO_AGREEMENT
        or (verb.endswith(("ed", "ly", "n't", "ing")) and verb not in PRESENT_VERBS)
        or (verb.endswith("s") and verb not in PRESENT_VERBS)
        or len(verb) < 2
    ):
        return verb
    if verb.endswith(("s", "sh", "ch", "x", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"
