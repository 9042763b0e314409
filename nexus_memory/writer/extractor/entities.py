"""Entities named in a fact: literal contact values and capitalised names, typed by cue words."""

from __future__ import annotations

import re

from nexus_memory.writer.extractor.literals import EMAIL_RE, HANDLE_RE, PHONE_RE, URL_RE
from nexus_memory.writer.extractor.names import NameBook
from nexus_memory.writer.extractor.results import EntityMention
from nexus_memory.writer.extractor.text import contains_word
from nexus_memory.writer.extractor.words import (
    FILLER_WORDS,
    LOCATION_PREPOSITIONS,
    LOCATION_WORDS,
    NATIONALITIES,
    NOT_NAMES,
    ORG_WORDS,
    PERSON_CUES,
    PLACES,
    STOPWORDS,
    WORD_RE,
)

# A capitalised token sequence for names: "Caroline", "New York", "University of Michigan".
CAPSEQ_RE = re.compile(
    r"(?<![\w@.'\u2019-])(?:[A-Z][a-zA-Z0-9&.-]*[a-zA-Z0-9]|[A-Z])"
    r"(?:\s+(?:(?:of the|of|de|van|von|da|du|la|le)\s+)?(?:[A-Z][a-zA-Z0-9&.-]*[a-zA-Z0-9]|[A-Z]))*"
)


def find_entities(
    text: str, names: NameBook | None = None, *, speaker: str | None = None, peer: str | None = None
) -> list[EntityMention]:
    """Entities in a fact: regex literals (email, phone, url, handle) and capitalised names.

    Names: capitalised token sequences, skipping the first word of the sentence unless it is a known
    name, and skipping NOT_NAMES (pronouns, greetings, months, weekdays). Type by cue: organization
    suffix words, location words / gazetteer / a preceding 'in'/'from', known speakers and person cues
    -> person, other single words -> person, other sequences -> concept.
    """
    mentions: list[EntityMention] = []
    literal_spans: list[tuple[int, int]] = []
    for pattern, kind in ((EMAIL_RE, "email"), (URL_RE, "url"), (PHONE_RE, "phone"), (HANDLE_RE, "handle")):
        for match in pattern.finditer(text):
            if any(s <= match.start() < e for s, e in literal_spans):
                continue
            value = match.group(0).rstrip(".,;:!?)")
            literal_spans.append((match.start(), match.end()))
            mentions.append(EntityMention(value, kind))
    for start, name in _capitalised_sequences(text, names, literal_spans):
        kind = _classify_name(name, text[:start], names)
        role = "sender" if name == speaker else "peer" if name == peer else "mentioned"
        mentions.append(EntityMention(name, kind, role))
    if speaker and contains_word(text, speaker) and not any(m.name == speaker for m in mentions):
        mentions.insert(0, EntityMention(speaker, "person", "sender"))
    return merge_mentions(mentions, [])


def _capitalised_sequences(text: str, names: NameBook | None, skip: list[tuple[int, int]]) -> list[tuple[int, str]]:
    """(start, name) for each capitalised token sequence that may be a name."""
    out: list[tuple[int, str]] = []
    for match in CAPSEQ_RE.finditer(text):
        if any(s <= match.start() < e for s, e in skip):
            continue
        tokens = match.group(0).split()
        start = match.start()
        sentence_start = start == 0 or bool(re.search(r"(?:^|[.!?:\"(]\s*)$", text[:start]))
        # Drop leading tokens that are not names (sentence-initial words, pronouns, months ...).
        while tokens and (
            tokens[0] in NOT_NAMES
            or tokens[0].lower() in STOPWORDS
            or (
                sentence_start
                and len(tokens) == 1
                and not (names and names.is_known(tokens[0]))
                and tokens[0] not in PLACES
            )
        ):
            start = text.find(tokens[1], start + len(tokens[0])) if len(tokens) > 1 else start
            tokens = tokens[1:]
            sentence_start = False
        while tokens and (tokens[-1] in NOT_NAMES or tokens[-1].lower() in {"of", "de", "the", "and", "for"}):
            tokens = tokens[:-1]
        if not tokens or (len(tokens[0]) < 2 and not tokens[0].isupper()):
            continue
        if len(tokens) == 1 and tokens[0].lower() in STOPWORDS | FILLER_WORDS:
            continue
        out.append((start, " ".join(tokens).rstrip(".")))
    return out


def _classify_name(name: str, before: str, names: NameBook | None) -> str:
    """Entity type of a capitalised name from suffix / keyword cues and the word before it."""
    tokens = name.split()
    if any(t in ORG_WORDS for t in tokens[1:]) or tokens[0] in ("University", "Bank", "College"):
        return "organization"
    if name in PLACES or any(t in LOCATION_WORDS for t in tokens[1:]) or tokens[0] in ("Lake", "Mount", "Mt"):
        return "location"
    if tokens[0] in NATIONALITIES:
        return "concept"
    if names and (name in names.known or names.is_known(tokens[0])):
        return "person"
    previous = WORD_RE.findall(before.lower()[-30:])
    prev = previous[-1] if previous else ""
    if prev in PERSON_CUES and len(tokens) <= 3:
        return "person"
    if len(tokens) == 1 and prev in LOCATION_PREPOSITIONS and not tokens[0].isupper():
        return "location"
    # Anything else (brands, titles, acronyms, unknown single names) stays a concept: a wrong
    # 'person' would invite false merges with real people.
    return "concept"


def merge_mentions(first: list[EntityMention], extra: list[EntityMention]) -> list[EntityMention]:
    """Mentions without duplicates (same name and type), first occurrence wins, order kept."""
    seen: set[tuple[str, str]] = set()
    out: list[EntityMention] = []
    for mention in [*first, *extra]:
        key = (mention.name.lower(), mention.type)
        if key not in seen:
            seen.add(key)
            out.append(mention)
    return out
