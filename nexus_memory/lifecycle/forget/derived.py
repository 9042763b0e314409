"""Observations and mental models that hold forgotten knowledge.

- An observation version (analysis run) that rests on a forgotten fact, or analyses a removed episode
  version, is deleted: its text says what was forgotten. Its other facts go back to consolidation
  (is_consolidated = 0), so the observation is consolidated again without the fact; the versions
  around it stay, re-linked and marked stale.
- A mental model version about a forgotten entity, built from forgotten sources, or repeating forgotten
  text is deleted the same way; current models about entities the forgotten facts touched are marked
  stale (their dossiers say so until they are refreshed). "Repeating" is checked without knowing how a
  model was written: the forgotten text verbatim, the entity's names, or a word that only the forgotten
  facts used (a name, a code, a place: what identifies them). A version deleted by mistake costs a
  refresh; one kept by mistake would keep what the person asked to forget.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nexus_memory import db
from nexus_memory.lifecycle.forget.plan import ForgetPlan, name_pattern

MIN_QUOTED_CHARS = 12  # a forgotten text shorter than this is not looked for inside model reports
_WORD = re.compile(r"\w{4,}")  # words shorter than this say too little to tie a report to forgotten facts


@dataclass
class DerivedChanges:
    observations_deleted: list[str] = field(default_factory=list)
    facts_requeued: int = 0
    mental_models_deleted: list[str] = field(default_factory=list)


def delete_observations(conn: db.Connection, plan: ForgetPlan, episode_ids: Sequence[str]) -> DerivedChanges:
    """Delete observation versions resting on forgotten facts or removed episodes (module docstring)."""
    changes = DerivedChanges()
    runs: set[str] = set()
    for part in db.chunked(list(plan.fact_ids)):
        runs.update(
            r[0]
            for r in conn.execute(
                f"SELECT DISTINCT analysis_run_id FROM observation_facts WHERE fact_id IN ({db.placeholders(part)})",
                part,
            )
        )
    for part in db.chunked(list(episode_ids)):
        runs.update(
            r[0]
            for r in conn.execute(f"SELECT id FROM analysis_runs WHERE episode_id IN ({db.placeholders(part)})", part)
        )
    if not runs:
        return changes
    doomed_facts = set(plan.fact_ids)
    for part in db.chunked(sorted(runs)):
        others = [
            r[0]
            for r in conn.execute(
                f"SELECT DISTINCT fact_id FROM observation_facts WHERE analysis_run_id IN ({db.placeholders(part)})",
                part,
            )
            if r[0] not in doomed_facts
        ]
        for chunk in db.chunked(others):
            changes.facts_requeued += conn.execute(
                f"UPDATE facts SET is_consolidated = 0 WHERE id IN ({db.placeholders(chunk)})", chunk
            ).rowcount
    _unlink_versions(conn, "analysis_runs", runs)
    changes.observations_deleted = sorted(runs)
    for part in db.chunked(changes.observations_deleted):
        conn.execute(f"DELETE FROM analysis_runs WHERE id IN ({db.placeholders(part)})", part)
    return changes


def delete_mental_models(
    conn: db.Connection, plan: ForgetPlan, changes: DerivedChanges, episode_ids: Sequence[str]
) -> None:
    """Delete mental model versions about forgotten entities, built on forgotten sources or quoting them."""
    models: set[str] = set()
    for part in db.chunked(plan.entity_ids):
        models.update(
            r[0]
            for r in conn.execute(f"SELECT id FROM mental_models WHERE entity_id IN ({db.placeholders(part)})", part)
        )
    if _has_table(conn, "mental_model_sources"):
        sources = (("fact", plan.fact_ids), ("observation", changes.observations_deleted), ("episode", episode_ids))
        for source_type, ids in sources:
            for part in db.chunked(list(ids)):
                models.update(
                    r[0]
                    for r in conn.execute(
                        f"""SELECT mental_model_id FROM mental_model_sources
                            WHERE source_type = ? AND source_id IN ({db.placeholders(part)})""",
                        [source_type, *part],
                    )
                )
    quoted = quotes_forgotten(plan)
    if quoted is not None:
        for model_id, name, description in conn.execute("SELECT id, name, description FROM mental_models"):
            if quoted(f"{name}\n{description}"):
                models.add(model_id)
    _unlink_versions(conn, "mental_models", models)
    changes.mental_models_deleted = sorted(models)
    for part in db.chunked(changes.mental_models_deleted):
        conn.execute(f"DELETE FROM mental_models WHERE id IN ({db.placeholders(part)})", part)


def rare_words(conn: db.Connection, plan: ForgetPlan) -> list[str]:
    """Words of the forgotten facts that no remaining fact uses (call once the facts are deleted)."""
    words = {w.lower() for text in plan.texts for w in _WORD.findall(text) if not w.isdigit()}
    return sorted(
        w
        for w in words
        if conn.execute("SELECT 1 FROM facts_fts WHERE facts_fts MATCH ? LIMIT 1", (f'"{w}"',)).fetchone() is None
    )


def quotes_forgotten(plan: ForgetPlan) -> Callable[[str], bool] | None:
    """A test for 'this text repeats something forgotten' (module docstring); None when there is nothing to test."""
    texts = [" ".join(t.lower().split()) for t in plan.texts if len(t) >= MIN_QUOTED_CHARS]
    words = name_pattern([*plan.names, *plan.rare_words])
    if not texts and words is None:
        return None

    def quotes(text: str) -> bool:
        lowered = " ".join(text.lower().split())
        return any(t in lowered for t in texts) or bool(words and words.search(text))

    return quotes


def _unlink_versions(conn: db.Connection, table: str, doomed: set[str]) -> None:
    """Versions that point (parent_id) at a doomed version point at its nearest surviving ancestor, and go stale."""
    for version_id in sorted(doomed):
        ancestor = conn.execute(f"SELECT parent_id FROM {table} WHERE id = ?", (version_id,)).fetchone()[0]
        while ancestor is not None and ancestor in doomed:
            ancestor = conn.execute(f"SELECT parent_id FROM {table} WHERE id = ?", (ancestor,)).fetchone()[0]
        children = [r[0] for r in conn.execute(f"SELECT id FROM {table} WHERE parent_id = ?", (version_id,))]
        for child in children:
            if child not in doomed:
                conn.execute(f"UPDATE {table} SET parent_id = ?, is_stale = 1 WHERE id = ?", (ancestor, child))
        if ancestor is not None:
            conn.execute(f"UPDATE {table} SET is_stale = 1 WHERE id = ?", (ancestor,))


def _has_table(conn: db.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None
