"""Running a writer over episodes: each episode all-or-nothing, outcomes recorded for reruns.

Both ways a writer is triggered end here: the Dagster `facts` asset (episodes of a partition; the pipeline
commits a fast writer's episodes several at a time, each one a savepoint) and `on_turn_complete` (an agent turn). Events
already in memory_processing_log are never extracted twice; an episode that fails leaves nothing behind but
its failure row, and is rerun alone.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nexus_memory.core.ids import now_ms, ulid
from nexus_memory.core.stores import Stores
from nexus_memory.episodes.grouping import (
    DEFINITIONS,
    EVENT_COLUMNS,
    WRITER_DEFINITION,
    episode_events,
    ledger_event,
)
from nexus_memory.events import ledger
from nexus_memory.events.ledger import Event, row_to_event
from nexus_memory.events.partitions import partition_key
from nexus_memory.identity import store as identity
from nexus_memory.writer.base import EpisodeInput, EpisodeWriter, WriteResult
from nexus_memory.writer.tools import WriterTools

THREAD_CONTEXT_EVENTS = 20


@dataclass
class EpisodeOutcome:
    episode_id: str | None
    status: str  # 'ok' | 'skipped' | 'failed'
    facts: int = 0
    events: int = 0
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    mode: str = ""  # the writer's mode for this episode: 'offline', or the LLM writer's 'tools' | 'structured'
    dropped: dict[str, int] = field(default_factory=dict)  # items validation dropped, by '<item>:<reason>'


@dataclass
class PartitionReport:
    partition_key: str
    outcomes: list[EpisodeOutcome] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def facts(self) -> int:
        return sum(o.facts for o in self.outcomes)

    def as_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition_key,
            "episodes": len(self.outcomes),
            "ok": self.count("ok"),
            "skipped": self.count("skipped"),
            "failed": self.count("failed"),
            "facts": self.facts,
            "prompt_tokens": sum(o.prompt_tokens for o in self.outcomes),
            "completion_tokens": sum(o.completion_tokens for o in self.outcomes),
            "failures": [{"episode_id": o.episode_id, "error": o.error} for o in self.outcomes if o.status == "failed"],
            "modes": dict(Counter(o.mode for o in self.outcomes if o.mode)),
            "dropped": dict(sum((Counter(o.dropped) for o in self.outcomes), Counter())),
        }


def _processed(stores: Stores, event_ids: Sequence[str]) -> set[str]:
    rows = stores.conn.execute(
        "SELECT event_id FROM memory_processing_log WHERE event_id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(event_ids)),),
    ).fetchall()
    return {r[0] for r in rows}


def thread_context(stores: Stores, first: Event, limit: int = THREAD_CONTEXT_EVENTS) -> list[Event]:
    """The last `limit` events of the same thread before `first`: what the writer reads as context."""
    if not first.thread_id:
        return []
    rows = stores.conn.execute(
        f"""SELECT {EVENT_COLUMNS} FROM events e WHERE thread_id = ? AND platform = ? AND as_of < ?
            ORDER BY as_of DESC LIMIT ?""",
        (first.thread_id, first.platform, first.as_of, limit),
    ).fetchall()
    return [ledger_event(tuple(r)) for r in reversed(rows)]


def write_events(
    stores: Stores,
    events: list[Event],
    writer: EpisodeWriter,
    *,
    episode_id: str | None = None,
    context: list[Event] | None = None,
) -> EpisodeOutcome:
    """Run the writer on events not yet processed, all-or-nothing; record the outcome."""
    started = time.perf_counter()
    outcome = EpisodeOutcome(episode_id, "skipped")
    run_id = ulid()
    try:
        # Identity reads go to SQL once and stay for the next episode while identity is unchanged.
        with stores.transaction(), identity.lookups_remembered(stores.conn):
            # Read under the write lock: two runs reaching the same events write them once.
            done = _processed(stores, [e.id for e in events])
            new = [e for e in events if e.id not in done]
            outcome.events = len(new)
            if not new:
                _record(stores, outcome, writer.name)
                return outcome
            earlier = [e for e in events if e.id in done]
            ctx = (context if context is not None else thread_context(stores, events[0])) + earlier
            tools = WriterTools(stores, run_id, episode_id, writer=writer.name)
            result: WriteResult = writer.write(tools, EpisodeInput(episode_id, new, ctx))
            now = now_ms()
            stores.conn.executemany(
                """INSERT OR IGNORE INTO memory_processing_log (event_id, processed_at, writer_run_id, created_at)
                   VALUES (?, ?, ?, ?)""",
                [(e.id, now, run_id, now) for e in new],
            )
            if episode_id:
                stores.conn.executemany(
                    """INSERT INTO episode_entity_mentions (episode_id, entity_id, mention_count) VALUES (?, ?, ?)
                       ON CONFLICT DO UPDATE SET mention_count = mention_count + excluded.mention_count""",
                    [(episode_id, k, v) for k, v in tools.entity_mentions.items()],
                )
            outcome.status, outcome.facts = "ok", len(tools.facts_written)
            outcome.prompt_tokens, outcome.completion_tokens = result.prompt_tokens, result.completion_tokens
            outcome.mode, outcome.dropped = result.mode or _plain_mode(writer), dict(result.dropped)
            outcome.seconds = time.perf_counter() - started
            _record(stores, outcome, writer.name)
    except Exception as exc:
        outcome.status, outcome.facts = "failed", 0
        # Tokens spent on a failed episode are still spent; the LLM writer attaches them to its failure.
        outcome.prompt_tokens = getattr(exc, "prompt_tokens", 0)
        outcome.completion_tokens = getattr(exc, "completion_tokens", 0)
        outcome.mode = getattr(exc, "mode", "") or _plain_mode(writer)
        outcome.error = f"{type(exc).__name__}: {exc}"[:2000]
        outcome.seconds = time.perf_counter() - started
        _record(stores, outcome, writer.name)
    return outcome


def _plain_mode(writer: EpisodeWriter) -> str:
    """The mode of a writer that has only one: the offline writer's is 'offline'."""
    return "offline" if writer.name == "offline" else ""


def _record(stores: Stores, outcome: EpisodeOutcome, writer: str) -> None:
    if outcome.episode_id is None:
        return
    stores.conn.execute(
        """INSERT INTO episode_processing (episode_id, status, writer, attempts, facts_written, prompt_tokens,
               completion_tokens, error, updated_at, mode, seconds) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (episode_id) DO UPDATE SET
               -- Another run that wrote this episode first leaves 'ok'; finding nothing new after it is no news.
               status = CASE WHEN excluded.status = 'skipped' AND status = 'ok' THEN status ELSE excluded.status END,
               writer = excluded.writer,
               attempts = attempts + 1, facts_written = facts_written + excluded.facts_written,
               prompt_tokens = prompt_tokens + excluded.prompt_tokens,
               completion_tokens = completion_tokens + excluded.completion_tokens,
               -- A skip ran no writer: the mode that wrote the episode stays.
               mode = coalesce(excluded.mode, mode), seconds = seconds + excluded.seconds,
               error = excluded.error, updated_at = excluded.updated_at""",
        (
            outcome.episode_id,
            outcome.status,
            writer,
            outcome.facts,
            outcome.prompt_tokens,
            outcome.completion_tokens,
            outcome.error,
            now_ms(),
            outcome.mode or None,
            outcome.seconds,
        ),
    )


@dataclass(frozen=True)
class FailedEpisode:
    """A writer episode whose last run failed, with the reason (what `nexus-memory failed` lists)."""

    partition_key: str
    episode_id: str
    attempts: int
    error: str | None
    mode: str | None = None  # the writer mode of the last attempt ('offline', 'tools', 'structured')
    seconds: float = 0.0  # over all attempts


def failed_episodes(stores: Stores, partition_keys: Sequence[str] | None = None) -> list[FailedEpisode]:
    """Writer episodes whose last run failed, oldest first; only those of `partition_keys` when given."""
    rows = stores.conn.execute(
        """SELECT e.partition_key, p.episode_id, p.attempts, p.error, p.mode, p.seconds
           FROM episode_processing p JOIN episodes e ON e.id = p.episode_id
           WHERE p.status = 'failed' AND e.definition_id = :definition
             AND (:keys IS NULL OR e.partition_key IN (SELECT value FROM json_each(:keys)))
           ORDER BY e.start_time, e.id""",
        {
            "definition": DEFINITIONS[WRITER_DEFINITION].id,
            "keys": None if partition_keys is None else json.dumps(list(partition_keys)),
        },
    ).fetchall()
    return [FailedEpisode(*r) for r in rows]


@dataclass(frozen=True)
class ModeCost:
    """What the writer's episodes cost in one mode (`mode` '' for rows written before modes were recorded)."""

    mode: str
    episodes: int
    ok: int
    seconds: float  # in all, over every attempt
    prompt_tokens: int
    completion_tokens: int

    @property
    def seconds_per_episode(self) -> float:
        return self.seconds / self.episodes if self.episodes else 0.0

    @property
    def tokens_per_episode(self) -> float:
        return (self.prompt_tokens + self.completion_tokens) / self.episodes if self.episodes else 0.0


def episode_costs(
    stores: Stores, partition_keys: Sequence[str] | None = None, *, since_ms: int | None = None
) -> list[ModeCost]:
    """Writer episodes per mode with their seconds and tokens; only those of `partition_keys` when given,
    and only those whose last attempt ran at or after `since_ms` (a run's own episodes) when given."""
    rows = stores.conn.execute(
        """SELECT coalesce(p.mode, ''), count(*), sum(p.status = 'ok'), sum(p.seconds), sum(p.prompt_tokens),
                  sum(p.completion_tokens)
           FROM episode_processing p JOIN episodes e ON e.id = p.episode_id
           WHERE e.definition_id = :definition AND p.status != 'skipped'
             AND (:keys IS NULL OR e.partition_key IN (SELECT value FROM json_each(:keys)))
             AND (:since IS NULL OR p.updated_at >= :since)
           GROUP BY 1 ORDER BY 1""",
        {
            "definition": DEFINITIONS[WRITER_DEFINITION].id,
            "keys": None if partition_keys is None else json.dumps(list(partition_keys)),
            "since": since_ms,
        },
    ).fetchall()
    return [ModeCost(r[0], r[1], r[2], round(r[3], 3), r[4], r[5]) for r in rows]


def pending_episodes(stores: Stores, day: str, platform: str, *, only_failed: bool = False) -> list[str]:
    """Writer episodes of a partition that have not succeeded yet (all, or only failed ones), oldest first."""
    key = partition_key(day, platform)
    if only_failed:
        return [f.episode_id for f in failed_episodes(stores, [key])]
    rows = stores.conn.execute(
        """SELECT e.id FROM episodes e LEFT JOIN episode_processing ep ON ep.episode_id = e.id
           WHERE e.partition_key = ? AND e.definition_id = ? AND (ep.status IS NULL OR ep.status = 'failed')
           ORDER BY e.start_time, e.id""",
        (key, DEFINITIONS[WRITER_DEFINITION].id),
    ).fetchall()
    return [r[0] for r in rows]


def process_partition(
    stores: Stores,
    day: str,
    platform: str,
    writer: EpisodeWriter,
    *,
    only_failed: bool = False,
    episode_ids: Sequence[str] | None = None,
    on_episode: Callable[[int, int, EpisodeOutcome], None] | None = None,
) -> PartitionReport:
    """Run the writer over a (day, platform) partition's pending episodes in time order.

    `episode_ids` names the episodes to run instead (those of other partitions are left alone).
    """
    report = PartitionReport(partition_key(day, platform))
    todo = partition_episodes(stores, day, platform, only_failed=only_failed, episode_ids=episode_ids)
    for i, (episode_id, events) in enumerate(todo, 1):
        outcome = write_events(stores, events, writer, episode_id=episode_id)
        report.outcomes.append(outcome)
        if on_episode:
            on_episode(i, len(todo), outcome)
    return report


def partition_episodes(
    stores: Stores,
    day: str,
    platform: str,
    *,
    only_failed: bool = False,
    episode_ids: Sequence[str] | None = None,
) -> list[tuple[str, list[Event]]]:
    """The episodes `process_partition` writes, in time order, each with its events. Only reads: a caller that
    writes several partitions in one transaction reads them all before it takes the write lock."""
    if episode_ids is None:
        todo = pending_episodes(stores, day, platform, only_failed=only_failed)
    else:
        todo = _episodes_of_partition(stores, partition_key(day, platform), episode_ids)
    return [(episode_id, episode_events(stores, episode_id)) for episode_id in todo]


def _episodes_of_partition(stores: Stores, key: str, episode_ids: Sequence[str]) -> list[str]:
    rows = stores.conn.execute(
        """SELECT id FROM episodes WHERE partition_key = ? AND id IN (SELECT value FROM json_each(?))
           ORDER BY start_time, id""",
        (key, json.dumps(list(episode_ids))),
    ).fetchall()
    return [r[0] for r in rows]


_turn_counters: dict[str, int] = {}


def on_turn_complete(
    stores: Stores,
    turn: Sequence[dict[str, Any] | Event],
    writer: EpisodeWriter,
    *,
    frequency: str = "every_turn",
    every_n: int = 3,
) -> EpisodeOutcome | None:
    """The agent-turn path: ingest an agent turn's events and run the writer on them right away.

    `frequency` is the extraction mode: 'every_turn', or 'every_n_turns' (extract on every n-th turn of
    a session, covering the skipped turns too since their events are still unprocessed). The
    sensor path later skips whatever this processed (memory_processing_log).
    """
    if frequency not in ("every_turn", "every_n_turns"):
        raise ValueError("frequency must be 'every_turn' or 'every_n_turns'")
    turn_events = [t if isinstance(t, Event) else ledger.parse_event(t, source="on_turn_complete") for t in turn]
    if not turn_events:
        raise ValueError("a turn needs at least one event")
    with stores.transaction():
        for event in turn_events:
            ledger.append_event(stores, event)
    key = turn_events[0].session_id or turn_events[0].thread_id or "default"
    _turn_counters[key] = _turn_counters.get(key, 0) + 1
    if frequency == "every_n_turns" and _turn_counters[key] % every_n:
        return None
    first = turn_events[0]
    pending = stores.conn.execute(
        """SELECT * FROM events e WHERE (e.session_id = ? OR (e.session_id IS NULL AND e.thread_id = ?))
             AND e.as_of <= ? AND e.id NOT IN (SELECT event_id FROM memory_processing_log)
           ORDER BY e.as_of, e.id""",
        (first.session_id, first.thread_id, max(e.as_of for e in turn_events)),
    ).fetchall()
    todo = [row_to_event(r) for r in pending] or turn_events
    return write_events(stores, todo, writer)
