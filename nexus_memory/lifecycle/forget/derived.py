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

from nexus_memory.core import db
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
    runs = db.column_in(conn, "SELECT analysis_run_id FROM observation_facts WHERE fact_id IN ({marks})", plan.fact_ids)
    runs += db.column_in(conn, "SELECT id FROM analysis_runs WHERE episode_id IN ({marks})", episode_ids)
    if not runs:
        return changes
    doomed_facts = set(plan.fact_ids)
    members = db.column_in(conn, "SELECT fact_id FROM observation_facts WHERE analysis_run_id IN ({marks})", runs)
    changes.facts_requeued = db.execute_in(
        conn,
        "UPDATE facts SET is_consolidated = 0 WHERE id IN ({marks})",
        [f for f in members if f not in doomed_facts],
    )
    changes.observations_deleted = sorted(set(runs))
    _delete_versions(conn, "analysis_runs", changes.observations_deleted)
    return changes


def delete_mental_models(
    conn: db.Connection, plan: ForgetPlan, changes: DerivedChanges, episode_ids: Sequence[str]
) -> None:
    """Delete mental model versions about forgotten entities, built on forgotten sources or quoting them."""
    models = db.column_in(conn, "SELECT id FROM mental_models WHERE entity_id IN ({marks})", plan.entity_ids)
    if _has_table(conn, "mental_model_sources"):
        sources = (("fact", plan.fact_ids), ("observation", changes.observations_deleted), ("episode", episode_ids))
        for source_type, ids in sources:
            models += db.column_in(
                conn,
                "SELECT mental_model_id FROM mental_model_sources WHERE source_type = ? AND source_id IN ({marks})",
                ids,
                source_type,
            )
    quoted = quotes_forgotten(plan)
    if quoted is not None:
        rows = conn.execute("SELECT id, name, description FROM mental_models").fetchall()
        models += [r[0] for r in rows if quoted(f"{r[1]}\n{r[2]}")]
    changes.mental_models_deleted = sorted(set(models))
    _delete_versions(conn, "mental_models", changes.mental_models_deleted)


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


def _delete_versions(conn: db.Connection, table: str, doomed: list[str]) -> None:
    """Delete versions (parent_id chains); a surviving version that pointed at a deleted one points at its
    nearest surviving ancestor instead, and it and that ancestor are marked stale."""
    gone = set(doomed)
    for version_id in doomed:
        ancestor = conn.execute(f"SELECT parent_id FROM {table} WHERE id = ?", (version_id,)).fetchone()[0]
        while ancestor is not None and ancestor in gone:
            ancestor = conn.execute(f"SELECT parent_id FROM {table} WHERE id = ?", (ancestor,)).fetchone()[0]
        children = [r[0] for r in conn.execute(f"SELECT id FROM {table} WHERE parent_id = ?", (version_id,))]
        for child in children:
            if child not in gone:
                conn.execute(f"UPDATE {table} SET parent_id = ?, is_stale = 1 WHERE id = ?", (ancestor, child))
        if ancestor is not None:
            conn.execute(f"UPDATE {table} SET is_stale = 1 WHERE id = ?", (ancestor,))
    # Detached from each other first, so chunked deletes never leave a version pointing at a deleted one.
    db.execute_in(conn, f"UPDATE {table} SET parent_id = NULL WHERE id IN ({{marks}})", doomed)
    db.execute_in(conn, f"DELETE FROM {table} WHERE id IN ({{marks}})", doomed)


def _has_table(conn: db.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None
