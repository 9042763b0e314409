"""Checking what the LLM writer would store against its episode, not only against the schema.

A document (or a tool call) can fit the schema and still be wrong about the episode. Each item is judged alone;
one that fails is dropped and counted under `<item>:<reason>` (a drop of one fact, never a failure
of the episode):

- a fact must cite a new event of its episode (`fact:unknown_source_ref`), say something
  (`fact:empty`), not be copied from the prompt's rendering (`fact:prompt_text`), not ask
  (`fact:question`, with or without its question mark, as the offline writer reads one) and not loop
  ("X is a leader, X is a leader, ...", `fact:repetitive`);
- what it names must appear in that event, the episode's other events and thread context, or their
  deliveryContext: a listed entity that its text also names (`fact:entity_not_in_episode`), or a
  capitalised name in its text (`fact:name_not_in_episode`). A listed entity its text does not name
  is only dropped from the fact (`entity:not_in_episode`): small models copy entities from the prompt's
  example, and the fact's words are judged by its text. Pronoun entities ("I", "you") stand for the
  speaker or the addressee;
- what it asserts must be in the event it cites (`facts/grounding.py`: its names and numbers, and
  enough of its content words, there or in the event's deliveryContext), in what the message states as the
  offline writer reads it (`own_statements`: not an email's headers, signature or quoted reply, not thanks,
  pleasantries or an errand of the moment); where another new event of
  the episode holds its words, the fact cites that one instead (`fixed["fact:recited"]`). A short reply
  is read with the question put to its sender just before (the offline writer's reading, `questions_put`): a
  fact may take words from both ("Melanie's pets are named Luna and Oliver" from "What are your pets' names?"
  and "Luna and Oliver!") when at least one of its own words is the reply's. A fact that no event holds is
  dropped (`fact:not_in_source`). One with two or more words of the prompt's own
  examples that the episode lacks is a few-shot example moved onto the speaker (`fact:prompt_example`);
- first-person words are rewritten to the speaker's name with the offline writer's
  `resolve_pronouns`, and a fact whose subject is a bare pronoun becomes "<speaker> said ...";
- "I" in a message is its sender: a fact that makes another participant the subject of what the
  sender said of themself ("Got it. I'll look for round trips" -> "Sam will look for round trips")
  gets the sender back (`fixed["fact:speaker_rewritten"]`); one that names a participant the message
  does not speak of, and cannot be given back, is dropped (`fact:wrong_speaker`);
- words stay with the handle (or the person the owner accepted for it): a fact that names its
  speaker by a name the speaker only claimed in a message is dropped (`fact:claimed_identity`);
- the tool loop's `insert_fact` is judged by the same rules (`EpisodeView.check`), answering the model
  with the reason;
- a fact has two times: when it was said (its event's) and the time it is about. The model may give the
  second (`about`: an ISO date, month, year or span); it is kept when it can be read, lies within
  ABOUT_PAST_MS before to ABOUT_AHEAD_MS after the message, and agrees with the dates the text names where it
  names some (overlaps the offline reading, which the stored text shows as "(on 28 February 2025)").
  Otherwise the offline date resolver's reading of the text is stored (`fixed["fact:about_from_text"]`), as
  it is for a time the prompt shows (its forms, its example's) given for a text that names no time: a small
  model copies "2024-06" onto every fact;
- a causal link needs two kept facts and a causal cue in their messages (`link:*`);
- an identity claim must be written in its message (`claim:*`); it becomes a merge proposal for
  review, never a merge.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nexus_memory.core.tooling import ToolError
from nexus_memory.events.ledger import Event
from nexus_memory.facts.about import about_span
from nexus_memory.facts.grounding import BORROWED_WORDS, Grounding, Source, date_words, example_text, names_in, terms
from nexus_memory.identity import store as identity
from nexus_memory.writer.base import EpisodeInput
from nexus_memory.writer.extractor import find_introductions, questions_put, read_dates, split_sentences
from nexus_memory.writer.extractor.causal import CAUSAL_INFIX, CAUSAL_LINK_PREV, CAUSAL_PREFIX
from nexus_memory.writer.extractor.dates import ANNOTATION_RE
from nexus_memory.writer.extractor.names import NameBook
from nexus_memory.writer.extractor.pronouns import resolve_pronouns
from nexus_memory.writer.extractor.sentences import asks, clean_sentence, is_informative, statement_in_question
from nexus_memory.writer.extractor.structure import read_message
from nexus_memory.writer.extractor.text import lower_first
from nexus_memory.writer.extractor.words import NOT_NAMES, STOPWORDS
from nexus_memory.writer.llm.model_tools import CheckedFact, FactDropped, ModelTools

ENTITY_TYPES = (
    "person",
    "organization",
    "location",
    "project",
    "product",
    "pet",
    "event",
    "email",
    "phone",
    "handle",
    "concept",
    "other",
)
CLAIM_TYPES = ("name", "email", "phone", "handle")
DEFAULT_STRENGTH = 0.7
_DAY_MS = 86_400_000
_YEAR_MS = 365 * _DAY_MS
# Sanity bounds of a model's about-time around its message, not a tuned threshold: a fact may be about a life
# ago (a grandparent's birth) or a plan decades ahead (a retirement); a model's 0001 or 2999 is neither.
ABOUT_PAST_MS = 100 * _YEAR_MS
ABOUT_AHEAD_MS = 30 * _YEAR_MS
MIN_WORDS = 2  # "2023-05-08T13:56:02Z" or "Yes." says nothing
REPEATS = 3  # a three-word run said this often is a looping model, not a fact
MAX_DROP_NOTES = 20  # examples kept for the run metadata; the counts are complete
FIRST_PERSON = frozenset(["i", "me", "my", "mine", "myself"])
SECOND_PERSON = frozenset(["you", "your", "yours", "yourself"])
OTHER_PRONOUNS = frozenset(["he", "she", "they", "it", "we", "him", "her", "them", "us", "his", "their", "its", "our"])
# A fact that opens with one of these has no named subject: "He chewed the shoes."
PRONOUN_SUBJECTS = frozenset(["he", "she", "they", "it", "we", "this", "that", "these", "those", "there"])
_NON_WORD = re.compile(r"[^\w@+.]+|(?<!\w)[.]|[.](?!\w)")
_WORDS = re.compile(r"[^\W\d_]{2,}")
_PROMPT_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
_THIRD_PERSON = re.compile(r"\b(?:he|she|him|her|his|hers|they|them|their)\b", re.IGNORECASE)
# An about-time as the prompts show its forms: "2024-06-14", "2024-06", "2024", "2024-04-29/2024-05-05".
_ABOUT_FORM = re.compile(r"(?<![\d-])\d{4}(?:-\d{2}){0,2}(?:/\d{4}(?:-\d{2}){0,2})?(?![\d/])")
_CAPITALISED = re.compile(r"(?<![\w'])(?!I\b)[A-Z][a-z]+(?:[A-Z][a-z]+)*(?![\w'])")


def _norm(text: str) -> str:
    """Lower-case words separated by single spaces (emails, handles and numbers kept whole)."""
    return " ".join(_NON_WORD.sub(" ", text.lower()).split())


def _mentions(haystack: str, name: str) -> bool:
    """True when `name` appears in the normalised `haystack` as whole words (any order for several)."""
    needle = _norm(name)
    if not needle:
        return False
    if f" {needle} " in f" {haystack} ":
        return True
    words = set(haystack.split())
    return len(needle.split()) > 1 and all(w in words for w in needle.split())


def says_cause(text: str) -> bool:
    """True when a message states a cause in a way the offline extractor recognises."""
    if any(pattern.search(text) for pattern, _side, _strength in CAUSAL_INFIX):
        return True
    sentences = split_sentences(text)
    return any(p.match(s) for s in sentences for p, _ in CAUSAL_PREFIX) or any(
        CAUSAL_LINK_PREV.match(s) for s in sentences
    )


@dataclass(frozen=True)
class PlannedEntity:
    name: str
    type: str
    speaker: Event | None = None  # set when the entity is a participant: link their delivery entity


@dataclass
class PlannedFact:
    number: int  # position in the document's `facts`, from 1 (causal links cite it)
    text: str
    event: Event
    as_of: int
    entities: list[PlannedEntity]
    about: tuple[int, int] | None = None


@dataclass(frozen=True)
class PlannedLink:
    cause: int
    effect: int
    strength: float


@dataclass(frozen=True)
class PlannedClaim:
    event: Event
    type: str
    value: str


@dataclass
class Plan:
    """What survives validation, and what was dropped and why."""

    facts: list[PlannedFact] = field(default_factory=list)
    links: list[PlannedLink] = field(default_factory=list)
    claims: list[PlannedClaim] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    drop_notes: list[str] = field(default_factory=list)
    fixed: Counter[str] = field(default_factory=Counter)  # facts kept after a correction, by '<item>:<fix>'

    def drop(self, kind: str, reason: str, detail: str) -> None:
        self.dropped[f"{kind}:{reason}"] += 1
        if len(self.drop_notes) < MAX_DROP_NOTES:
            self.drop_notes.append(f"{kind}:{reason}: {detail[:160]}")

    @property
    def facts_dropped(self) -> int:
        return sum(n for key, n in self.dropped.items() if key.startswith("fact:"))


def stored_grounding(text: str, event: Event, speaker: str, peer: str | None, named: Sequence[str] = ()) -> Grounding:
    """The grounding rule for a fact as stored: its date notes ("(on 7 May 2023)") are validation's own
    reading of the fact's relative dates (`annotate_relative_dates`), not the model's words."""
    return grounding_source(event, speaker, peer, named).ground(ANNOTATION_RE.sub("", text))


def grounding_source(
    event: Event,
    speaker: str,
    peer: str | None,
    named: Sequence[str] = (),
    asked: str = "",
    said: str | None = None,
) -> Source:
    """What a fact citing `event` may say: the message (or `said`, the part of it a fact may come from), and its
    deliveryContext (who speaks, to whom, where, when) as words a fact may use without the message saying them.
    `named`: the names the episode says, which a message speaking of "he" or "she" may mean; `asked`: the
    question the message answers, whose words a fact of the answer may use ('Melanie's pets are named Luna and
    Oliver')."""
    context = [speaker, peer or "", event.sender_id, event.peer_id or "", event.platform, date_words(event.as_of)]
    if _THIRD_PERSON.search(event.content):
        context += named
    return Source([event.content if said is None else said, asked], context)


def own_statements(content: str, names: NameBook | None = None) -> str:
    """What of a message a fact may come from, as the offline writer reads it: the sentences of the sender's own
    text (`read_message`: not an email's headers, quoted reply or signature) that state something
    (`is_informative`: not a pleasantry, thanks, a request or errand of the moment, filler), and what a question
    states ("Jess said you're looking for a belay partner?")."""
    kept = []
    for sentence in split_sentences(read_message(content).body):
        statement = statement_in_question(sentence) if sentence.rstrip().endswith("?") else sentence
        cleaned = clean_sentence(statement, names)[0] if statement else ""
        if cleaned and is_informative(cleaned, names):
            kept.append(sentence)
    return "\n".join(kept)


class EpisodeView:
    """What validation knows of an episode: its refs, who speaks, what text may be cited, who claims what.

    `prompt` is the prompt the model read: what it shows as examples must not come back as facts.
    """

    def __init__(self, model_tools: ModelTools, episode: EpisodeInput, prompt: str = "") -> None:
        conn = model_tools.tools.conn
        self.model_tools = model_tools
        self.everyone = [*episode.context, *episode.events]
        self.new = list(episode.events)
        self.speakers = {e.sender_id: identity.speaker_name(conn, e) for e in self.everyone}
        # The latest event of each participant, by the name facts use for them.
        self.by_name = {_norm(self.speakers[e.sender_id]): e for e in self.everyone}
        contents = [e.content for e in self.everyone]
        delivery = [
            word
            for e in self.everyone
            for word in (e.sender_id, e.sender_name or "", e.peer_id or "", e.platform, self.speakers[e.sender_id])
        ]
        self.haystack = _norm(" \n ".join(contents + delivery))
        self.claimed: dict[str, set[str]] = {}
        for e in self.everyone:
            for name in find_introductions(e.content):
                self.add_claim(e, name)
        named = names_in(contents)
        book = NameBook(self.speakers)
        for e in self.everyone:
            book.learn_event(e)
        self.names = book
        # A fact comes from what its event states, not from its headers, signature, thanks or errands.
        self.sources = {
            e.id: grounding_source(e, self.speaker(e), self.peer(e), named, said=own_statements(e.content, book))
            for e in self.new
        }
        # A short reply ("Luna and Oliver!") answers the question put to its sender just before, read from the
        # asker's side as the offline writer reads it: a fact may take its words from both.
        self.asked = questions_put(self.new, context=episode.context, speaker_names=self.speakers)
        self.answers = {
            e.id: grounding_source(e, self.speaker(e), self.peer(e), named, self.asked[e.id])
            for e in self.new
            if e.id in self.asked
        }
        self.episode = Source(contents, delivery)
        self.examples = Source([example_text(prompt)])
        self.example_abouts = shown_abouts(prompt)
        # Longest first, so "Sam Rivera" is found before a "Sam" of its own.
        found = {*self.speakers.values(), *(p for e in self.new if (p := self.peer(e)))}
        self.participants = sorted(found, key=lambda name: (-len(name), name))

    def event(self, ref: Any) -> Event | None:
        """The new event a ref (e1), an id or an id's unique tail names; None otherwise."""
        if not isinstance(ref, str) or not ref.strip():
            return None
        try:
            return self.model_tools.source_event(ref)
        except ToolError:
            return None

    def speaker(self, event: Event) -> str:
        return self.speakers.get(event.sender_id) or event.sender_id

    def peer(self, event: Event) -> str | None:
        """Who "you" is: the named peer, else in a DM the previous other speaker."""
        if event.peer_id and event.peer_id != event.sender_id:
            if event.peer_id in self.speakers:
                return self.speakers[event.peer_id]
            return event.peer_id if event.peer_kind in (None, "dm") else None
        if event.peer_kind not in (None, "dm"):
            return None
        earlier = self.everyone[: self.everyone.index(event)] if event in self.everyone else []
        others = [e for e in earlier if e.sender_id != event.sender_id]
        return self.speaker(others[-1]) if others else None

    def participant(self, name: str) -> Event | None:
        """An event sent by the participant facts call `name`, if any."""
        return self.by_name.get(_norm(name))

    def add_claim(self, event: Event, name: str) -> None:
        """Remember a name the sender gave for themself, unless it is already how we know them."""
        accepted = {_norm(self.speaker(event)), _norm(event.sender_name or ""), _norm(event.sender_id)}
        if _norm(name) and _norm(name) not in accepted:
            self.claimed.setdefault(event.sender_id, set()).add(_norm(name))

    def unknown_name(self, text: str) -> str | None:
        """A capitalised word of `text` that nothing in the episode says (a name the model made up)."""
        said = set(self.haystack.split())
        common = (w for w in _CAPITALISED.findall(text) if w not in NOT_NAMES and w.lower() not in STOPWORDS)
        return next((w for w in common if w.lower() not in said), None)

    def claimed_in(self, event: Event, text: str) -> str | None:
        """A name the event's sender only claimed, if `text` uses it."""
        words = _norm(text)
        return next((n for n in sorted(self.claimed.get(event.sender_id, ())) if _mentions(words, n)), None)

    def check(
        self,
        text: str,
        event: Event,
        names: list[str] | tuple[str, ...] = (),
        about: tuple[int, int] | None = None,
    ) -> CheckedFact:
        """A fact as it may be stored: its text (pronouns resolved, dates noted), the event that says it and
        its two times; FactDropped with the reason when it may not. `names`: entities listed with it; `about`:
        the time the model says it is about, kept when `model_about` accepts it."""
        text = " ".join(text.split())
        if len(_WORDS.findall(text)) < MIN_WORDS:
            raise FactDropped("empty", "says nothing")
        if _PROMPT_TIME.search(text):
            raise FactDropped("prompt_text", "a timestamp or line copied from the rendered episode")
        if text.rstrip().endswith("?") or asks(text):  # "What book is Sam reading." asks, as offline
            raise FactDropped("question", "a question is not a fact")
        if _repetitive(text):
            raise FactDropped("repetitive", "the same words again and again")
        if len(borrowed := self.episode.borrowed(text, self.examples)) >= BORROWED_WORDS:
            raise FactDropped("prompt_example", f"words of the prompt's examples, not of the episode: {borrowed}")
        if unknown := self.unknown_name(text):
            raise FactDropped("name_not_in_episode", f"names {unknown!r}")
        source, grounding = self.source_of(text, event)
        if not grounding.grounded:
            raise FactDropped("not_in_source", f"not in any new event: {grounding.why()}")
        fixes = ("fact:recited",) if source.id != event.id else ()
        claimed = self.claimed_in(source, " ".join([text, *names]))
        if claimed:
            raise FactDropped("claimed_identity", f"uses {claimed!r}, a name {source.sender_id} only claimed")
        text = attribute(text, self.speaker(source), self.peer(source))
        text, replaced = self.right_speaker(text, source)
        if replaced:
            fixes += ("fact:speaker_rewritten",)
        dated = read_dates(text, source.as_of)  # both times: said at the event's, about what the text names
        # A time the prompt shows as a form, for a text that names none, is the prompt copied (a small model's).
        copied = dated.about is None and about in self.example_abouts
        kept = None if copied else model_about(about, dated.about, source.as_of)
        if about is not None and kept is None:
            fixes += ("fact:about_from_text",)
        return CheckedFact(dated.text, source, source.as_of, fixes, replaced, kept or dated.about)

    def source_of(self, text: str, cited: Event) -> tuple[Event, Grounding]:
        """The new event that says the fact: the cited one, unless another one says it better; where none says
        it alone, a reply (the cited one first) read with the question it answers (`answered`)."""
        best, found = cited, self.sources[cited.id].ground(text)
        for event in (e for e in self.new if e.id != cited.id):
            grounding = self.sources[event.id].ground(text)
            if grounding.grounded and (not found.grounded or grounding.share > found.share):
                best, found = event, grounding
        if not found.grounded:
            for event in [cited, *(e for e in self.new if e.id != cited.id)]:
                if (answer := self.answered(text, event)) is not None:
                    return event, answer
        return best, found

    def answered(self, text: str, event: Event) -> Grounding | None:
        """How far `text` is in `event`'s reply and the question put to it just before, when it is there and
        takes at least one word of its own from the reply (not all from the question: the question states
        nothing); None otherwise."""
        source = self.answers.get(event.id)
        if source is None:
            return None
        grounding = source.ground(text)
        # The message's own words: a name it says ("The Minnesota Wolves! ... play with them") is also in the
        # context of a message with "them", yet it is the reply's.
        reply, question = Source([event.content]), Source([self.asked[event.id]])
        own = any(reply.has(t) and not question.has(t) for t in terms(text))
        return grounding if grounding.grounded and own else None

    def right_speaker(self, text: str, event: Event) -> tuple[str, str]:
        """The fact with the right participant as its subject, and the one it replaced ('' when none).

        "I" in a message is its sender and "you" its addressee (`resolve_pronouns`). A fact that opens with
        another participant the message does not speak of put someone in the sender's place: when the
        sender speaks of themself there, they are given back; otherwise the fact is dropped.
        """
        speaker, words = self.speaker(event), _norm(text)
        subject = next((p for p in self.participants if f"{words} ".startswith(f"{_norm(p)} ")), None)
        if subject is None or _norm(subject) == _norm(speaker):
            return text, ""
        resolved, first_person = resolve_pronouns(event.content, speaker, self.peer(event))
        if _mentions(_norm(resolved), subject):
            return text, ""
        if first_person and not _mentions(words, speaker):
            named = re.compile(rf"(?<!\w){re.escape(subject)}(?!\w)", re.IGNORECASE)
            return named.sub(lambda _match: speaker, text), subject
        raise FactDropped("wrong_speaker", f"{subject!r} is not who {event.sender_id}'s message speaks of")


def shown_abouts(prompt: str) -> set[tuple[int, int]]:
    """The about-times a prompt shows (its forms and its example's), as spans."""
    spans = set()
    for shown in _ABOUT_FORM.findall(prompt):
        about, unread = read_about(shown)
        if about is not None and not unread:
            spans.add(about)
    return spans


def model_about(given: tuple[int, int] | None, read: tuple[int, int] | None, said: int) -> tuple[int, int] | None:
    """The model's about-time `given` when it may be stored, else None: within the sanity bounds around `said`,
    and overlapping `read` (the offline reading of the text's own dates) when the text names any. The day it was
    said, for a text that names no time, is no about-time: a small model's default, which `as_of` already says."""
    if given is None or given[0] < said - ABOUT_PAST_MS or given[1] > said + ABOUT_AHEAD_MS:
        return None
    if read is not None and (given[1] < read[0] or read[1] < given[0]):
        return None  # the text says otherwise, and the stored text shows its reading
    said_day = said - said % _DAY_MS
    if read is None and said_day <= given[0] and given[1] < said_day + _DAY_MS:
        return None
    return given


def read_about(value: Any) -> tuple[tuple[int, int] | None, bool]:
    """A document's `about` ("" or absent: none) as a span, and whether it was given but could not be read."""
    text = str(value).strip() if isinstance(value, str | int) and not isinstance(value, bool) else ""
    if not text:
        return None, False
    try:
        return about_span(text), False
    except ToolError:
        return None, True


def validate(document: dict[str, Any], view: EpisodeView, *, max_facts: int = 50) -> Plan:
    """Judge every fact, causal link and identity claim of a schema-valid document against the episode."""
    plan = Plan()
    # Claims first: a name claimed in this document must not become the speaker's name in its facts.
    for item in document.get("identity_claims", []):
        _claim(item, view, plan)
    for number, item in enumerate(document.get("facts", []), 1):
        if number > max_facts:
            plan.drop("fact", "over_limit", f"#{number} {str(item.get('text', ''))[:80]!r}")
        else:
            _fact(number, item, view, plan)
    kept = {f.number: f for f in plan.facts}
    for item in document.get("causal_links", []):
        _link(item, kept, len(document.get("facts", [])), plan)
    return plan


def _claim(item: dict[str, Any], view: EpisodeView, plan: Plan) -> None:
    event = view.event(item.get("source_ref"))
    kind = str(item.get("type", "")).strip().lower()
    value = " ".join(str(item.get("value", "")).split()).strip(" .,;:!?\"'")
    detail = f"{item.get('source_ref')} {kind}={value!r}"
    if event is None:
        plan.drop("claim", "unknown_source_ref", detail)
    elif kind not in CLAIM_TYPES:
        plan.drop("claim", "unknown_type", detail)
    elif not value or not _mentions(_norm(event.content), value):
        plan.drop("claim", "not_in_message", detail)
    elif (kind == "email" and not identity.EMAIL_RE.match(value)) or (
        kind == "phone" and not identity.PHONE_RE.match(value)
    ):
        plan.drop("claim", "malformed_value", detail)
    else:
        if kind == "name":
            view.add_claim(event, value)
        plan.claims.append(PlannedClaim(event, kind, value))


def _fact(number: int, item: dict[str, Any], view: EpisodeView, plan: Plan) -> None:
    text = " ".join(str(item.get("text", "")).split())
    detail = f"#{number} {item.get('source_ref')} {text!r}"
    event = view.event(item.get("source_ref"))
    if event is None:
        plan.drop("fact", "unknown_source_ref", detail)
        return
    listed: list[tuple[str, Any]] = []  # named entities, and "i" / "you" until the fact's event is known
    for entity in item.get("entities", []):
        name = " ".join(str(entity.get("name", "")).split())
        low = name.lower()
        if low in FIRST_PERSON or low in SECOND_PERSON:
            listed.append((low, entity.get("type")))
        elif low in OTHER_PRONOUNS or not name:
            continue  # says nothing about who; the fact text is judged on its own
        elif not _mentions(view.haystack, name):
            if _mentions(_norm(text), name):
                plan.drop("fact", "entity_not_in_episode", f"{detail} entity {name!r}")
                return
            plan.drop("entity", "not_in_episode", f"{detail} entity {name!r}")
        else:
            listed.append((name, entity.get("type")))
    named = [n for n, _ in listed if n not in FIRST_PERSON and n not in SECOND_PERSON]
    about, unread = read_about(item.get("about"))
    try:
        checked = view.check(text, event, named, about)
    except FactDropped as exc:
        plan.drop("fact", exc.reason, f"{detail} {exc.detail}")
        return
    plan.fixed.update(checked.fixes)
    if unread:
        plan.fixed["fact:about_from_text"] += 1
    speaker, peer = view.speaker(checked.event), view.peer(checked.event)
    entities: list[PlannedEntity] = []
    for name, kind in listed:
        if name in FIRST_PERSON or name in SECOND_PERSON:
            name = speaker if name in FIRST_PERSON else peer or ""
        if not name or (checked.replaced and _norm(name) == _norm(checked.replaced)):
            continue
        who = view.participant(name)
        entities.append(PlannedEntity(name, "person" if who else _entity_type(kind), who))
    # Whoever the rewritten text names among the participants is linked too (the speaker, mostly).
    for name in {speaker, *([peer] if peer else [])}:
        if (who := view.participant(name)) is not None and _mentions(_norm(checked.text), name):
            entities.append(PlannedEntity(name, "person", who))
    plan.facts.append(PlannedFact(number, checked.text, checked.event, checked.as_of, _unique(entities), checked.about))


def _repetitive(text: str) -> bool:
    """True for a model stuck in a loop: some three-word run said three times or more."""
    words = _norm(text).split()
    runs = Counter(tuple(words[i : i + 3]) for i in range(len(words) - 2))
    return bool(runs) and max(runs.values()) >= REPEATS


def attribute(text: str, speaker: str, peer: str | None) -> str:
    """First-person words become the speaker's name; a bare-pronoun subject becomes '<speaker> said ...'.

    "He chewed my shoes" from Marco says nothing of who "he" is, so it is kept as what Marco said.
    """
    text, _first = resolve_pronouns(text, speaker, peer)
    words = _norm(text).split()
    if words and words[0] in PRONOUN_SUBJECTS:
        text = f"{speaker} said {lower_first(text)}"
    return text


def _entity_type(value: Any) -> str:
    kind = re.sub(r"[^a-z]+", "_", str(value or "").strip().lower()).strip("_")
    return kind if kind in ENTITY_TYPES else "other"


def _unique(entities: list[PlannedEntity]) -> list[PlannedEntity]:
    seen: dict[str, PlannedEntity] = {}
    for entity in entities:
        seen.setdefault(_norm(entity.name), entity)
    return list(seen.values())


def _link(item: dict[str, Any], kept: dict[int, PlannedFact], count: int, plan: Plan) -> None:
    cause, effect = item.get("cause"), item.get("effect")
    detail = f"{cause} -> {effect}"
    if not all(isinstance(n, int) and 1 <= n <= count for n in (cause, effect)) or cause == effect:
        plan.drop("link", "bad_fact_number", detail)
    elif cause not in kept or effect not in kept:
        plan.drop("link", "fact_dropped", detail)
    elif not (says_cause(kept[cause].event.content) or says_cause(kept[effect].event.content)):
        plan.drop("link", "no_cause_in_text", detail)
    else:
        strength = item.get("strength", DEFAULT_STRENGTH)
        ok = isinstance(strength, int | float) and not isinstance(strength, bool) and 0 <= strength <= 1
        plan.links.append(PlannedLink(cause, effect, float(strength) if ok else DEFAULT_STRENGTH))
