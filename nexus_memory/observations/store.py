"""Observations in SQLite: knowledge-episode and analysis-run versions, their facts, staleness, failures.

An observation is a chain of `analysis_runs` rows (type observation_v1) linked by parent_id; its first
row's id is the chain's `root_id`. Each version analyses its own version of a knowledge episode (an
`episodes` row under the 'knowledge' definition, strategy 'consolidation', grouping the source events
of the observation's facts), so a version is always an (episode, run) pair and `observation_facts`
links the run to every fact it rests on. A retired observation (merged or deleted) gets a last
version with empty text and status 'deleted': recall and embedding skip it, history stays.

Ids are deterministic: version 1 of chain `obs_x` is `obs_x`, version n is `obs_x-v<n>`; its episode
is `kep_x` / `kep_x-v<n>`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from nexus_memory.core import db
from nexus_memory.core.ids import now_ms, stable_id
from nexus_memory.core.tokens import estimate_tokens
from nexus_memory.facts.state import hidden_sql
from nexus_memory.observations.render import MemberFact
from nexus_memory.recall.filters import OBSERVATION_TYPE

KNOWLEDGE_DEFINITION_ID = "def_knowledge"
OBSERVATION_PROMPT_VERSION = "1.0"


@dataclass
class ObservationState:
    """One observation as consolidation holds it in memory: its current version plus pending changes."""

    root_id: str
    entity_id: str
    topic: str
    facts: dict[str, MemberFact]  # fact id -> fact; the observation rests on all of them
    text: str
    run_id: str | None = None  # the version on disk (None: never written)
    episode_id: str | None = None
    version: int = 0
    draft: bool = False  # run_id was written by this consolidation run: amend it instead of versioning
    dirty: bool = False
    retired: str | None = None  # why it ends (merged, deleted), when it does
    written_text: str | None = None
    written_facts: frozenset[str] = frozenset()
    authored: bool = False  # text written by an LLM: keep it, do not re-render
    vector_sum: np.ndarray | None = None
    vector_count: int = 0
    extra: dict = field(default_factory=dict)

    def centroid(self) -> np.ndarray | None:
        if self.vector_sum is None or self.vector_count == 0:
            return None
        norm = float(np.linalg.norm(self.vector_sum))
        return self.vector_sum / norm if norm > 0 else None

    def add_vector(self, vector: np.ndarray | None) -> None:
        if vector is None:
            return
        self.vector_sum = vector.copy() if self.vector_sum is None else self.vector_sum + vector
        self.vector_count += 1


def ensure_registry(conn: db.Connection) -> None:
    """The observation analysis type and the knowledge-episode definition, created once."""
    now = now_ms()
    conn.execute(
        """INSERT OR IGNORE INTO analysis_types (id, name, version, output_type, prompt_template, created_at)
           VALUES (?, ?, ?, 'freeform', ?, ?)""",
        (OBSERVATION_TYPE, OBSERVATION_TYPE, OBSERVATION_PROMPT_VERSION, "see nexus_memory/observations/llm.py", now),
    )
    conn.execute(
        """INSERT OR IGNORE INTO episode_definitions (id, name, strategy, params, description, created_at)
           VALUES (?, 'knowledge', 'consolidation', ?, ?, ?)""",
        (
            KNOWLEDGE_DEFINITION_ID,
            json.dumps({"group_by": "observation"}),
            "The source events behind one observation's facts; a new version each time the observation changes.",
            now,
        ),
    )


def new_root_id(entity_id: str, first_fact_id: str) -> str:
    return stable_id("obs", entity_id, first_fact_id)


def version_ids(root_id: str, version: int) -> tuple[str, str]:
    """(run id, episode id) of version `version` of chain `root_id`."""
    suffix = "" if version == 1 else f"-v{version}"
    return f"{root_id}{suffix}", f"kep{root_id[3:]}{suffix}"


def version_of(run_id: str) -> int:
    match = re.search(r"-v(\d+)$", run_id)
    return int(match.group(1)) if match else 1


# --- reading ------------------------------------------------------------------------------------

CURRENT_SQL = f"""r.analysis_type_id = '{OBSERVATION_TYPE}' AND r.status = 'completed'
    AND NOT EXISTS (SELECT 1 FROM analysis_runs c WHERE c.parent_id = r.id)"""


def current_observations(conn: db.Connection, entity_ids: Sequence[str]) -> list[dict]:
    """Current (newest, not retired) observation versions of these entities, with their fact ids."""
    out: list[dict] = []
    for part in db.chunked(list(entity_ids)):
        rows = conn.execute(
            f"""SELECT r.id, r.root_id, r.episode_id, r.entity_id, r.topic, r.output_text, r.is_stale
                FROM analysis_runs r WHERE r.entity_id IN ({db.placeholders(part)}) AND {CURRENT_SQL}
                ORDER BY r.root_id""",
            part,
        ).fetchall()
        out += [dict(r) for r in rows]
    for part in db.chunked([o["id"] for o in out]):
        links: dict[str, list[str]] = {}
        hidden: dict[str, list[str]] = {}
        for run_id, fact_id, is_hidden in conn.execute(
            f"""SELECT o.analysis_run_id, o.fact_id, {hidden_sql("f")} FROM observation_facts o
                JOIN facts f ON f.id = o.fact_id
                WHERE o.analysis_run_id IN ({db.placeholders(part)}) ORDER BY f.as_of, f.id""",
            part,
        ):
            (hidden if is_hidden else links).setdefault(run_id, []).append(fact_id)
        for obs in out:
            obs["fact_ids"] = links.get(obs["id"], [])
            obs["hidden_fact_ids"] = hidden.get(obs["id"], [])
    return out


def entities_with_hidden_facts(conn: db.Connection) -> list[str]:
    """Entities with a current observation that still rests on a hidden (decayed or corrected) fact."""
    rows = conn.execute(
        f"""SELECT DISTINCT r.entity_id FROM analysis_runs r JOIN observation_facts o ON o.analysis_run_id = r.id
            JOIN facts f ON f.id = o.fact_id WHERE {CURRENT_SQL} AND {hidden_sql("f")} ORDER BY r.entity_id"""
    ).fetchall()
    return [r[0] for r in rows if r[0]]


def settle_hidden_pending(conn: db.Connection) -> int:
    """Hidden facts never join an observation: pending ones count as consolidated (left out on purpose)."""
    return conn.execute(
        f"UPDATE facts SET is_consolidated = 1 WHERE is_consolidated = 0 AND {hidden_sql('facts')}"
    ).rowcount


def fact_rows(conn: db.Connection, fact_ids: Sequence[str]) -> dict[str, dict]:
    """id -> {text, as_of, about_start, about_end, source_event_id, is_consolidated} for these facts."""
    out: dict[str, dict] = {}
    for part in db.chunked(list(dict.fromkeys(fact_ids))):
        for row in conn.execute(
            f"""SELECT id, text, as_of, about_start, about_end, source_event_id, is_consolidated FROM facts
                WHERE id IN ({db.placeholders(part)})""",
            part,
        ):
            out[row["id"]] = dict(row)
    return out


def fact_links(conn: db.Connection, fact_ids: Sequence[str]) -> dict[str, list[str]]:
    """fact id -> the entity ids it links (the knowledge graph)."""
    out: dict[str, list[str]] = {}
    for part in db.chunked(list(fact_ids)):
        for fact_id, entity_id in conn.execute(
            f"SELECT fact_id, entity_id FROM fact_entities WHERE fact_id IN ({db.placeholders(part)})", part
        ):
            out.setdefault(fact_id, []).append(entity_id)
    return out


def fact_vectors(conn: db.Connection, model: str, fact_ids: Sequence[str]) -> dict[str, np.ndarray]:
    """Stored fact vectors under the index model (the embeddings step made them)."""
    out: dict[str, np.ndarray] = {}
    for part in db.chunked(list(dict.fromkeys(fact_ids))):
        rows = conn.execute(
            f"""SELECT target_id, embedding FROM embeddings WHERE model = ? AND target_type = 'fact'
                AND target_id IN ({db.placeholders(part)})""",
            [model, *part],
        ).fetchall()
        out.update((r[0], np.frombuffer(r[1], dtype="<f4").astype(np.float32)) for r in rows)
    return out


def recent_entity_facts(conn: db.Connection, entity_id: str, limit: int) -> list[str]:
    """The newest consolidated facts linked to an entity (the pool an isolated fact may pair with)."""
    return [
        r[0]
        for r in conn.execute(
            f"""SELECT fe.fact_id FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id
               WHERE fe.entity_id = ? AND f.is_consolidated = 1 AND NOT {hidden_sql("f")}
               ORDER BY fe.as_of DESC, f.rowid DESC LIMIT ?""",
            (entity_id, limit),
        )
    ]


def unconsolidated_batch(conn: db.Connection, after: tuple[int, int] | None, limit: int) -> list[dict]:
    """The next unconsolidated facts in (as_of, insertion) order after `after` (keyset: failures are passed).

    Insertion order, not id order, breaks ties: fact ids are ULIDs, random within a millisecond, and the
    order of facts decides which observation a fact starts, so the same input must give the same order.
    """
    where, args = "f.is_consolidated = 0", []
    if after is not None:
        where += " AND (f.as_of, f.rowid) > (?, ?)"
        args += list(after)
    rows = conn.execute(
        f"""SELECT f.id, f.text, f.as_of, f.about_start, f.about_end, f.source_event_id, f.rowid AS seq
            FROM facts f WHERE {where}
            ORDER BY f.as_of, f.rowid LIMIT ?""",
        [*args, limit],
    ).fetchall()
    return [dict(r) for r in rows]


def pending_fact_count(conn: db.Connection) -> int:
    """Facts consolidation has not handled yet (what the sensors look at)."""
    return conn.execute("SELECT count(*) FROM facts WHERE is_consolidated = 0").fetchone()[0]


# --- writing ------------------------------------------------------------------------------------


def write_state(conn: db.Connection, state: ObservationState, events_of: dict[str, str | None]) -> str | None:
    """Persist a changed observation: amend this run's draft version or add a new version.

    Returns 'created', 'versioned', 'amended', 'retired' or None when nothing changed on disk.
    `events_of` maps each member fact id to its source event id.
    """
    fact_ids = frozenset(state.facts)
    text = "" if state.retired else state.text
    if not state.dirty or (state.run_id is not None and text == state.written_text and fact_ids == state.written_facts):
        state.dirty = False
        return None
    now = now_ms()
    outcome = "retired" if state.retired else ("amended" if state.draft else "versioned" if state.run_id else "created")
    ordered = sorted(state.facts.values(), key=lambda f: (f.as_of, f.id))
    if state.retired:
        ordered = []
    if state.draft and state.run_id and state.episode_id:
        _amend(conn, state, text, ordered, events_of, now)
    else:
        _new_version(conn, state, text, ordered, events_of, now)
    state.written_text, state.written_facts = text, fact_ids
    state.dirty = False
    return outcome


def _episode_values(ordered: Sequence[MemberFact], events_of: dict[str, str | None]) -> tuple[list[str], int, int]:
    events = list(dict.fromkeys(e for f in ordered if (e := events_of.get(f.id))))
    times = [f.as_of for f in ordered] or [now_ms()]
    return events, min(times), max(times)


def _new_version(
    conn: db.Connection,
    state: ObservationState,
    text: str,
    ordered: Sequence[MemberFact],
    events_of: dict[str, str | None],
    now: int,
) -> None:
    previous_run, previous_episode = state.run_id, state.episode_id
    if previous_run is None:
        state.root_id = _free_root(conn, state.root_id)
    version = state.version + 1
    run_id, episode_id = version_ids(state.root_id, version)
    events, start, end = _episode_values(ordered, events_of)
    conn.execute(
        """INSERT INTO episodes (id, definition_id, platform, thread_id, start_time, end_time, event_count,
               first_event_id, last_event_id, parent_id, created_at, partition_key, group_key, token_estimate)
           VALUES (?, ?, NULL, NULL, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)""",
        (
            episode_id,
            KNOWLEDGE_DEFINITION_ID,
            start,
            end,
            len(events),
            events[0] if events else None,
            events[-1] if events else None,
            previous_episode,
            now,
            state.root_id,
            estimate_tokens(text) if text else 0,
        ),
    )
    _link_events(conn, episode_id, events)
    conn.execute(
        """INSERT INTO analysis_runs (id, analysis_type_id, episode_id, parent_id, status, started_at, completed_at,
               output_text, blocked_reason, is_stale, created_at, root_id, entity_id, topic)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)""",
        (
            run_id,
            OBSERVATION_TYPE,
            episode_id,
            previous_run,
            "deleted" if state.retired else "completed",
            now,
            now,
            text,
            state.retired,
            now,
            state.root_id,
            state.entity_id,
            state.topic,
        ),
    )
    _link_facts(conn, run_id, ordered)
    if previous_run is not None:
        mark_models_stale(conn, observation_ids=[previous_run])
    mark_models_stale(conn, entity_ids=[state.entity_id])
    state.run_id, state.episode_id, state.version, state.draft = run_id, episode_id, version, True


def _free_root(conn: db.Connection, root_id: str) -> str:
    """`root_id`, or a derived one when a retired chain already uses it (a fact that came back)."""
    candidate, n = root_id, 1
    while conn.execute("SELECT 1 FROM analysis_runs WHERE root_id = ? LIMIT 1", (candidate,)).fetchone():
        candidate = stable_id("obs", root_id, n)
        n += 1
    return candidate


def _amend(
    conn: db.Connection,
    state: ObservationState,
    text: str,
    ordered: Sequence[MemberFact],
    events_of: dict[str, str | None],
    now: int,
) -> None:
    """Rewrite this run's own version in place (a fact later in the same run joined or left it)."""
    events, start, end = _episode_values(ordered, events_of)
    conn.execute(
        """UPDATE episodes SET start_time = ?, end_time = ?, event_count = ?, first_event_id = ?, last_event_id = ?,
               token_estimate = ? WHERE id = ?""",
        (
            start,
            end,
            len(events),
            events[0] if events else None,
            events[-1] if events else None,
            estimate_tokens(text) if text else 0,
            state.episode_id,
        ),
    )
    conn.execute("DELETE FROM episode_events WHERE episode_id = ?", (state.episode_id,))
    _link_events(conn, state.episode_id, events)
    conn.execute(
        """UPDATE analysis_runs SET output_text = ?, topic = ?, status = ?, blocked_reason = ?, completed_at = ?,
               is_stale = 0 WHERE id = ?""",
        (text, state.topic, "deleted" if state.retired else "completed", state.retired, now, state.run_id),
    )
    conn.execute("DELETE FROM observation_facts WHERE analysis_run_id = ?", (state.run_id,))
    _link_facts(conn, state.run_id, ordered)


def _link_events(conn: db.Connection, episode_id: str | None, events: Sequence[str]) -> None:
    conn.executemany(
        "INSERT INTO episode_events (episode_id, event_id, position) VALUES (?, ?, ?)",
        [(episode_id, e, i) for i, e in enumerate(events)],
    )


def _link_facts(conn: db.Connection, run_id: str | None, facts: Sequence[MemberFact]) -> None:
    conn.executemany(
        "INSERT INTO observation_facts (analysis_run_id, fact_id) VALUES (?, ?)", [(run_id, f.id) for f in facts]
    )


def mark_models_stale(
    conn: db.Connection, *, observation_ids: Iterable[str] = (), entity_ids: Iterable[str] = ()
) -> int:
    """Current mental models built on these observation versions, or about these entities, become stale."""
    changed = 0
    current = "NOT EXISTS (SELECT 1 FROM mental_models c WHERE c.parent_id = mental_models.id)"
    for part in db.chunked(list(observation_ids)):
        changed += conn.execute(
            f"""UPDATE mental_models SET is_stale = 1 WHERE is_stale = 0 AND {current} AND id IN (
                    SELECT mental_model_id FROM mental_model_sources
                    WHERE source_type = 'observation' AND source_id IN ({db.placeholders(part)}))""",
            part,
        ).rowcount
    for part in db.chunked(list(entity_ids)):
        changed += conn.execute(
            f"""UPDATE mental_models SET is_stale = 1
                WHERE is_stale = 0 AND {current} AND entity_id IN ({db.placeholders(part)})""",
            part,
        ).rowcount
    return changed


def mark_consolidated(conn: db.Connection, fact_ids: Sequence[str]) -> None:
    for part in db.chunked(list(fact_ids)):
        marks = db.placeholders(part)
        conn.execute(f"UPDATE facts SET is_consolidated = 1 WHERE id IN ({marks})", part)
        conn.execute(f"DELETE FROM fact_consolidation_failures WHERE fact_id IN ({marks})", part)


def record_failure(
    conn: db.Connection, fact_id: str, consolidator: str, error: str, prompt_tokens: int, completion_tokens: int
) -> None:
    """One line saying why a fact could not be consolidated; the fact stays pending for the next run."""
    conn.execute(
        """INSERT INTO fact_consolidation_failures (fact_id, consolidator, attempts, error, prompt_tokens,
               completion_tokens, updated_at) VALUES (?, ?, 1, ?, ?, ?, ?)
           ON CONFLICT(fact_id) DO UPDATE SET consolidator = excluded.consolidator, attempts = attempts + 1,
               error = excluded.error, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
               completion_tokens = completion_tokens + excluded.completion_tokens, updated_at = excluded.updated_at""",
        (fact_id, consolidator, error[:2000], prompt_tokens, completion_tokens, now_ms()),
    )


def clear_stale(conn: db.Connection) -> int:
    """Current observations whose entity has no pending fact left are no longer stale; returns how many."""
    return conn.execute(
        """UPDATE analysis_runs SET is_stale = 0 WHERE is_stale = 1 AND analysis_type_id = ?
           AND entity_id NOT IN (SELECT fe.entity_id FROM facts f JOIN fact_entities fe ON fe.fact_id = f.id
                                 WHERE f.is_consolidated = 0)""",
        (OBSERVATION_TYPE,),
    ).rowcount


def merged_entity_observations(conn: db.Connection) -> list[dict]:
    """Current observations about an entity that has since been merged into another."""
    rows = conn.execute(
        f"""SELECT r.id, r.root_id, r.entity_id, e.merged_into FROM analysis_runs r
            JOIN entities e ON e.id = r.entity_id WHERE e.merged_into IS NOT NULL AND {CURRENT_SQL}"""
    ).fetchall()
    return [dict(r) for r in rows]


def unconsolidate(conn: db.Connection, fact_ids: Sequence[str]) -> None:
    """Send facts back to consolidation (their observation was retired for a merge of its entity)."""
    for part in db.chunked(list(fact_ids)):
        conn.execute(f"UPDATE facts SET is_consolidated = 0 WHERE id IN ({db.placeholders(part)})", part)


def observation_summary(conn: db.Connection) -> dict[str, float]:
    """Store-wide figures: current observations, facts per observation, stale ones, versioned chains."""
    current, stale, linked = conn.execute(
        f"""SELECT count(*), COALESCE(sum(r.is_stale), 0),
                   COALESCE(sum((SELECT count(*) FROM observation_facts o WHERE o.analysis_run_id = r.id)), 0)
            FROM analysis_runs r WHERE {CURRENT_SQL}"""
    ).fetchone()
    versioned = conn.execute(
        f"""SELECT count(DISTINCT root_id) FROM analysis_runs WHERE analysis_type_id = '{OBSERVATION_TYPE}'
            AND parent_id IS NOT NULL"""
    ).fetchone()[0]
    return {
        "observations": current,
        "facts_per_observation": round(linked / current, 2) if current else 0.0,
        "stale_observations": stale,
        "versioned_observations": versioned,
    }


def dangling_observation_facts(conn: db.Connection) -> int:
    """observation_facts rows whose fact no longer exists (foreign keys should make this 0)."""
    return conn.execute(
        "SELECT count(*) FROM observation_facts o WHERE NOT EXISTS (SELECT 1 FROM facts f WHERE f.id = o.fact_id)"
    ).fetchone()[0]
