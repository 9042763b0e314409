"""Entities named in a fact: literal contact values and capitalised names, typed by cue words."""

from __future__ import annotations

import re

from nexus_memory.core.words import word_set
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
# What comes before the first word of a clause, where any word is capitalised: the start, an end of
# sentence, an opening quote or bracket, a dash between clauses ("... - Even though ..."), and reported
# speech ('Caroline said Change is possible', 'Mel answered: Luna ...'): the writer's "X said" keeps the
# capital of the sentence it reports.
CLAUSE_START_RE = re.compile(r"(?:^|[.!?:\"(\u201c]|\s[-\u2013\u2014]|\b(?:said|says))\s*\Z")
# A quotation: in double quotes, or in single quotes that no letter touches from outside ("'cause" is none).
QUOTED_RE = re.compile(r"\"([^\"\n]{2,80})\"|\u201c([^\u201d\n]{2,80})\u201d|(?<![\w'])'([^'\n]{2,80})'(?![\w'])")
# Words a title leaves in lower case ("Lord of the Rings", "A Dance with Dragons").
TITLE_MINOR_WORDS = frozenset(
    {"a", "an", "and", "as", "at", "by", "for", "from", "in", "of", "on", "or", "the", "to", "with"}
)


def find_entities(
    text: str, names: NameBook | None = None, *, speaker: str | None = None, peer: str | None = None
) -> list[EntityMention]:
    """Entities in a fact: regex literals (email, phone, url, handle) and capitalised names.

    Names: quoted titles whole, and capitalised token sequences cut before a known person's name, without
    NOT_NAMES (pronouns, greetings, months, weekdays) and without a word capitalised only because it opens
    a clause (a word the batch writes in lower case before a name, or one word alone with no reason to be
    a name). Type by cue: organization suffix words, location words / gazetteer / a preceding 'in'/'from',
    known speakers and person cues -> person, anything else -> concept.
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
        kind = _classify_name(name, text[:start], names, text[start + len(name) :])
        role = "sender" if name == speaker else "peer" if name == peer else "mentioned"
        mentions.append(EntityMention(name, kind, role))
    if speaker and contains_word(text, speaker) and not any(m.name == speaker for m in mentions):
        mentions.insert(0, EntityMention(speaker, "person", "sender"))
    return merge_mentions(mentions, [])


def _capitalised_sequences(text: str, names: NameBook | None, skip: list[tuple[int, int]]) -> list[tuple[int, str]]:
    """(start, name) for each quoted title and each capitalised token sequence that may be a name."""
    titles = _quoted_titles(text)
    out = [(start, title) for start, title, _ in titles]
    skip = [*skip, *((start, end) for start, _, end in titles)]
    for match_start, sequence in _joined_sequences(text, names):
        if any(match_start < e and s < match_start + len(sequence) for s, e in skip):
            continue
        for start, tokens in _pieces(sequence, match_start, names):
            clause_start = _at_clause_start(text, start)
            start, tokens = _name_part(text, start, tokens, clause_start, names)
            if tokens:
                name = " ".join(tokens)
                out.append((start, name if INITIALS_RE.fullmatch(tokens[-1]) else name.rstrip(".")))
    return sorted(out)


# A word of initials ("J.K", "U.S.", "J.K."): a name goes on past their period ("J.K. Rowling").
INITIALS_RE = re.compile(r"(?:[A-Z]\.)+[A-Z]\.?")
# A title and its subtitle after a colon: "Counter-Strike: Global Offensive", "Star Wars: The Last Jedi".
SUBTITLE_ARTICLES = frozenset({"The", "A", "An"})


def _joined_sequences(text: str, names: NameBook | None) -> list[tuple[int, str]]:
    """(start, text) of each capitalised sequence, joined to the next across the period after initials
    ("J.K. Rowling"; "U.S." keeps its period, and "U.S. Then ..." stays two) and across the colon of a
    subtitle inside a clause ("Counter-Strike: Global Offensive"; not 'Mel answered: Luna' or "Subject: ...",
    where the words before the colon open a clause or name a person)."""
    out: list[tuple[int, int]] = []
    last: list[str] = []  # the words of the sequence being joined
    subtitled = False  # whether it may take a subtitle: not at a clause start, no known person in it
    for match in CAPSEQ_RE.finditer(text):
        tokens = match.group(0).split()
        if out:
            between = text[out[-1][1] : match.start()]
            nxt = tokens[0]
            opens = nxt.lower() in STOPWORDS and nxt not in SUBTITLE_ARTICLES
            # "J.K" then ". Rowling", or a single initial after a name ("John F. Kennedy", "George R. R. Martin")
            initial = INITIALS_RE.fullmatch(last[-1]) or (len(last) > 1 and re.fullmatch(r"[A-Z]", last[-1]))
            initials = between == ". " and initial and not opens
            subtitle = (
                between == ": "
                and subtitled
                and not (opens or (nxt in NOT_NAMES and nxt not in SUBTITLE_ARTICLES))
                and (nxt not in SUBTITLE_ARTICLES or len(tokens) > 1)
            )
            if initials or subtitle:
                out[-1] = (out[-1][0], match.end())
                last = [*last[-1:], *tokens]  # what the next join looks at: the last words only
                subtitled = subtitled and not _names_a_person(tokens, names)
                continue
        out.append((match.start(), match.end()))
        last = tokens
        subtitled = not _at_clause_start(text, match.start()) and not _names_a_person(tokens, names)
    return [(start, text[start:end] + ("." if _initials_end(text, end) else "")) for start, end in out]


def _names_a_person(tokens: list[str], names: NameBook | None) -> bool:
    """Some word of a capitalised sequence is a known person's name."""
    return bool(names and any(names.is_known(w) for w in tokens))


def _initials_end(text: str, end: int) -> bool:
    """Initials that end a sequence keep their period ("the U.S."): CAPSEQ_RE stops before it."""
    return text[end : end + 1] == "." and bool(INITIALS_RE.fullmatch(text[max(0, end - 3) : end]))


def _quoted_titles(text: str) -> list[tuple[int, str, int]]:
    """(start, title, end of the quotation) for each quotation that is a title of two words or more
    ("Becoming Nicole", 'Connected LGBTQ Activists', "Charlotte's Web", "Cyberpunk 2077"): whole, so that
    no word of it is read as a name alone."""
    out: list[tuple[int, str, int]] = []
    for match in QUOTED_RE.finditer(text):
        title = next(g for g in match.groups() if g is not None).strip().rstrip(".,;:!?")
        words = title.split()
        if (
            len(words) >= 2
            and title[:1].isupper()
            and all(w[:1].isupper() or w[:1].isdigit() or w in TITLE_MINOR_WORDS for w in words)
        ):
            # Without its article, as a name found outside quotes is ("Lord of the Rings" either way).
            if words[0] in ("The", "A", "An"):
                title = title.split(None, 1)[1]
            out.append((match.start() + match.group(0).index(title), title, match.end()))
    return out


def _pieces(sequence: str, start: int, names: NameBook | None) -> list[tuple[int, list[str]]]:
    """A capitalised sequence cut before each known person name in it, unless it is one known name: the
    writer puts a speaker's name where they said "I", so "Now I ..." becomes "Now Caroline ..." and "reminded
    me of my ..." "reminded Caroline of Caroline's ..."; neither is one name."""
    tokens = sequence.split()
    offsets: list[int] = []
    cursor = start
    for token in tokens:
        cursor = sequence.index(token, cursor - start) + start
        offsets.append(cursor)
        cursor += len(token)
    if names is None or len(tokens) < 2 or sequence in names.known:
        return [(start, tokens)]
    cuts = [0] + [i for i, token in enumerate(tokens) if i > 0 and names.is_known(token)]
    return [(offsets[a], tokens[a:b]) for a, b in zip(cuts, [*cuts[1:], len(tokens)], strict=True)]


CLAUSE_CUE_WINDOW = 12  # characters before a word that hold CLAUSE_START_RE's longest cue (" says")


def _at_clause_start(text: str, start: int) -> bool:
    """True when the word at `start` opens a sentence or a clause, where any word is capitalised. Only the
    few characters before it are read: a long sentence has a capitalised word for every few characters."""
    cue_end = len(text[:start].rstrip())
    if cue_end == 0:
        return True
    return bool(CLAUSE_START_RE.search(text, max(0, cue_end - CLAUSE_CUE_WINDOW), start))


def _name_part(
    text: str, start: int, tokens: list[str], clause_start: bool, names: NameBook | None
) -> tuple[int, list[str]]:
    """The part of a capitalised piece that may be a name, and where it starts: leading words that are not
    names dropped (pronouns, months, function words, a word capitalised only by its place in the sentence),
    trailing ones too; no tokens when nothing is left."""
    while tokens and (
        tokens[0] in NOT_NAMES
        or (tokens[0].lower() in STOPWORDS and not _name_word(tokens, clause_start, names))
        or (clause_start and len(tokens) > 1 and _plain_word(tokens[0], names) and _names_alone(tokens[1], names))
    ):
        start = text.find(tokens[1], start + len(tokens[0])) if len(tokens) > 1 else start
        tokens = tokens[1:]
        clause_start = False
    while tokens and (tokens[-1] in NOT_NAMES or tokens[-1].lower() in {"of", "de", "the", "and", "for"}):
        tokens = tokens[:-1]
    if not tokens or (len(tokens[0]) < 2 and not tokens[0].isupper()):
        return start, []
    if len(tokens) == 1:
        word = tokens[0]
        if word.lower() in STOPWORDS | FILLER_WORDS or _shouted(word, names):
            return start, []
        # One word at the start of a clause is a name only with a reason: a known person, a place, or a
        # word the batch capitalises inside sentences and never writes in lower case ("Max").
        if clause_start and not (
            (names and names.is_known(word))
            or word in PLACES
            or (names and word in names.inner_capitals and word.lower() not in names.lower_words)
        ):
            return start, []
    return start, tokens


def _name_word(tokens: list[str], clause_start: bool, names: NameBook | None) -> bool:
    """True for a function word that is the first word of a name ("Under Armour"): capitalised inside a
    sentence, with more of the name after it (not a known person's name)."""
    return bool(names and not clause_start and len(tokens) > 1 and not names.is_known(tokens[1]))


def _plain_word(word: str, names: NameBook | None) -> bool:
    """True for a word the batch writes in lower case and never capitalises inside a sentence ("Adding",
    "Definitely"), and which is no known name or place: at a clause start it is not part of a name."""
    return bool(
        names
        and word.lower() in names.lower_words
        and word not in names.inner_capitals
        and not names.is_known(word)
        and word not in PLACES
    )


def _names_alone(word: str, names: NameBook | None) -> bool:
    """True when `word` may start a name by itself: a known person, a place, an acronym, or a word the
    batch capitalises inside sentences."""
    return bool(word in PLACES or word.isupper() or (names and (names.is_known(word) or word in names.inner_capitals)))


def _shouted(word: str, names: NameBook | None) -> bool:
    """An ordinary word in capitals for emphasis ("it's INTENSE"), not an acronym: the batch writes it in
    lower case too."""
    return bool(names and len(word) > 3 and word.isupper() and word.lower() in names.lower_words)


# Words before "to" that make it the "to" of a person, not of a place: "said goodbye to Max", "talked to Max",
# "gave it to Max", "next to Max".
TO_SOMEONE_WORDS = word_set(
    """goodbye bye hello hi talk talked talking speak spoke speaking say said saying says gave give given giving
    sent send sending wrote write writing introduced introduce married engaged listen listened listening close
    closer next thanks thank grateful kind nice mean belongs belonged belong it them this that him her one
    letter message note gift present tribute dedicated"""
)

# Verbs whose thing given comes before the "to" of the one it goes to: "gave the ball to Max".
GIVING_VERBS = word_set(
    """gave give given giving gives sent send sends sending handed hand lent lend showed show passed sold sell
    taught teach mailed wrote write introduced"""
)


def _classify_name(name: str, before: str, names: NameBook | None, after: str = "") -> str:
    """Entity type of a capitalised name from suffix / keyword cues and the words around it."""
    tokens = name.split()
    if any(t in ORG_WORDS for t in tokens[1:]) or tokens[0] in ("University", "Bank", "College"):
        return "organization"
    if (
        all(t in PLACES for t in tokens)
        or any(t in LOCATION_WORDS for t in tokens[1:])
        or tokens[0] in ("Lake", "Mount", "Mt")
    ):
        return "location"
    if tokens[0] in NATIONALITIES:
        return "concept"
    if names and (name in names.known or names.is_known(tokens[0])):
        return "person"
    if ":" in name:
        return "concept"  # a title and its subtitle ("a game called Counter-Strike: Global Offensive")
    if before.endswith(('"', "\u201c", "'")):
        return "concept"  # the start of a quotation is a title ('a piece called "Finding Freedom'), not a person
    previous = WORD_RE.findall(before.lower()[-30:])
    prev = previous[-1] if previous else ""
    if prev in PERSON_CUES and len(tokens) <= 3:
        return "person"
    # "to" names a place after a verb of going, not after one of saying or giving ("goodbye to Max"), and
    # never before a possessive ("went to Max's house": Max owns the place).
    dative = prev == "to" and (
        (len(previous) > 1 and previous[-2] in TO_SOMEONE_WORDS) or bool(GIVING_VERBS & set(previous[-5:-1]))
    )
    owner = after.startswith(("'s", "\u2019s"))
    if len(tokens) == 1 and prev in LOCATION_PREPOSITIONS and not tokens[0].isupper() and not (dative or owner):
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
