"""What consolidation knows while it works: facts with their subject, words and vector, and per entity its
current observations and the recent facts that belong to none (the pool a new fact may pair with).

This is step 1 of consolidating a fact ("recall related observations and facts"), done as a targeted
read: an observation is about one entity, so the related candidates are that entity's observations and
its recent unassigned facts, compared by vector. It touches only the rows of the entities in play.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from nexus_memory.core import db
from nexus_memory.observations import store
from nexus_memory.observations.render import MemberFact, about_of
from nexus_memory.observations.slots import Slot, read_slot
from nexus_memory.observations.subjects import EntityInfo, load_entities, name_words, pick_subject
from nexus_memory.observations.topics import GENERIC, category, category_counts, content_words, top_category

POOL_SIZE = 400  # recent unassigned facts of an entity kept as pairing candidates
MIN_SPECIFIC_WORDS = 2  # fewer words besides names and small talk: nothing durable to consolidate
VIEW_CACHE = 128  # entities whose view stays in memory during a run


@dataclass
class FactInput:
    """A fact ready to be consolidated."""

    id: str
    text: str
    as_of: int  # when it was said
    source_event_id: str | None
    entities: list[EntityInfo]
    subject: EntityInfo | None
    words: list[str]
    specific: list[str]  # content words that are neither names of the subject nor small talk
    category: str | None
    slot: Slot | None
    vector: np.ndarray | None
    about: tuple[int, int] | None = None  # the time it is about, when its text names one

    @property
    def durable(self) -> bool:
        """Says something beyond small talk ("Caroline said totally agree" does not)."""
        return self.slot is not None or len(set(self.specific)) >= MIN_SPECIFIC_WORDS

    def member(self) -> MemberFact:
        return MemberFact(self.id, self.text, self.as_of, self.slot, self.about)


@dataclass
class EntityView:
    """One entity's current observations and its pool of unassigned recent facts."""

    entity: EntityInfo
    observations: list[store.ObservationState] = field(default_factory=list)
    pool: dict[str, FactInput] = field(default_factory=dict)
    inputs: dict[str, FactInput] = field(default_factory=dict)  # every loaded fact of its observations
    member_of: dict[str, store.ObservationState] = field(default_factory=dict)

    def live(self) -> list[store.ObservationState]:
        return [o for o in self.observations if not o.retired]


class Loader:
    """Loads facts and entity views, caching entity names and recently used views."""

    def __init__(self, conn: db.Connection, model: str | None, drafts: set[str]) -> None:
        self.conn = conn
        self.model = model
        self.drafts = drafts  # run ids this consolidation run wrote: amended, not versioned again
        self.entities: dict[str, EntityInfo] = {}
        self.views: OrderedDict[str, EntityView] = OrderedDict()

    def entity(self, entity_id: str) -> EntityInfo | None:
        if entity_id not in self.entities:
            self.entities.update(load_entities(self.conn, [entity_id]))
        return self.entities.get(entity_id)

    def facts(self, rows: Sequence[dict]) -> list[FactInput]:
        """FactInputs for fact rows (id, text, as_of, about_start, about_end, source_event_id), in the given order."""
        ids = [r["id"] for r in rows]
        links = store.fact_links(self.conn, ids)
        missing = {e for es in links.values() for e in es if e not in self.entities}
        if missing:
            self.entities.update(load_entities(self.conn, list(missing)))
        vectors = store.fact_vectors(self.conn, self.model, ids) if self.model else {}
        out = []
        for row in rows:
            entities = [self.entities[e] for e in links.get(row["id"], []) if e in self.entities]
            subject = pick_subject(row["text"], entities)
            words = content_words(row["text"])
            excluded = name_words(subject) if subject else set()
            specific = [w for w in words if w not in excluded and w not in GENERIC]
            out.append(
                FactInput(
                    id=row["id"],
                    text=row["text"],
                    as_of=row["as_of"],
                    source_event_id=row["source_event_id"],
                    entities=entities,
                    subject=subject,
                    words=words,
                    specific=specific,
                    category=category(specific),
                    slot=read_slot(row["text"]),
                    vector=vectors.get(row["id"]),
                    about=about_of(row),
                )
            )
        return out

    def view(self, entity: EntityInfo) -> EntityView:
        """The entity's view, from the cache or loaded (observations, their facts, the pool)."""
        if entity.id in self.views:
            self.views.move_to_end(entity.id)
            return self.views[entity.id]
        view = EntityView(entity)
        current = store.current_observations(self.conn, [entity.id])
        member_ids = [f for obs in current for f in obs["fact_ids"]]
        members = set(member_ids)
        pool_ids = [f for f in store.recent_entity_facts(self.conn, entity.id, POOL_SIZE) if f not in members]
        rows = store.fact_rows(self.conn, [*member_ids, *pool_ids])
        inputs = {f.id: f for f in self.facts([rows[i] for i in dict.fromkeys([*member_ids, *pool_ids]) if i in rows])}
        view.inputs = inputs
        for obs in current:
            state = store.ObservationState(
                root_id=obs["root_id"],
                entity_id=entity.id,
                topic=obs["topic"] or "",
                facts={},
                text=obs["output_text"] or "",
                run_id=obs["id"],
                episode_id=obs["episode_id"],
                version=store.version_of(obs["id"]),
                draft=obs["id"] in self.drafts,
                written_text=obs["output_text"] or "",
                written_facts=frozenset([*obs["fact_ids"], *obs["hidden_fact_ids"]]),
            )
            for fact_id in obs["fact_ids"]:
                if fact_id in inputs:
                    add_member(view, state, inputs[fact_id])
            if obs["hidden_fact_ids"]:  # written again without them (or retired when nothing is left)
                state.dirty = True
                state.retired = None if state.facts else "its facts were hidden"
            view.observations.append(state)
        for fact_id in pool_ids:
            fact = inputs.get(fact_id)
            if fact and fact.subject and fact.subject.id == entity.id and fact.durable and fact.vector is not None:
                view.pool[fact_id] = fact
        self.views[entity.id] = view
        while len(self.views) > VIEW_CACHE:
            self.views.popitem(last=False)
        return view

    def forget(self) -> None:
        """Drop cached views (after a failed write they may no longer match the store)."""
        self.views.clear()


def add_member(view: EntityView, state: store.ObservationState, fact: FactInput) -> None:
    """Put a fact into an observation (in memory): facts, centroid, category words, membership."""
    state.facts[fact.id] = fact.member()
    state.add_vector(fact.vector)
    # The observation's category counts, kept as facts join: recomputing them from every member's words
    # for each candidate fact was quadratic in an observation's size (a third of offline consolidation).
    state.extra.setdefault("category_counts", Counter()).update(category_counts(fact.specific))
    view.inputs[fact.id] = fact
    view.member_of[fact.id] = state
    view.pool.pop(fact.id, None)


def observation_category(state: store.ObservationState) -> str | None:
    """The category most of its members' specific words belong to (None when none does)."""
    return top_category(state.extra.get("category_counts", Counter()))
