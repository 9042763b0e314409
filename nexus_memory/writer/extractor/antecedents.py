"""Who he/she/him/her points to: the one person the episode named last, when it named exactly one.

"I think she's calling tomorrow" says nothing on its own. When the sentences before it (this message's,
then the two messages before it) name people, the nearest sentence that names anyone decides: if it names
exactly one person besides the speaker and the one spoken to who may be meant, the pronoun is that person
("Sam Rivera thinks Jess is calling tomorrow"); if it names several, or someone who is only maybe a person or
no name a fact can use ("Matt Patterson", a capitalised first word "Priya invited us"), or nobody is named
that close, the sentence is kept as said. Whom the text says is a man or a woman ("my sister", "a guy", or
a "he" that named them) is never meant by a pronoun of the other gender; a name says no gender.
A sentence that names someone before its pronoun stands alone, inside one clause ("My dad sold his car");
a pronoun in a later clause is named when the clauses before it name exactly one person ("My aunt helped
us, so I'm inspired by her"), as the sentence is split at its clauses. The first pronoun of each later
clause is named too, while no one else is named between. One whose pronoun was named passes that person on
("She's into gardening" after "Mom's birthday ..." names Mom for the next "she").
"They" is left alone: in messages it points to things and groups ("they have Thursday at 6" is the
restaurant) far more often than to one person.

People are: names the episode knows (senders, introductions), a name after a person word ("my brother
Dev"), a name given ("Her name's Coco"), a name beside a person word ("someone named David", "this woman,
Jean,"), a capitalised word that acts as a subject ("did Jess book", "Dana grabbed me"), kin ("Mom", "my
sister" -> "<speaker>'s sister"), and someone met ("a little girl" -> "the girl"). Not people: a question
word ("How is she doing?"), a common word opening its sentence ("Things have been"), a capitalised word after
a determiner ("this Finals game").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from nexus_memory.core.words import word_set
from nexus_memory.writer.extractor.names import NameBook
from nexus_memory.writer.extractor.text import finite_verb
from nexus_memory.writer.extractor.words import (
    ADVERBS,
    IMPERATIVE_VERBS,
    KIN_WORDS,
    LOCATION_PREPOSITIONS,
    LOCATION_WORDS,
    NATIONALITIES,
    NOT_NAMES,
    ORG_WORDS,
    PERSON_CUES,
    PLACES,
    PRESENT_VERBS,
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
# Words for people that say whether they are a woman or a man: only what the text says decides a pronoun's gender,
# never a name ("he" cannot be "my sister", and may be "Sam").
FEMININE_WORDS = word_set(
    "mom mum mother sister wife daughter grandma grandmother aunt niece girlfriend fiancee girl woman lady"
)
MASCULINE_WORDS = word_set(
    "dad father brother husband son grandpa grandfather uncle nephew boyfriend fiance boy man guy"
)
# Capitalised words that open a question, never a person ("How is she doing?" is no one called How).
WH_WORDS = word_set("What Where When Why Who Whom Whose Which How")
# Words after which a capitalised word is a title or a team, not a person ("this Finals game", "the Wolves").
DETERMINERS = word_set("the this that these those a an")
# Where a clause starts inside a sentence: a comma, a semicolon, a colon or a dash.
CLAUSE_BREAK_RE = re.compile(r"[,;:\u2013\u2014]|\s-\s")
# "my sister", "your dad", "Mom", "mom": kin as the people they are ("her sister" is someone else's).
KIN_RE = re.compile(
    r"(?<!\bher )(?<!\bhis )(?<!\bthe )(?<!\btheir )(?<!\bour )(?<!['\u2019]s )"
    rf"\b(?:(?P<owner>[Mm]y|[Yy]our)\s+)?(?P<kin>(?i:{'|'.join(sorted(KIN_WORDS))}))\b(?!\s+[A-Z])"
)
BARE_KIN = frozenset({"mom", "mum", "dad"})  # kin said without "my" as a name ("did you buy mom's gift")
# A name after a person word: "my brother Dev", "friend Tiago".
CUED_NAME_RE = re.compile(rf"\b(?:{'|'.join(sorted(PERSON_CUES))})\s+(?P<name>[A-Z][a-z]+)\b")
# A name said to be someone's ("Her name's Coco", "his name is Kyle"): whom a later he/she may mean.
GIVEN_NAME_RE = re.compile(r"\bname(?:['\u2019]s|\s+is|\s+was)\s+(?P<name>[A-Z][a-z]+)\b")
# A capitalised word with the words around it, to tell a subject ("Dana grabbed") from a place or a title.
CAPITALISED_RE = re.compile(r"(?<![\w'\u2019-])(?P<word>[A-Z][a-z]+)(?:['\u2019]s)?(?![\w'\u2019-])")
# Words for a person that give no name: a sentence with one names someone the pronoun may mean.
PERSON_NOUNS = word_set(
    "girl boy man woman guy lady kid child baby person someone somebody stranger neighbor neighbour teacher "
    "coach doctor friend youngest oldest"
)
MAYBE_PERSON_RE = re.compile(rf"\b(?i:{'|'.join(sorted(PERSON_NOUNS))})\b")
# Person words that "a"/"this" introduces as someone met ("a little girl around 8", "this guy at the gym"), whom
# a later he/she may mean as "the girl"; "someone", "a friend" or "my youngest" say no one a reader can pick out.
MET_NOUNS = word_set("girl boy man woman guy lady kid child baby stranger")
INDEFINITE_BEFORE_RE = re.compile(r"\b(?:a|an|this)\s+(?:[a-z]+\s+){0,2}$", re.IGNORECASE)
# A person word and the name that says who it is ("someone named David", "this amazing woman, Jean, who"): one
# person, whose name a fact can use. The name ends its clause, so "my friend, Jess said" is not one.
APPOSITIVE_RE = re.compile(
    rf"\b(?i:{'|'.join(sorted(PERSON_NOUNS))})(?:\s*,\s*|\s+(?:named|called)\s+)"
    r"(?P<name>[A-Z][a-z]+)(?=\s*(?:[,.!?;]|$|\s+who\b))"
)
INVERSION_WORDS = frozenset({"did", "does", "do", "is", "was", "has", "will", "can", "could", "would", "should"})
# "my youngest", "your friend": a person named by whose they are, who a later pronoun may mean.
OWNED_RE = re.compile(r"\b(?:my|your|our)\s+\w+", re.IGNORECASE)
# Verbs whose object is followed by a bare verb ("help her find", "let him know", "watched her grow").
BARE_VERB_TAKERS = word_set(
    "help helps helped helping let lets letting make makes made making watch watches watched watching see sees saw "
    "seeing hear hears heard hearing"
)
HAS_PARTICIPLES = frozenset({"been", "got", "gotten", "had", "done", "seen", "made", "gone"})


@dataclass(frozen=True)
class _Person:
    """Someone a sentence names: how a fact should say it, and whether it is kin or only maybe a person."""

    name: str
    kin: bool = False  # "Sam Rivera's sister": never the speaker, whatever the first word
    maybe: bool = False  # "a little girl", "Matt Patterson": someone, but not a name a fact can use
    feminine: bool | None = None  # what the text says ("my sister", or a "she" that named them), else unknown


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
    # Names given to someone ("Her name's Coco"): people for a pronoun, but not names the rest of the writer
    # knows, so "Her name is Shadow" still reads "<speaker> said her name is Shadow".
    given: set[str] = field(default_factory=set)

    def next_message(self) -> None:
        self.message += 1

    def record(self, sentence: str, speaker: str, peer: str | None) -> None:
        """Remember the people a sentence names (every sentence, questions too: "did Jess book it?"); a
        he/she in it that points back keeps pointing at the same person ("She's into gardening" is Mom's)."""
        for name in CUED_NAME_RE.findall(sentence):
            self.names.add_known(name)
        self.given.update(GIVEN_NAME_RE.findall(sentence))
        unit = _Unit(self.message, sentence, speaker, peer)
        pronoun = THIRD_PERSON_RE.search(sentence)
        if pronoun and not self._stands_alone(sentence[: pronoun.start()], speaker, peer):
            feminine = pronoun.group("pro").lower() in FEMININE
            person = self._antecedent(speaker, peer, feminine)
            unit.people = [_Person(person.name, person.kin, feminine=feminine)] if person else None
        self.units.append(unit)

    def people(self, text: str, speaker: str, peer: str | None) -> list[_Person]:
        """The people a text names besides the speaker and the one spoken to."""
        found: dict[str, _Person] = {}
        for match in KIN_RE.finditer(text):
            owner, kin = match.group("owner"), match.group("kin")
            feminine = _gender(kin)
            if owner is None and kin[0].isupper():
                found.setdefault(kin.lower(), _Person(kin, feminine=feminine))  # "Mom" as a name
            elif owner is None and kin.lower() not in BARE_KIN:
                continue
            elif owner is None or owner.lower() == "my":
                name = f"{speaker}'s {kin.lower()}"
                found.setdefault(name, _Person(name, kin=True, feminine=feminine))
            elif peer:
                name = f"{peer}'s {kin.lower()}"
                found.setdefault(name, _Person(name, kin=True, feminine=feminine))
        named = {m.group("name"): m.start() for m in APPOSITIVE_RE.finditer(text)}  # name -> its person word
        for match in CAPITALISED_RE.finditer(text):
            word = match.group("word")
            if word.lower() in found:
                continue
            if word in named and not self._not_a_name(word):
                found[word.lower()] = _Person(word)
            elif kind := self._person_kind(match, text):
                found[word.lower()] = _Person(word, maybe=kind == "maybe")
        for match in MAYBE_PERSON_RE.finditer(text):
            if match.start() not in named.values():  # "someone" of "someone named David" is David
                word = match.group(0)
                # "a little girl" is met here: "the girl" is how a later sentence can say whom it means.
                met = word.lower() in MET_NOUNS and INDEFINITE_BEFORE_RE.search(
                    text[max(0, match.start() - 40) : match.start()]
                )
                person = _Person(f"the {word.lower()}") if met else _Person(word, maybe=True)
                found.setdefault(word.lower(), replace(person, feminine=_gender(word)))
        return self._others(list(found.values()), speaker, peer)

    def _not_a_name(self, word: str) -> bool:
        """A capitalised word that never names a person: a title, a month, a question word, a place, a
        nationality, kin, an organisation or a location word."""
        return (
            word in NOT_NAMES
            or word in WH_WORDS
            or word in PLACES
            or word in NATIONALITIES
            or word.lower() in KIN_WORDS
            or word in ORG_WORDS
            or word in LOCATION_WORDS
        )

    def _person_kind(self, match: re.Match[str], text: str) -> str | None:
        """'name' for a known name or a capitalised word that acts as a subject inside a sentence ("did Jess
        book", "Dana grabbed me"); 'maybe' for any other capitalised word that may name someone ("Priya
        invited us", "Jess and Rob"); None for places, titles, months, nationalities and organisations."""
        word = match.group("word")
        if self._not_a_name(word):
            return None
        if self.names.is_known(word) or word in self.given:
            return "name"
        before = WORD_RE.findall(text[: match.start()])
        after = WORD_RE.findall(text[match.end() :])
        if not before and word.lower() in self.names.bare_lower_words:
            return None  # a common word opening its sentence: the batch writes it bare in lower case ("Things have")
        if before and before[-1].lower() in DETERMINERS:
            return None  # "this Finals game", "the Wolves"
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
        """The sentence with its first he/she/him/her/his named, when one person is the antecedent: the one
        person an earlier clause of the same sentence names ("My aunt helped us, so I'm inspired by her"), or,
        when nothing before the pronoun names anyone, the one person of the nearest earlier sentence that does."""
        pronouns = list(THIRD_PERSON_RE.finditer(sentence))
        if not pronouns or len({p.group("pro").lower() in FEMININE for p in pronouns}) > 1:
            return sentence
        first = pronouns[0]
        feminine = first.group("pro").lower() in FEMININE
        before = sentence[: first.start()]
        if self._stands_alone(before, speaker, peer):
            person = self._in_clause_before(before, speaker, peer, feminine)
        else:
            person = self._antecedent(speaker, peer, feminine)
        if person is None:
            return sentence
        # The first pronoun of each later clause is the same person while no one else is named between: the
        # sentence is split at its clauses, and "but she's making progress" alone says nothing.
        named = [first]
        for pronoun in pronouns[1:]:
            between = sentence[named[-1].end() : pronoun.start()]
            if self._stands_alone(sentence[first.end() : pronoun.start()], speaker, peer):
                break
            if CLAUSE_BREAK_RE.search(between):
                named.append(pronoun)
        for pronoun in reversed(named):
            sentence = sentence[: pronoun.start()] + _named(pronoun, person.name) + sentence[pronoun.end() :]
        return sentence

    def _in_clause_before(self, before: str, speaker: str, peer: str | None, feminine: bool) -> _Person | None:
        """The one person the clauses before the pronoun's own clause name, when they name exactly one who
        may be meant and its own clause names no one. A sentence is split into its clauses later, and "so I'm
        inspired by her" alone says nothing; inside one clause ("My dad sold his car") the sentence reads as
        it is and is left so."""
        breaks = list(CLAUSE_BREAK_RE.finditer(before))
        if not breaks or self._stands_alone(before[breaks[-1].end() :], speaker, peer):
            return None
        return _one(self.people(before[: breaks[-1].start()], speaker, peer), feminine)

    def _stands_alone(self, before: str, speaker: str, peer: str | None) -> bool:
        """Someone may be named before the pronoun ("Jess gave me your number, she said ..."): a person, a
        capitalised word (a sentence's first only before its verb: "Jess gave", not "If she"), or "my X"."""
        words = WORD_RE.findall(before)
        capitalised = [
            w
            for i, w in enumerate(words)
            if w[:1].isupper()
            and w not in NOT_NAMES
            and w not in WH_WORDS
            and (i or (len(words) > 1 and finite_verb(words[1].lower()) and not self._common_opener(w)))
        ]
        return bool(self.people(before, speaker, peer) or capitalised or OWNED_RE.search(before))

    def _common_opener(self, word: str) -> bool:
        """A sentence's first word that is a common word, not a name: the batch writes it bare in lower case."""
        return not self.names.is_known(word) and word.lower() in self.names.bare_lower_words

    def _antecedent(self, speaker: str, peer: str | None, feminine: bool) -> _Person | None:
        """The one person of the nearest sentence that names anyone, within the look-back; else None."""
        for unit in reversed(self.units):
            if unit.message < self.message - LOOKBACK_EVENTS:
                return None
            if unit.people is None:
                unit.people = self.people(unit.sentence, unit.speaker, unit.peer)
            people = self._others(unit.people, speaker, peer)
            if people:
                return _one(people, feminine)
        return None

    def _others(self, people: list[_Person], speaker: str, peer: str | None) -> list[_Person]:
        """The people who are neither the speaker nor the one spoken to (by first name or its nickname)."""
        own = [name.split()[0] for name in (speaker, peer) if name]
        return [p for p in people if p.kin or not any(_same_name(p.name.split()[0], o) for o in own)]


def _gender(word: str) -> bool | None:
    """True for a word that says a woman ("sister"), False for one that says a man ("dad"), else None."""
    low = word.lower()
    return True if low in FEMININE_WORDS else False if low in MASCULINE_WORDS else None


def _one(people: list[_Person], feminine: bool) -> _Person | None:
    """The one person of `people` a he (`feminine` False) or a she may mean, when that is one with a name a fact
    can use. Whom the text says is of the other gender is never meant ("my dad and my sister ... she" is the
    sister); two who may be are never guessed between ("my dad and my brother ... he")."""
    fitting = [p for p in people if p.feminine is None or p.feminine == feminine]
    return fitting[0] if len(fitting) == 1 and not fitting[0].maybe else None


def _object_her(match: re.Match[str], nxt: str) -> bool:
    """The "her" of `match`, followed by `nxt`, is an object, not a possessive: a function word or an adverb
    follows ("for her lately"), or a bare verb after a verb that takes one ("helping her find a place")."""
    if nxt in STOPWORDS or nxt in ADVERBS or (nxt.endswith("ly") and len(nxt) > 4):
        return True
    before = WORD_RE.findall(match.string[max(0, match.start() - 20) : match.start()])
    return bool(before) and before[-1].lower() in BARE_VERB_TAKERS and nxt in PRESENT_VERBS | IMPERATIVE_VERBS


def _same_name(word: str, name: str) -> bool:
    """'Sam' and 'Sam', or a nickname and the name it starts ('Mel' and 'Melanie')."""
    short, long = sorted((word.lower(), name.lower()), key=len)
    return short == long or (len(short) >= 3 and long.startswith(short))


def _named(match: re.Match[str], name: str) -> str:
    """The pronoun of `match` (with its contraction and the word after it) said with the name."""
    pro = match.group("pro").lower()
    con = (match.group("con") or "").replace("\u2019", "'")
    after = match.group("after") or ""
    if match.group("pro")[:1].isupper():
        name = name[:1].upper() + name[1:]  # "She had to leave" -> "The girl had to leave"
    nxt = (match.group("next") or "").lower()
    if pro in ("his", "hers") or (pro == "her" and nxt and not _object_her(match, nxt)):
        return f"{name}'s{after}"  # "her backyard" -> "Mom's backyard"
    if con == "'s":
        return f"{name} {'has' if nxt in HAS_PARTICIPLES else 'is'}{after}"
    if con == "'ll":
        return f"{name} will{after}"
    if con == "'d":
        return f"{name} would{after}"
    return f"{name}{after}"
