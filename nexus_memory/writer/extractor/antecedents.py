"""Who he/she/him/her points to: the one person the episode named last, when it named exactly one.

"I think she's calling tomorrow" says nothing on its own. When the sentences before it (this message's,
then the two messages before it) name people, the nearest sentence that names anyone decides: if it names
exactly one person besides the speaker and the one spoken to, the pronoun is that person ("Sam Rivera
thinks Jess is calling tomorrow"); if it names several, or someone who is only maybe a person or no name a
fact can use ("a little girl", "Matt Patterson", a capitalised first word "Priya invited us"), or nobody
is named that close, the sentence is kept as said. A sentence that names someone before its pronoun already
stands alone and is left as it is; one whose pronoun was named passes that person on ("She's into
gardening" after "Mom's birthday ..." names Mom for the next "she").
"They" is left alone: in messages it points to things and groups ("they have Thursday at 6" is the
restaurant) far more often than to one person.

People are: names the episode knows (senders, introductions), a name after a person word ("my brother
Dev"), a capitalised word that acts as a subject ("did Jess book", "Dana grabbed me"), and kin ("Mom",
"my sister" -> "<speaker>'s sister").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nexus_memory.core.words import word_set
from nexus_memory.writer.extractor.names import NameBook
from nexus_memory.writer.extractor.text import finite_verb
from nexus_memory.writer.extractor.words import (
    KIN_WORDS,
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

LOOKBACK_EVENTS = 2  # messages before this one whose sentences a pronoun may point into
# he/she/him/her/his/hers with a contraction and the word after it (for "she's been" -> "Jess has been").
THIRD_PERSON_RE = re.compile(
    r"(?<![\w'\u2019-])(?P<pro>[Hh]e|[Ss]he|[Hh]im|[Hh]er|[Hh]is|[Hh]ers)"
    r"(?P<con>['\u2019](?:s|ll|d))?(?![\w'\u2019-])(?P<after>\s+(?P<next>[\w'\u2019]+))?"
)
FEMININE = frozenset({"she", "her", "hers"})
# "my sister", "your dad", "Mom", "mom": kin as the people they are ("her sister" is someone else's).
KIN_RE = re.compile(
    r"(?<!\bher )(?<!\bhis )(?<!\bthe )(?<!\btheir )(?<!\bour )(?<!['\u2019]s )"
    rf"\b(?:(?P<owner>[Mm]y|[Yy]our)\s+)?(?P<kin>(?i:{'|'.join(sorted(KIN_WORDS))}))\b(?!\s+[A-Z])"
)
BARE_KIN = frozenset({"mom", "mum", "dad"})  # kin said without "my" as a name ("did you buy mom's gift")
# A name after a person word: "my brother Dev", "friend Tiago".
CUED_NAME_RE = re.compile(rf"\b(?:{'|'.join(sorted(PERSON_CUES))})\s+(?P<name>[A-Z][a-z]+)\b")
# A capitalised word with the words around it, to tell a subject ("Dana grabbed") from a place or a title.
CAPITALISED_RE = re.compile(r"(?<![\w'\u2019-])(?P<word>[A-Z][a-z]+)(?:['\u2019]s)?(?![\w'\u2019-])")
# Words for a person that give no name: a sentence with one names someone the pronoun may mean.
PERSON_NOUNS = word_set(
    "girl boy man woman guy lady kid child baby person someone somebody stranger neighbor neighbour teacher "
    "coach doctor friend youngest oldest"
)
MAYBE_PERSON_RE = re.compile(rf"\b(?i:{'|'.join(sorted(PERSON_NOUNS))})\b")
INVERSION_WORDS = frozenset({"did", "does", "do", "is", "was", "has", "will", "can", "could", "would", "should"})
# "my youngest", "your friend": a person named by whose they are, who a later pronoun may mean.
OWNED_RE = re.compile(r"\b(?:my|your|our)\s+\w+", re.IGNORECASE)
HAS_PARTICIPLES = frozenset({"been", "got", "gotten", "had", "done", "seen", "made", "gone"})


@dataclass(frozen=True)
class _Person:
    """Someone a sentence names: how a fact should say it, and whether it is kin or only maybe a person."""

    name: str
    kin: bool = False  # "Sam Rivera's sister": never the speaker, whatever the first word
    maybe: bool = False  # "a little girl", "Matt Patterson": someone, but not a name a fact can use


@dataclass
class _Unit:
    """A sentence of the episode, and the people it names once a pronoun has looked back at it."""

    message: int
    sentence: str
    speaker: str
    peer: str | None
    people: list[_Person] | None = None


@dataclass
class Antecedents:
    """The people each sentence of the episode named, in order, to resolve he/she in later sentences."""

    names: NameBook
    units: list[_Unit] = field(default_factory=list)
    message: int = 0

    def next_message(self) -> None:
        self.message += 1

    def record(self, sentence: str, speaker: str, peer: str | None) -> None:
        """Remember the people a sentence names (every sentence, questions too: "did Jess book it?"); a
        he/she in it that points back keeps pointing at the same person ("She's into gardening" is Mom's)."""
        for name in CUED_NAME_RE.findall(sentence):
            self.names.add_known(name)
        unit = _Unit(self.message, sentence, speaker, peer)
        pronoun = THIRD_PERSON_RE.search(sentence)
        if pronoun and not self._stands_alone(sentence[: pronoun.start()], speaker, peer):
            name = self._antecedent(speaker, peer)
            unit.people = [_Person(name)] if name else None
        self.units.append(unit)

    def people(self, text: str, speaker: str, peer: str | None) -> list[_Person]:
        """The people a text names besides the speaker and the one spoken to."""
        found: dict[str, _Person] = {}
        for match in KIN_RE.finditer(text):
            owner, kin = match.group("owner"), match.group("kin")
            if owner is None and kin[0].isupper():
                found.setdefault(kin.lower(), _Person(kin))  # "Mom" as a name
            elif owner is None and kin.lower() not in BARE_KIN:
                continue
            elif owner is None or owner.lower() == "my":
                found.setdefault(f"{speaker}'s {kin.lower()}", _Person(f"{speaker}'s {kin.lower()}", kin=True))
            elif peer:
                found.setdefault(f"{peer}'s {kin.lower()}", _Person(f"{peer}'s {kin.lower()}", kin=True))
        for match in CAPITALISED_RE.finditer(text):
            word = match.group("word")
            if word.lower() not in found and (kind := self._person_kind(match, text)):
                found[word.lower()] = _Person(word, maybe=kind == "maybe")
        for match in MAYBE_PERSON_RE.finditer(text):
            found.setdefault(match.group(0).lower(), _Person(match.group(0), maybe=True))
        return self._others(list(found.values()), speaker, peer)

    def _person_kind(self, match: re.Match[str], text: str) -> str | None:
        """'name' for a known name or a capitalised word that acts as a subject inside a sentence ("did Jess
        book", "Dana grabbed me"); 'maybe' for any other capitalised word that may name someone ("Priya
        invited us", "Jess and Rob"); None for places, titles, months, nationalities and organisations."""
        word = match.group("word")
        if word in NOT_NAMES or word in PLACES or word in NATIONALITIES or word.lower() in KIN_WORDS:
            return None
        if word in ORG_WORDS or word in LOCATION_WORDS:
            return None
        if self.names.is_known(word):
            return "name"
        before = WORD_RE.findall(text[: match.start()])
        after = WORD_RE.findall(text[match.end() :])
        if before and before[-1][:1].isupper():
            return None  # the rest of a longer name: its first word decides ("Redwood Health" after "at")
        nxt = after[0].lower() if after else ""
        if before and before[-1].lower() in LOCATION_PREPOSITIONS | {"at", "on"}:
            return None  # "moved to Alameda", "at Redwood Health"
        if (after and after[0][:1].isupper()) or (nxt in ("and", "or") and after[1:2] and after[1][:1].isupper()):
            return "maybe"  # a longer name ("Matt Patterson") or one of several ("Jess and Rob")
        if match.group(0).endswith("s") and match.group(0) != word:
            # "Dev's coming" is Dev; "Lucia's has nothing", "Lucia's yet" are Lucia's place.
            return "name" if nxt.endswith("ing") and before else None
        inverted = bool(before) and before[-1].lower() in INVERSION_WORDS and bool(nxt) and nxt not in STOPWORDS
        if not (finite_verb(nxt) or inverted):
            return None if not before else "maybe"  # a sentence's first word is capitalised anyway ("Gift ideas")
        return "name" if before else "maybe"  # "Priya invited us" opens its sentence: a name, or "Dinner was"

    def resolve(self, sentence: str, speaker: str, peer: str | None) -> str:
        """The sentence with its first he/she/him/her/his named, when one person is the antecedent."""
        pronouns = list(THIRD_PERSON_RE.finditer(sentence))
        if not pronouns or len({p.group("pro").lower() in FEMININE for p in pronouns}) > 1:
            return sentence
        first = pronouns[0]
        if self._stands_alone(sentence[: first.start()], speaker, peer):
            return sentence
        name = self._antecedent(speaker, peer)
        if name is None:
            return sentence
        return sentence[: first.start()] + _named(first, name) + sentence[first.end() :]

    def _stands_alone(self, before: str, speaker: str, peer: str | None) -> bool:
        """Someone may be named before the pronoun ("Jess gave me your number, she said ..."): a person, a
        capitalised word (a sentence's first only before its verb: "Jess gave", not "If she"), or "my X"."""
        words = WORD_RE.findall(before)
        capitalised = [
            w
            for i, w in enumerate(words)
            if w[:1].isupper() and w not in NOT_NAMES and (i or (len(words) > 1 and finite_verb(words[1].lower())))
        ]
        return bool(self.people(before, speaker, peer) or capitalised or OWNED_RE.search(before))

    def _antecedent(self, speaker: str, peer: str | None) -> str | None:
        """The one person of the nearest sentence that names anyone, within the look-back; else None."""
        for unit in reversed(self.units):
            if unit.message < self.message - LOOKBACK_EVENTS:
                return None
            if unit.people is None:
                unit.people = self.people(unit.sentence, unit.speaker, unit.peer)
            people = self._others(unit.people, speaker, peer)
            if people:
                only = people[0]
                return only.name if len(people) == 1 and not only.maybe else None
        return None

    def _others(self, people: list[_Person], speaker: str, peer: str | None) -> list[_Person]:
        """The people who are neither the speaker nor the one spoken to (by first name or its nickname)."""
        own = [name.split()[0] for name in (speaker, peer) if name]
        return [p for p in people if p.kin or not any(_same_name(p.name.split()[0], o) for o in own)]


def _same_name(word: str, name: str) -> bool:
    """'Sam' and 'Sam', or a nickname and the name it starts ('Mel' and 'Melanie')."""
    short, long = sorted((word.lower(), name.lower()), key=len)
    return short == long or (len(short) >= 3 and long.startswith(short))


def _named(match: re.Match[str], name: str) -> str:
    """The pronoun of `match` (with its contraction and the word after it) said with the name."""
    pro = match.group("pro").lower()
    con = (match.group("con") or "").replace("\u2019", "'")
    after = match.group("after") or ""
    nxt = (match.group("next") or "").lower()
    if pro in ("his", "hers") or (pro == "her" and nxt and nxt not in STOPWORDS):
        return f"{name}'s{after}"  # "her backyard" -> "Mom's backyard"
    if con == "'s":
        return f"{name} {'has' if nxt in HAS_PARTICIPLES else 'is'}{after}"
    if con == "'ll":
        return f"{name} will{after}"
    if con == "'d":
        return f"{name} would{after}"
    return f"{name}{after}"
