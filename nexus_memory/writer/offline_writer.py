"""The offline writer: the deterministic extractor's output applied through the writer tools.

No network and no LLM. It is the default writer, and it goes through exactly the same tools as
the LLM path, so dedup, entity resolution and merge rules are the same whichever writer runs.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace

from nexus_memory.core import db
from nexus_memory.core.ids import now_ms, stable_id
from nexus_memory.events.ledger import Event
from nexus_memory.identity import store as identity
from nexus_memory.writer.base import EpisodeInput, WriteResult
from nexus_memory.writer.extractor import EntityMention, Extraction, extract
from nexus_memory.writer.tools import WriterTools

DERIVED_KINDS = ("decision", "action_item", "commitment", "preference_stated", "correction")
CONTACT_TYPES = {"email": "email", "phone": "phone", "handle": "handle"}
_TOPIC_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")


class OfflineWriter:
    """Applies the rule-based `extractor.extract` to an episode through the writer tools."""

    name = "offline"

    def write(self, tools: WriterTools, episode: EpisodeInput) -> WriteResult:
        conn = tools.conn
        # A thread's context repeats the same few senders; registering a delivery again changes nothing,
        # and naming reads only what registering wrote, so each distinct sender is looked up once.
        senders: dict[str, str] = {}
        for e in {
            (e.platform, e.sender_id, e.sender_name, e.session_id): e for e in [*episode.context, *episode.events]
        }.values():
            senders[e.sender_id] = identity.register_delivery(conn, e)
        names: dict[tuple[str, str, str | None], str] = {}

        def named(event: Event) -> Event:
            key = (event.platform, event.sender_id, event.sender_name)
            if key not in names:
                names[key] = identity.speaker_name(conn, event)
            return self._named(event, names[key])

        addressees = self._addressees(conn, [*episode.context, *episode.events], senders)
        extraction = extract(
            [named(e) for e in episode.events],
            context=[named(e) for e in episode.context],
            addressee_names={peer: name for peer, (_, name) in addressees.items()},
        )
        by_event = {e.id: e for e in episode.events}
        people = {**{peer: entity for peer, (entity, _) in addressees.items()}, **senders}
        fact_ids = self._write_facts(tools, extraction, by_event, people)
        for pair in extraction.causal:
            cause, effect = fact_ids[pair.cause], fact_ids[pair.effect]
            if cause and effect and cause != effect:
                tools.insert_causal_link(cause, effect, pair.strength)
        self._write_contacts(tools, extraction, by_event, senders)
        self._write_introductions(tools, extraction, by_event, senders)
        self._label_agent_turns(tools, episode.events, extraction)
        return WriteResult(notes=f"{len(extraction.facts)} facts extracted, {len(extraction.skipped_events)} skipped")

    @staticmethod
    def _addressees(conn: db.Connection, events: list[Event], senders: dict[str, str]) -> dict[str, tuple[str, str]]:
        """peer_id -> (entity id, name) for the delivered contacts messages here are addressed to that
        send nothing here (an email to the owner's address): "you" is named as they are known."""
        found: dict[str, tuple[str, str]] = {}
        asked: set[tuple[str, str]] = set()  # a peer with no name is asked once, not for each message to it
        for event in events:
            peer = event.peer_id
            if peer and peer not in senders and peer not in found and (event.platform, peer) not in asked:
                asked.add((event.platform, peer))
                known = identity.contact_name(conn, event.platform, peer)
                if known is not None:
                    found[peer] = known
        return found

    @staticmethod
    def _named(event: Event, name: str) -> Event:
        """The event as the extractor should read it: its sender_name replaced by the name facts may use.

        That is the accepted person's name, else a display name that names this sender, else the raw
        handle (`identity.speaker_name`). An unreviewed introduction or merge candidate never changes it.
        """
        if name == event.sender_name or (event.sender_name is None and name == event.sender_id):
            return event
        return replace(event, sender_name=name)

    def _entity_for(self, tools: WriterTools, mention: EntityMention, event: Event, people: dict[str, str]) -> str:
        if mention.role == "sender":
            return people[event.sender_id]
        if mention.role == "peer" and event.peer_id and event.peer_id in people:
            return people[event.peer_id]
        kind = "person" if mention.type == "person" else mention.type
        return identity.resolve_or_create(tools.conn, mention.name, kind, seen_at=event.as_of)

    def _write_facts(
        self, tools: WriterTools, extraction: Extraction, by_event: dict[str, Event], people: dict[str, str]
    ) -> list[str | None]:
        """Insert the extracted facts and link their entities; `people` maps the people and the
        addressees of the episode to their entities."""
        fact_ids: list[str | None] = []
        for fact in extraction.facts:
            event = by_event.get(fact.source_event_id)
            if event is None:
                fact_ids.append(None)
                continue
            result = tools.insert_fact(
                fact.text,
                fact.as_of,
                ingested_at=event.as_of,
                source_event_id=event.id,
                metadata={"kind": fact.kind},
                about=fact.about,
            )
            fact_ids.append(result["fact_id"])
            if result["status"] != "inserted":
                continue
            tools.link_fact_entities(
                result["fact_id"], [self._entity_for(tools, mention, event, people) for mention in fact.entities]
            )
            if fact.kind in DERIVED_KINDS:
                tools.conn.execute(
                    """INSERT OR IGNORE INTO derived_events (id, type, content, source_event_id, source_episode_id,
                           entity_id, as_of, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                    (
                        stable_id("dev", fact.kind, event.id, fact.text),
                        fact.kind,
                        fact.text,
                        event.id,
                        tools.episode_id,
                        people[event.sender_id],
                        fact.as_of,
                        now_ms(),
                    ),
                )
        return fact_ids

    def _write_contacts(
        self, tools: WriterTools, extraction: Extraction, by_event: dict[str, Event], senders: dict[str, str]
    ) -> None:
        """Contact info said in conversation: an entity proposed for merge into its owner, never a contact."""
        for contact in extraction.contacts:
            event = by_event.get(contact.source_event_id)
            if event is None:
                continue
            kind = CONTACT_TYPES.get(contact.type, contact.type)
            contact_id = tools.create_entity(contact.value, kind)["entity_id"]
            if contact.owner == "sender":
                owner_id, confidence = senders[event.sender_id], 0.9
            else:
                owner_id = identity.resolve_or_create(tools.conn, contact.owner, "person", seen_at=event.as_of)
                confidence = 0.7
            if identity.canonical_id(tools.conn, owner_id) != identity.canonical_id(tools.conn, contact_id):
                tools.propose_merge(
                    owner_id,
                    contact_id,
                    confidence,
                    f"{contact.owner} stated {kind} {contact.value} in event {event.id}",
                )

    def _write_introductions(
        self, tools: WriterTools, extraction: Extraction, by_event: dict[str, Event], senders: dict[str, str]
    ) -> None:
        """A handle that says its real name: a person entity and a merge proposal, never an automatic merge."""
        for intro in extraction.introductions:
            event = by_event.get(intro.source_event_id)
            if event is None:
                continue
            handle_id = identity.canonical_id(tools.conn, senders[event.sender_id])
            handle = identity.get_entity(tools.conn, handle_id)
            if handle is None or (
                handle.type == "person" and identity.normalize(handle.name) == identity.normalize(intro.name)
            ):
                continue
            person_id = tools.create_entity(intro.name, "person")["entity_id"]
            if person_id != handle_id:
                tools.propose_merge(
                    person_id,
                    handle_id,
                    0.95,
                    f"{event.sender_id} introduced themselves as {intro.name} in event {event.id}",
                )

    @staticmethod
    def _label_agent_turns(tools: WriterTools, events: list[Event], extraction: Extraction) -> None:
        """Turn labels (docs/writer.md) for agent turns: label, summary, topics, entity ids; deterministic."""
        for event in events:
            if event.platform != "agent":
                continue
            facts = [f for f in extraction.facts if f.source_event_id == event.id]
            words = [w.lower() for w in _TOPIC_WORD.findall(event.content)]
            topics = [w for w, _ in Counter(w for w in words if len(w) > 4).most_common(5)]
            entity_ids = sorted(
                {
                    r[0]
                    for r in tools.conn.execute(
                        """SELECT DISTINCT fe.entity_id FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id
                   WHERE f.source_event_id = ?""",
                        (event.id,),
                    )
                }
            )
            first = re.split(r"(?<=[.!?])\s+", event.content.strip(), maxsplit=1)[0]
            tools.conn.execute(
                """INSERT OR REPLACE INTO turn_labels (event_id, label, summary, topics, entity_ids, created_at)
                   VALUES (?, ?, ?, ?, ?, ?)""",
                (
                    event.id,
                    " ".join(first.split()[:8]),
                    facts[0].text if facts else first[:300],
                    json.dumps(topics),
                    json.dumps(entity_ids),
                    now_ms(),
                ),
            )
