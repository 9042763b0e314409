"""One event at a time: sentences become statements, statements become facts with entities and dates."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from nexus_memory.events.ledger import Event
from nexus_memory.writer.extractor.antecedents import Antecedents
from nexus_memory.writer.extractor.causal import CAUSAL_LINK_PREV, reason_for_previous, split_causal
from nexus_memory.writer.extractor.contacts import find_contacts, signature_contacts, signature_role
from nexus_memory.writer.extractor.dates import read_dates
from nexus_memory.writer.extractor.entities import find_entities, merge_mentions
from nexus_memory.writer.extractor.introductions import INTRO_RE, find_introductions, intro_ok
from nexus_memory.writer.extractor.kinds import classify_kind
from nexus_memory.writer.extractor.languages import not_english, quoted, visible_text, worth_keeping
from nexus_memory.writer.extractor.names import NameBook
from nexus_memory.writer.extractor.pronouns import resolve_pronouns
from nexus_memory.writer.extractor.remarks import remark_class
from nexus_memory.writer.extractor.results import (
    CausalPair,
    ContactStatement,
    EntityMention,
    ExtractedFact,
    Extraction,
    NameIntroduction,
)
from nexus_memory.writer.extractor.sentences import (
    clean_sentence,
    has_verb,
    is_answer,
    is_clause,
    is_courtesy,
    is_ephemeral,
    is_informative,
    is_small_talk,
    photo_fact,
    polar_answer,
    polar_question,
    question_to,
    split_compound,
    split_photos,
    split_sentences,
    supply_subject,
)
from nexus_memory.writer.extractor.structure import MessageParts, read_message
from nexus_memory.writer.extractor.text import capitalise, contains_word, finish, lower_first


def extract(
    events: Sequence[Event],
    *,
    context: Sequence[Event] = (),
    speaker_names: Mapping[str, str] | None = None,
    addressee_names: Mapping[str, str] | None = None,
) -> Extraction:
    """Extract facts, causal pairs, contacts and introductions from `events` (new, in time order).

    `context` holds earlier events of the thread: they help resolve who "you" is and which names are
    known, but no facts are taken from them. `speaker_names` maps sender_id -> the name a person has
    accepted for that sender (falls back to sender_name, then sender_id). A name a sender gives
    for themself ("I'm Priya") is a claim: it becomes a fact and an introduction, never the speaker.
    `addressee_names` maps a peer_id that sends nothing here to the name it is known by (who "you" is in
    an email to the owner's address); it never makes a peer the addressee of a group message.
    """
    names, messages = _read_names([*context, *events], speaker_names, addressee_names)
    result = Extraction()
    antecedents = Antecedents(names)
    signatures: set[tuple[str, tuple[str, ...]]] = set()
    previous: Event | None = None
    for event in context:
        peer = names.peer_of(event, previous.sender_id if previous else None)
        for sentence in split_sentences(messages[event.id].body):
            antecedents.record(sentence, names.name_of(event.sender_id), peer)
        antecedents.next_message()
        signatures.add((event.sender_id, messages[event.id].signature))
        previous = event
    for event in events:
        peer = names.peer_of(event, previous.sender_id if previous else None)
        message = messages[event.id]
        if (event.sender_id, message.signature) in signatures:
            message = replace(message, signature=())  # a signature says who someone is once per thread
        signatures.add((event.sender_id, message.signature))
        asking = messages[previous.id].body if previous else ""
        asked = _question_put(event, previous, peer, names, asking)
        polar = _question_put(event, previous, peer, names, asking, polar_question)
        _extract_event(event, message, _Reader(names, antecedents, peer, asked, polar), result)
        antecedents.next_message()
        previous = event
    return result


def _read_names(
    events: Sequence[Event], speaker_names: Mapping[str, str] | None, addressee_names: Mapping[str, str] | None
) -> tuple[NameBook, dict[str, MessageParts]]:
    """Who is who in `events` (their senders, display names and the names they introduce), and each event's
    message read into its parts."""
    names = NameBook(speaker_names or {}, addressee_names or {})
    # Invisible characters are no part of what was said: the facts go without them, the ledger keeps them.
    messages = {event.id: read_message(visible_text(event.content or "")) for event in events}
    for event in events:
        names.learn_event(event)
        for intro in find_introductions(messages[event.id].body):
            names.add_known(intro)
    return names, messages


def questions_put(
    events: Sequence[Event],
    *,
    context: Sequence[Event] = (),
    speaker_names: Mapping[str, str] | None = None,
    addressee_names: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Event id -> the question the message before put to that event's sender, read from the asker's side, for
    the events of `events` a question was put to: what a short reply of theirs answers (the same reading as
    `extract`'s, for the LLM writer's grounding). Arguments as for `extract`."""
    names, messages = _read_names([*context, *events], speaker_names, addressee_names)
    asked: dict[str, str] = {}
    previous: Event | None = None
    for event in [*context, *events]:
        peer = names.peer_of(event, previous.sender_id if previous else None)
        question = _question_put(event, previous, peer, names, messages[previous.id].body if previous else "")
        if question:
            asked[event.id] = question
        previous = event
    return {event.id: asked[event.id] for event in events if event.id in asked}


def answer_statement(question: str, reply: str) -> str:
    """A reply that says nothing alone, kept with the question it answers, in the sender's first person (as
    every statement is before it is attributed): 'Asked "What are Melanie's pets' names?", I answered: ...'."""
    return f'Asked "{question}", I answered: {reply}'


def _question_put(
    event: Event,
    previous: Event | None,
    peer: str | None,
    names: NameBook,
    asking: str,
    read: Callable[[str, NameBook], str] = question_to,
) -> str:
    """The question the message before put to this event's sender (`asking` is its body), read from the asker's
    side ("What are your pets' names?" -> "What are Melanie's pets' names?"); '' when there is none or it was
    put to someone else. `read` finds the question in `asking`: one a short reply may answer (`question_to`),
    or a yes/no one (`polar_question`)."""
    if previous is None or previous.sender_id == event.sender_id or peer != names.name_of(previous.sender_id):
        return ""
    if previous.thread_id != event.thread_id:
        return ""  # a reply in another thread answers a question of that thread
    if previous.peer_id and previous.peer_id != event.sender_id:
        return ""  # it asked someone else
    question = read(asking, names)
    if is_small_talk(question, names):
        return ""
    return resolve_pronouns(question, peer, names.name_of(event.sender_id))[0] if question else ""


# What joins an introduction to the clause after it: "I'm Priya, I ..." / "I'm Priya and I ...".
_AFTER_INTRODUCTION_RE = re.compile(r"\s*(?:[,;:\u2014-]+\s*(?:and\s+)?|\s+and\s+)", re.IGNORECASE)


@dataclass
class _Statement:
    """A sentence or clause on its way to becoming a fact."""

    text: str  # original wording (interjections stripped), pronouns not yet resolved
    speaker: str  # name the first person resolves to
    is_photo: bool = False
    verbatim: bool = False  # a sentence in another language, quoted whole: the fact's text as it is


@dataclass
class _Split:
    """Statements from one sentence, causal pairs among them (local indexes), and a link backwards."""

    statements: list[_Statement]
    pairs: list[tuple[int, int, float]] = field(default_factory=list)  # (cause, effect, strength)
    link_prev: float = 0.0  # >0: the previous statement of the event causes the first one here
    reason_prev: float = 0.0  # >0: the first statement here is the reason for the previous one


@dataclass
class _Reader:
    """What reading one event needs besides the event: who is who, who was named, who "you" is."""

    names: NameBook
    antecedents: Antecedents
    peer: str | None
    asked: str = ""  # the question the message before put to this sender: a verbless reply may answer it
    polar: str = ""  # the yes/no question the message before put to this sender: a reply's yes or no answers it


def _extract_event(event: Event, message: MessageParts, reader: _Reader, result: Extraction) -> None:
    """Append what one event says to `result`: its sender's own text, signature and forwarded messages.

    A letter signed by the one it is addressed to (an assistant's draft of the user's email) is not
    something its sender says, and gives no facts; nor is the text of a message it quotes.
    """
    names = reader.names
    speaker = names.name_of(event.sender_id)
    signer = message.signer
    drafted = bool(signer and reader.peer and _same_person(signer, reader.peer) and not _same_person(signer, speaker))
    body = "" if drafted else message.body
    # A short reply to a question is no chatter when it may answer it ("Super good!" after "How was it?").
    answers = bool(reader.asked) and any(
        not is_courtesy(s, names) and is_answer(clean_sentence(s, names)[0], names, reader.asked)
        for s in split_sentences(body)
    )
    answers = answers or bool(reader.polar and polar_answer(body, names))  # "Yes!" to "Is that your third one?"
    if is_ephemeral(body, names) and not message.signature and not message.forwarded and not answers:
        result.skipped_events.append(event.id)
        return
    intro_names = find_introductions(body)
    for intro in intro_names:
        result.introductions.append(NameIntroduction(intro, event.id))
    contacts = [*find_contacts(body, event.id), *signature_contacts(message.signature, event.id)]
    result.contacts.extend(contacts)

    splits = _read_text(body, speaker, reader, claims=bool(intro_names))
    if role := signature_role(message.signature):
        splits.append((_Split([_Statement(f"{speaker}'s signature: {role}", speaker)]), reader.peer))
    for forwarded in message.forwarded:
        if forwarded.author:  # words no "From:" line names have no one to be attributed to
            splits += _read_text(
                forwarded.parts.body, forwarded.author, replace(reader, peer=None, asked="", polar=""), claims=False
            )

    produced = 0
    for split, peer in splits:
        base = len(result.facts)
        for statement in split.statements:
            result.facts.append(build_fact(statement, event, names, peer, contacts))
        if split.link_prev and produced:
            result.causal.append(CausalPair(base - 1, base, split.link_prev))
        if split.reason_prev and produced:
            result.causal.append(CausalPair(base, base - 1, split.reason_prev))
        for cause, effect, strength in split.pairs:
            result.causal.append(CausalPair(base + cause, base + effect, strength))
        produced += len(split.statements)
    if not produced:
        result.skipped_events.append(event.id)


def _read_text(text: str, speaker: str, reader: _Reader, *, claims: bool) -> list[tuple[_Split, str | None]]:
    """The statements of a text said by `speaker` to `reader.peer`, sentence by sentence, with that peer.

    Every sentence is remembered for the pronouns of later ones, the dropped ones too ("did Jess book?"). Where
    the message before asked this speaker something, the reply's first sentence that is not courtesy answers it:
    if it says nothing alone ("Luna and Oliver!"), it is kept with the question ('Asked "What are Melanie's pets'
    names?", Melanie answered: Luna and Oliver.').
    """
    splits: list[tuple[_Split, str | None]] = []
    asked = reader.asked
    text, captions = split_photos(text)
    sentences = split_sentences(text)
    # A yes or a no to a yes/no question says what it answers: 'Asked "Is that Nate's third one?", Nate answered: Yes.'
    if reader.polar and sentences and (said := polar_answer(sentences[0], reader.names)):
        splits.append((_Split([_Statement(answer_statement(reader.polar, said + "."), speaker)]), reader.peer))
    for sentence in sentences:
        if not_english(sentence):
            # Another language is kept as said: English rules would lose it or garble it ("Me mudo" -> "Noa mudo").
            if worth_keeping(sentence):
                splits.append((_Split([_Statement(quoted(sentence, speaker), speaker, verbatim=True)]), reader.peer))
                asked = ""
            reader.antecedents.record(sentence, speaker, reader.peer)
            continue
        # Each clause after "; " is read on its own: "Sorry again for the delay; the slip came from ...".
        clauses = [c for c in re.split(r";\s+", sentence) if c.strip()]
        for piece in [p for c in clauses for p in (_claim_introductions(c, speaker) if claims else [c])]:
            cleaned, called = clean_sentence(piece, reader.names)
            # A reason for the sentence before is judged by the reason itself ("That's because ...").
            reason = reason_for_previous(cleaned) if cleaned else None
            if cleaned and is_informative(reason[0] if reason else cleaned, reader.names):
                # "Sam, you left your bottle": the one a sentence calls by name is its "you".
                peer = reader.names.full_name(called) if called else reader.peer
                cleaned = reader.antecedents.resolve(cleaned, speaker, peer)
                splits.append((_split_statement(supply_subject(cleaned), speaker), peer))
            # Courtesy is judged as written: cleaning "Thanks so much!" leaves "So much", which is no answer.
            elif cleaned and asked and not is_courtesy(piece, reader.names) and is_answer(cleaned, reader.names, asked):
                answer = answer_statement(asked, cleaned)
                splits.append((_Split([_Statement(answer, speaker)]), reader.peer))
            if cleaned and not is_courtesy(cleaned, reader.names):
                asked = ""  # only the reply's first word on the matter answers the question
        reader.antecedents.record(sentence, speaker, reader.peer)
    for caption in captions:
        splits.append((_Split([_Statement(photo_fact(caption, "I"), speaker, is_photo=True)]), reader.peer))
    return splits


def _same_person(signer: str, name: str) -> bool:
    """A sign-off name and a full name are the same person: 'Sam' and 'Sam Rivera'."""
    return signer.split()[0].lower() == name.split()[0].lower()


def _claim_introductions(sentence: str, speaker: str) -> list[str]:
    """A sentence with each introduction written as the claim it is, split off when a clause follows.

    "Hi, I'm Priya Kapoor, I lost my phone" -> ["Hi, I say they are Priya Kapoor", "I lost my phone"], so
    the facts read "<handle> says they are Priya Kapoor" and "<handle> lost <handle>'s phone". An
    introduction of the speaker's own name says nothing new and is left out.
    """
    pieces: list[str] = []
    cursor, cut = 0, None
    for match in INTRO_RE.finditer(sentence):
        if not intro_ok(match):
            continue
        name = match.group("name")
        same = name.lower() in (speaker.lower(), speaker.split()[0].lower())
        pieces += [sentence[cursor : match.start()], "" if same else f"I say they are {name}"]
        cursor = match.end()
        cut = len("".join(pieces)) if cut is None else cut
    text = "".join(pieces) + sentence[cursor:]
    if cut is not None:
        joint = _AFTER_INTRODUCTION_RE.match(text, cut)
        if joint and is_clause(text[joint.end() :]):
            return [text[:cut], capitalise(text[joint.end() :])]
    return [text]


def _split_statement(sentence: str, speaker: str) -> _Split:
    """A sentence as statements: a causal pair, else compound clauses; plus a causal link backwards (the
    sentence before is its cause, or it is the reason for the sentence before)."""
    reason = reason_for_previous(sentence)
    if reason:
        return _Split([_Statement(reason[0], speaker)], [], reason_prev=reason[1])
    link_strength = 0.0
    link = CAUSAL_LINK_PREV.match(sentence)
    if link and has_verb(sentence[link.end() :]):
        link_strength = 0.7
        sentence = capitalise(sentence[link.end() :])
    pair = split_causal(sentence)
    if pair:
        cause, effect, strength, cause_first = pair
        if cause_first:
            return _Split([_Statement(cause, speaker), _Statement(effect, speaker)], [(0, 1, strength)], link_strength)
        return _Split([_Statement(effect, speaker), _Statement(cause, speaker)], [(1, 0, strength)], link_strength)
    clauses = split_compound(sentence)
    if len(clauses) > 1:
        # A reaction beside news is no fact of its own: "It was tough, but I'm doing ok" keeps the second clause.
        clauses = [clause for clause in clauses if remark_class(clause) != "reaction"]
    return _Split([_Statement(clause, speaker) for clause in clauses], [], link_strength)


def build_fact(
    statement: _Statement, event: Event, names: NameBook, peer: str | None, contacts: Sequence[ContactStatement] = ()
) -> ExtractedFact:
    """Resolve pronouns and dates in a statement and tag its entities and derived kind.

    Contact values the sender stated about themself get the role 'contact_of_sender'; a statement of
    someone else's contact info is attributed to the sender ("<sender> said Sam's number is ...").
    """
    if statement.verbatim:  # no English reading: no pronouns, case, dates or cue words; its speaker only
        role = "sender" if statement.speaker == names.name_of(event.sender_id) else "mentioned"
        mention = EntityMention(statement.speaker, "person", role)
        return ExtractedFact(text=statement.text, source_event_id=event.id, as_of=event.as_of, entities=(mention,))
    kind = "fact" if statement.is_photo else classify_kind(statement.text)
    resolved, first_person = resolve_pronouns(statement.text, statement.speaker, peer)
    dated = read_dates(resolved, event.as_of)
    resolved = dated.text
    people = {statement.speaker, *(n for n in names.known if n)}
    if peer:
        people.add(peer)
    mentions_person = first_person or any(contains_word(resolved, name) for name in people)
    # Contact info said about someone else is the sender's claim, not a fact about that person.
    owners = [c.owner for c in contacts if c.owner != "sender" and c.value in statement.text]
    if owners or not mentions_person:
        said = resolved if resolved.startswith(tuple(owners)) else lower_first(resolved, names)
        resolved = f"{statement.speaker} said {said}"
    entities = find_entities(resolved, names, speaker=statement.speaker, peer=peer)
    entities = merge_mentions(entities, [EntityMention(d, "date") for d in dated.mentions])
    own = {c.value for c in contacts if c.owner == "sender"}
    entities = [
        EntityMention(e.name, e.type, "contact_of_sender") if e.name.lstrip("@") in own else e for e in entities
    ]
    return ExtractedFact(
        text=finish(resolved),
        source_event_id=event.id,
        as_of=event.as_of,
        entities=tuple(entities),
        kind=kind,
        about=dated.about,
    )
