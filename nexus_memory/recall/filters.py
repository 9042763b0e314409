"""Recall filters as SQL: one WHERE clause per target table, applied inside every strategy before its LIMIT.

Facts carry their own platform, thread, session and time; observations take theirs from the episode
they were drawn from; mental models and entities have no place, so a place filter excludes them.

A fact has two times (docs/stores.md): `as_of`, when it was said, and `about_start`..`about_end`, the
time its text names (NULL when it names none). `time_after` / `time_before` (recall's arguments,
`search --after` / `--before`) bound when it was said. `about_after` / `about_before`, the time a
question asks about ("what did Sarah do in May 2023?"), match a fact whose about-time overlaps them,
or, naming no time, one said in them. Observations, mental models and events have one time each,
which both pairs bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nexus_memory.core import db
from nexus_memory.facts.state import hidden_sql

TOOL_PLATFORM = "memory_tool"  # platform of facts written through the agent tools (remember/correct)
OBSERVATION_TYPE = "observation_v1"
MAX_TIME = 2**63 - 1  # an open end of a window, as SQLite's largest integer


@dataclass(frozen=True)
class Filters:
    """Restrictions applied inside every strategy. Time bounds are inclusive (as VectorIndex's)."""

    time_after: int | None = None  # when said (facts.as_of), inclusive
    time_before: int | None = None
    platform: str | None = None
    thread_id: str | None = None
    session_id: str | None = None
    exclude_session_id: str | None = None
    entity_ids: tuple[str, ...] | None = None  # None: no entity filter; (): unknown entity, no result
    tags: tuple[str, ...] | None = None  # ACL scope of mental models: None = all; else untagged or sharing one
    about_after: int | None = None  # the time asked about: facts by about_start..about_end, else as_of
    about_before: int | None = None

    @property
    def restricts(self) -> bool:
        """Whether any filter narrows the facts (exclude_session alone does not)."""
        return any(
            v is not None
            for v in (
                self.time_after,
                self.time_before,
                self.about_after,
                self.about_before,
                self.platform,
                self.thread_id,
                self.session_id,
                self.entity_ids,
            )
        )

    def fact_sql(self, alias: str = "f") -> tuple[str, list[Any]]:
        """WHERE clause (never empty) and arguments restricting facts aliased `alias`."""
        a = alias
        clauses, args = self._time_place_sql(f"{a}.as_of", f"{a}.platform", f"{a}.thread_id", about=False)
        if self.about_after is not None or self.about_before is not None:
            # The time asked about: a fact's about-time overlaps it, or the fact names none and was said in it.
            # Two OR terms, so each has an index (idx_facts_as_of, idx_facts_about) rather than one COALESCE.
            low, high = self.about_after or 0, MAX_TIME if self.about_before is None else self.about_before
            clauses.append(
                f"(({a}.about_start IS NULL AND {a}.as_of >= ? AND {a}.as_of <= ?) OR "
                f"({a}.about_start IS NOT NULL AND {a}.about_start <= ? AND {a}.about_end >= ?))"
            )
            args += [low, high, high, low]
        if self.session_id is not None:
            clauses.append(f"{a}.session_id = ?")
            args.append(self.session_id)
        if self.exclude_session_id is not None:
            clauses.append(f"({a}.session_id IS NULL OR {a}.session_id != ?)")
            args.append(self.exclude_session_id)
        if self.entity_ids is not None:
            marks = db.placeholders(self.entity_ids) or "NULL"
            clauses.append(f"{a}.id IN (SELECT fact_id FROM fact_entities WHERE entity_id IN ({marks}))")
            args.extend(self.entity_ids)
        # Facts are immutable: a decayed or corrected one is hidden by its fact_state row (lifecycle/state.py).
        clauses.append(f"NOT {hidden_sql(a)}")
        return " AND ".join(clauses), args

    def observation_sql(self) -> tuple[str, list[Any]] | None:
        """WHERE clause for analysis_runs `r` LEFT JOIN episodes `ep`; None when none can match."""
        if self.session_id is not None:
            return None  # observations span sessions; a session-only recall is about that session's facts
        clauses, args = self._time_place_sql("COALESCE(ep.end_time, r.created_at)", "ep.platform", "ep.thread_id")
        clauses += [
            "r.analysis_type_id = ?",
            "r.output_text IS NOT NULL",
            "r.output_text != ''",
            # Observations are versioned by parent_id: only the newest version answers.
            "NOT EXISTS (SELECT 1 FROM analysis_runs c WHERE c.parent_id = r.id)",
            # Its text quotes its facts: one resting on a hidden fact waits for its next version.
            f"NOT EXISTS (SELECT 1 FROM observation_facts o JOIN facts f ON f.id = o.fact_id "
            f"WHERE o.analysis_run_id = r.id AND {hidden_sql('f')})",
        ]
        args.append(OBSERVATION_TYPE)
        if self.entity_ids is not None:
            marks = db.placeholders(self.entity_ids) or "NULL"
            clauses.append(f"""r.id IN (SELECT o.analysis_run_id FROM observation_facts o
                               JOIN fact_entities fe ON fe.fact_id = o.fact_id WHERE fe.entity_id IN ({marks}))""")
            args.extend(self.entity_ids)
        return " AND ".join(clauses), args

    def mental_model_sql(self) -> tuple[str, list[Any]] | None:
        """WHERE clause for mental_models `m`; None when none can match (they have no place)."""
        if self.platform is not None or self.thread_id is not None or self.session_id is not None:
            return None
        clauses, args = self._time_place_sql("m.updated_at", None, None)
        clauses.append("NOT EXISTS (SELECT 1 FROM mental_models c WHERE c.parent_id = m.id)")
        if self.tags is not None:
            # A tagged model is visible only to a caller holding one of its tags; untagged ones to all.
            clauses.append(
                "(m.tags IS NULL OR NOT json_valid(m.tags) OR json_array_length(m.tags) = 0 OR EXISTS ("
                f"SELECT 1 FROM json_each(m.tags) t WHERE t.value IN ({db.placeholders(self.tags) or 'NULL'})))"
            )
            args.extend(self.tags)
        if self.entity_ids is not None:
            marks = db.placeholders(self.entity_ids) or "NULL"
            clauses.append(f"m.entity_id IN ({marks})")
            args.extend(self.entity_ids)
        return " AND ".join(clauses), args

    def event_sql(self, alias: str = "e") -> tuple[str, list[Any]] | None:
        """WHERE clause for ledger events aliased `alias` (recall/fresh.py); None when none can match: an event
        the writer has not read yet is linked to no entity."""
        if self.entity_ids is not None:
            return None
        a = alias
        clauses, args = self._time_place_sql(f"{a}.as_of", f"{a}.platform", f"{a}.thread_id")
        for clause, value in (
            (f"{a}.session_id = ?", self.session_id),
            (f"({a}.session_id IS NULL OR {a}.session_id != ?)", self.exclude_session_id),
        ):
            if value is not None:
                clauses.append(clause)
                args.append(value)
        return " AND ".join(clauses) or "1", args

    def entity_sql(self) -> tuple[str, list[Any]]:
        """WHERE clause for entities `n`: live ones, restricted to the entity filter if any."""
        clauses, args = ["n.merged_into IS NULL"], []
        if self.entity_ids is not None:
            clauses.append(f"n.id IN ({db.placeholders(self.entity_ids) or 'NULL'})")
            args.extend(self.entity_ids)
        return " AND ".join(clauses), args

    @property
    def one_time(self) -> tuple[int | None, int | None]:
        """(after, before) for rows with one time: the tighter of when-said and asked-about bounds."""
        after = [t for t in (self.time_after, self.about_after) if t is not None]
        before = [t for t in (self.time_before, self.about_before) if t is not None]
        return (max(after) if after else None), (min(before) if before else None)

    def _time_place_sql(
        self, as_of: str, platform: str | None, thread: str | None, *, about: bool = True
    ) -> tuple[list[str], list[Any]]:
        """Time and place clauses; `about`: the row has one time, which the asked-about window bounds too."""
        clauses: list[str] = []
        args: list[Any] = []
        after, before = self.one_time if about else (self.time_after, self.time_before)
        for clause, value in (
            (f"{as_of} >= ?", after),
            (f"{as_of} <= ?", before),
            (f"{platform} = ?", self.platform if platform else None),
            (f"{thread} = ?", self.thread_id if thread else None),
        ):
            if value is not None:
                clauses.append(clause)
                args.append(value)
        if (platform is None and self.platform is not None) or (thread is None and self.thread_id is not None):
            clauses.append("0")
        return clauses, args
