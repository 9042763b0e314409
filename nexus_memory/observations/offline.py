"""The offline consolidator: deterministic rules over vectors, categories and attributes. No model call.

For a fact about subject S (see subjects.py):
  1. no durable content (small talk, no words beyond names) -> isolated;
  2. an observation of S already holding the same attribute (where S lives, works, what S loves) -> join it,
     so a change over time lands in one place and reads as a change;
  3. the observation of S whose centroid is most similar (cosine >= JOIN_SIM), in a compatible category
     and not full -> join it;
  4. else the most similar recent unassigned fact of S (same attribute, or cosine >= PAIR_SIM and a
     compatible category) -> a new observation of the two;
  5. else isolated: consolidated, no observation.
Facts of other entities are never candidates, so two people who share a first name never meet.
The text is rendered from the facts (render.py), so it is the same whenever the facts are.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from nexus_memory.observations.actions import Action, Plan
from nexus_memory.observations.store import ObservationState
from nexus_memory.observations.view import EntityView, FactInput, observation_category

# MiniLM cosine of fact vectors (each embedded with its message): facts of one speaker sit around
# 0.45 whatever they say, the same topic above ~0.65 (see the README's consolidation section).
JOIN_SIM = 0.62  # to an observation's centroid (an average: lower than a pair needs)
PAIR_SIM = 0.70  # to a single unassigned fact
MAX_FACTS = 40  # an observation this large takes no more facts; the topic goes on in a new one


class OfflineConsolidator:
    """Rules of the module docstring."""

    name = "offline"

    def plan(self, fact: FactInput, view: EntityView) -> Plan:
        if not fact.durable:
            return Plan(isolated="no durable content")
        live = [o for o in view.live() if len(o.facts) < MAX_FACTS]
        if fact.slot is not None:
            for state in live:
                if any(m.slot and m.slot.ident == fact.slot.ident for m in state.facts.values()):
                    return Plan([Action("update", state, reason=f"same attribute: {fact.slot.attribute}")])
        best = _best_observation(fact, live)
        if best is not None:
            return Plan([Action("update", best, reason="similar to the observation")])
        partner = _best_partner(fact, view.pool.values())
        if partner is not None:
            return Plan([Action("create", with_facts=(partner.id,), reason="similar to an earlier fact")])
        return Plan(isolated="nothing related")


def compatible(a: str | None, b: str | None) -> bool:
    """Categories allow a match unless both are known and differ."""
    return a is None or b is None or a == b


def _best_observation(fact: FactInput, candidates: list[ObservationState]) -> ObservationState | None:
    if fact.vector is None:
        return None
    best, best_sim = None, JOIN_SIM
    for state in candidates:
        centroid = state.centroid()
        if centroid is None or not compatible(fact.category, observation_category(state)):
            continue
        sim = float(np.dot(centroid, fact.vector))
        if sim >= best_sim:
            best, best_sim = state, sim
    return best


def _best_partner(fact: FactInput, pool: Iterable[FactInput]) -> FactInput | None:
    candidates = [p for p in pool if p.id != fact.id and p.vector is not None]
    if fact.slot is not None:
        same = [p for p in candidates if p.slot and p.slot.ident == fact.slot.ident]
        if same:
            return max(same, key=lambda p: (p.as_of, p.id))
    if fact.vector is None or not candidates:
        return None
    sims = np.stack([p.vector for p in candidates]) @ fact.vector  # type: ignore[misc]
    best, best_sim = None, PAIR_SIM
    for candidate, sim in zip(candidates, sims, strict=True):
        if sim >= best_sim and compatible(fact.category, candidate.category):
            best, best_sim = candidate, float(sim)
    return best
