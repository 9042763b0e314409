"""What the extractor returns: facts with their entities, causal pairs, stated contacts, introductions."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class EntityMention:
    """An entity named in a fact: surface form, type and the role it plays for the event."""

    name: str
    type: str  # person, organization, location, email, phone, url, handle, date, concept
    role: str = "mentioned"  # sender, peer, mentioned, contact_of_sender


@dataclass(frozen=True)
class ExtractedFact:
    """One atomic, standalone fact sentence with its provenance and entities."""

    text: str
    source_event_id: str
    as_of: int  # unix ms: when it was said (the event's time)
    entities: tuple[EntityMention, ...]
    kind: str = "fact"  # or decision, action_item, commitment, preference_stated, correction
    about: tuple[int, int] | None = None  # first and last unix ms of the time the text names; None: names none


@dataclass(frozen=True)
class CausalPair:
    """A cause -> effect link between two facts of the same extraction (indexes into `facts`)."""

    cause: int
    effect: int
    strength: float  # 0..1, by cue


@dataclass(frozen=True)
class ContactStatement:
    """Contact info said in conversation ("my email is ..."): enriches an entity, never routable."""

    value: str
    type: str  # email | phone | handle
    owner: str  # 'sender', or the name of the person it was said about
    source_event_id: str


@dataclass(frozen=True)
class NameIntroduction:
    """A sender telling their real name ("Hey, I'm Marcus"): promotes a handle entity to a person."""

    name: str
    source_event_id: str


@dataclass
class Extraction:
    """Everything `extract` found in one batch of events."""

    facts: list[ExtractedFact] = field(default_factory=list)
    causal: list[CausalPair] = field(default_factory=list)
    contacts: list[ContactStatement] = field(default_factory=list)
    introductions: list[NameIntroduction] = field(default_factory=list)
    skipped_events: list[str] = field(default_factory=list)  # ids of events that yielded no fact
