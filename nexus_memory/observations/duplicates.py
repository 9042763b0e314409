"""Near-duplicate observations of one entity: found (the asset check) and merged (the end of a run).

Two current observations of the same entity are near-duplicates when their texts share most of their
content words (Jaccard >= NEAR_DUPLICATE) or one rests almost entirely on the other's facts. The
larger one absorbs the other's facts (a new version); the other is retired, "merged into <root>".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from nexus_memory.core import db
from nexus_memory.observations import store
from nexus_memory.observations.topics import content_words
from nexus_memory.observations.view import EntityView, Loader, add_member

NEAR_DUPLICATE = 0.8


def similar(text_a: str, facts_a: set[str], text_b: str, facts_b: set[str]) -> bool:
    """The near-duplicate test of the module docstring."""
    words_a, words_b = set(content_words(text_a)), set(content_words(text_b))
    if words_a and words_b and len(words_a & words_b) / len(words_a | words_b) >= NEAR_DUPLICATE:
        return True
    smaller = min(len(facts_a), len(facts_b))
    return smaller > 0 and len(facts_a & facts_b) / smaller >= NEAR_DUPLICATE


def near_duplicate_pairs(conn: db.Connection, limit: int = 20) -> list[tuple[str, str, str]]:
    """(entity id, run id, run id) for near-duplicate current observations, store-wide."""
    entities = [
        r[0]
        for r in conn.execute(
            f"""SELECT r.entity_id FROM analysis_runs r WHERE {store.CURRENT_SQL} AND r.entity_id IS NOT NULL
                GROUP BY r.entity_id HAVING count(*) > 1"""
        )
    ]
    pairs: list[tuple[str, str, str]] = []
    for entity_id in entities:
        current = store.current_observations(conn, [entity_id])
        for i, a in enumerate(current):
            for b in current[i + 1 :]:
                if similar(a["output_text"] or "", set(a["fact_ids"]), b["output_text"] or "", set(b["fact_ids"])):
                    pairs.append((entity_id, a["id"], b["id"]))
                    if len(pairs) >= limit:
                        return pairs
    return pairs


def merge_near_duplicates(
    conn: db.Connection,
    loader: Loader,
    entity_ids: Iterable[str],
    write: Callable[[db.Connection, EntityView, store.ObservationState], str | None],
) -> int:
    """Merge near-duplicate observations of these entities (see module docstring); returns merges made."""
    merges = 0
    for entity_id in sorted(entity_ids):
        entity = loader.entity(entity_id)
        if entity is None:
            continue
        view = loader.view(entity)
        live = view.live()
        for i, keep in enumerate(live):
            for other in live[i + 1 :]:
                if keep.retired or other.retired:
                    continue
                if not similar(keep.text, set(keep.facts), other.text, set(other.facts)):
                    continue
                winner, loser = sorted((keep, other), key=lambda s: (-len(s.facts), s.root_id))
                for fact_id in list(loser.facts):
                    if fact_id in view.inputs:
                        add_member(view, winner, view.inputs[fact_id])
                winner.dirty = True
                loser.retired = f"merged into {winner.root_id}"
                loser.dirty = True
                write(conn, view, winner)
                write(conn, view, loser)
                merges += 1
    return merges
