"""Building memory for a batch of ledger days of one platform, layer by layer.

`run_layer` is the one way a partition's layers are built: each Dagster asset calls it for its own
layer, and the benchmarks call `run_layers` for all of them. Layers run in order over the batch,
days oldest first within each layer; a fast writer's episodes commit several at a time
(EPISODES_PER_COMMIT) and every episode the writer handles is all-or-nothing, so a batch stopped
anywhere is finished by running it again (`pending_partitions` says what is left).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from nexus_memory.core.ids import minute_of
from nexus_memory.core.progress import Progress
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.ahead import EmbeddingAhead, ahead_for
from nexus_memory.embeddings.model import Embedder
from nexus_memory.embeddings.step import embed_pending, embedder_for_store, unembedded_fact_texts
from nexus_memory.embeddings.vectors.vec0 import index_state
from nexus_memory.episodes.grouping import DEFINITIONS, WRITER_DEFINITION, build_episodes, partition_events
from nexus_memory.events.ledger import Event
from nexus_memory.events.partitions import partition_key
from nexus_memory.identity import store as identity
from nexus_memory.recall.filters import TOOL_PLATFORM
from nexus_memory.writer.base import EpisodeWriter
from nexus_memory.writer.run import EpisodeOutcome, FailedEpisode, failed_episodes, partition_episodes, write_events

LAYERS = ("events", "episodes", "facts", "embeddings")

# An event has work left when it is in no writer episode, has not been through the writer, or has a
# fact without a vector of the model the search index serves. (CROSS JOIN keeps SQLite looking the
# event's memberships up by event id; left to itself it scanned every episode of the definition per
# event, 30 s at 20k events.)
_EVENT_HAS_WORK_LEFT = """(
    NOT EXISTS (SELECT 1 FROM episode_events ee CROSS JOIN episodes ep ON ep.id = ee.episode_id
                WHERE ee.event_id = e.id AND ep.definition_id = :definition)
    OR NOT EXISTS (SELECT 1 FROM memory_processing_log l WHERE l.event_id = e.id)
    OR EXISTS (SELECT 1 FROM facts f WHERE f.source_event_id = e.id AND NOT EXISTS (
               SELECT 1 FROM embeddings m
               WHERE m.target_type = 'fact' AND m.target_id = f.id AND m.model IS :model)))"""


def _work_left_params(stores: Stores) -> dict[str, Any]:
    state = index_state(stores.conn)
    return {"definition": DEFINITIONS[WRITER_DEFINITION].id, "model": state[0] if state else None}


def pending_partitions(stores: Stores, platforms: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """Ledger (day, platform) pairs with work left in any layer, oldest first."""
    rows = stores.conn.execute(
        f"SELECT DISTINCT e.day, e.platform FROM events e WHERE {_EVENT_HAS_WORK_LEFT} ORDER BY e.day, e.platform",
        _work_left_params(stores),
    ).fetchall()
    return [(r[0], r[1]) for r in rows if platforms is None or r[1] in platforms]


def pending_events(stores: Stores) -> dict[str, int]:
    """Events with work left, per platform."""
    rows = stores.conn.execute(
        f"SELECT e.platform, count(*) FROM events e WHERE {_EVENT_HAS_WORK_LEFT} GROUP BY e.platform",
        _work_left_params(stores),
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def partitions_ingested_after(stores: Stores, rowid: int) -> tuple[list[tuple[str, str]], int]:
    """Ledger (day, platform) pairs of events stored after ledger row `rowid`, and the newest rowid.

    Rowids grow in commit order (SQLite has one writer at a time), so unlike `ingested_at` this
    mark never skips a batch that committed late.
    """
    rows = stores.conn.execute(
        "SELECT day, platform, max(rowid) FROM events WHERE rowid > ? GROUP BY day, platform ORDER BY day, platform",
        (rowid,),
    ).fetchall()
    return [(r[0], r[1]) for r in rows], max((r[2] for r in rows), default=rowid)


@dataclass
class LayerReport:
    """What one layer did over a batch of days of one platform."""

    layer: str
    platform: str
    days: list[str]
    rows: int = 0  # events seen / episodes created or extended / facts written / vectors added
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)
    failures: list[FailedEpisode] = field(default_factory=list)

    @property
    def span(self) -> str:
        if not self.days:
            return "no events"
        return self.days[0] if len(self.days) == 1 else f"{self.days[0]}..{self.days[-1]} ({len(self.days)} days)"

    def line(self) -> str:
        """One line for a log or a terminal: the layer, the batch and what it did."""
        d = self.details
        done = {
            "events": lambda: f"{d.get('events', 0)} events in {d.get('threads', 0)} threads",
            "episodes": lambda: f"{d.get('created', 0)} episodes new, {d.get('extended', 0)} extended",
            "facts": lambda: (
                f"{d.get('episodes', 0)} episodes written ({d.get('failed', 0)} failed), {self.rows} facts"
            ),
            "embeddings": lambda: (
                f"{self.rows} vectors ({d.get('rows_per_s', 0)}/s), {d.get('ahead_wait_s', 0)} s of it waiting on "
                f"the embedding-ahead worker"
            ),
        }[self.layer]()
        return f"{self.layer:<10} {self.platform} {self.span}: {done}, {self.seconds:.1f} s"


def events_summary(stores: Stores, platform: str, days: Sequence[str]) -> dict[str, Any]:
    """What the ledger holds for these days of a platform: events, senders, threads, time span, directions."""
    where = "platform = ? AND day IN (SELECT value FROM json_each(?))"
    args = (platform, json.dumps(list(days)))
    row = stores.conn.execute(
        f"""SELECT count(*) AS n, count(DISTINCT sender_id) AS senders, count(DISTINCT thread_id) AS threads,
                   min(as_of) AS first, max(as_of) AS last FROM events WHERE {where}""",
        args,
    ).fetchone()
    directions = stores.conn.execute(
        f"SELECT direction, count(*) FROM events WHERE {where} GROUP BY direction ORDER BY direction", args
    ).fetchall()
    return {
        "events": row["n"],
        "senders": row["senders"],
        "threads": row["threads"],
        "time_span": f"{minute_of(row['first'])} .. {minute_of(row['last'])}" if row["n"] else "empty",
        "by_direction": {r[0]: r[1] for r in directions},
    }


def tool_facts_without_vectors(stores: Stores, model: str) -> list[str]:
    """Facts the agent tools wrote (from no event) without a vector of `model`: their write could not
    embed them, and no partition owns them, so every partition's embeddings run takes them along."""
    rows = stores.conn.execute(
        """SELECT f.id FROM facts f WHERE f.source_event_id IS NULL AND f.platform = ? AND NOT EXISTS (
               SELECT 1 FROM embeddings m WHERE m.target_type = 'fact' AND m.target_id = f.id AND m.model = ?)""",
        (TOOL_PLATFORM, model),
    ).fetchall()
    return [r[0] for r in rows]


def partition_fact_ids(stores: Stores, platform: str, days: Sequence[str]) -> list[str]:
    """Facts drawn from events of these days of a platform."""
    rows = stores.conn.execute(
        """SELECT f.id FROM facts f JOIN events e ON e.id = f.source_event_id
           WHERE e.platform = ? AND e.day IN (SELECT value FROM json_each(?))""",
        (platform, json.dumps(list(days))),
    ).fetchall()
    return [r[0] for r in rows]


def run_layer(
    stores: Stores,
    layer: str,
    platform: str,
    days: Sequence[str],
    *,
    writer: EpisodeWriter | None = None,
    embedder: Embedder | None = None,
    only_failed: bool = False,
    episode_ids: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> LayerReport:
    """Build one layer for the given ledger days of a platform, oldest day first.

    `writer` is needed for facts and `embedder` for embeddings; given to the facts layer, the embedder
    embeds each day's new facts on a second thread while the writer goes on (embeddings/ahead.py), and the
    embeddings layer stores those vectors. `only_failed` and `episode_ids` narrow the facts layer to
    failed or named episodes. `progress` hears how far the batch is: events for episodes and facts (after
    each day), facts for embeddings (after each batch of vectors).
    """
    report = LayerReport(layer, platform, list(days))
    started = time.perf_counter()
    if isinstance(embedder, Embedder):  # the store's recipe (auto keeps it), so the worker ahead makes it too
        embedder = embedder_for_store(stores, embedder)
    if layer == "events":
        summary = events_summary(stores, platform, days)
        report.rows = summary["events"]
        report.details = summary
    elif layer == "episodes":
        _build_episodes(stores, report, _days_done(stores, report, progress))
    elif layer == "facts":
        if writer is None:
            raise ValueError("the facts layer needs a writer")
        ahead = _ahead(embedder)
        _write_facts(stores, report, writer, only_failed, episode_ids, _days_done(stores, report, progress), ahead)
    elif layer == "embeddings":
        if embedder is None:
            raise ValueError("the embeddings layer needs an embedder")
        _embed_facts(stores, report, embedder, progress)
    else:
        raise ValueError(f"unknown layer {layer!r}; layers are {', '.join(LAYERS)}")
    report.seconds = time.perf_counter() - started
    return report


def run_layers(
    stores: Stores,
    platform: str,
    days: Sequence[str],
    *,
    writer: EpisodeWriter,
    embedder: Embedder,
    layers: Sequence[str] = LAYERS,
    progress: Progress | None = None,
) -> list[LayerReport]:
    """Every layer, in order, for the given ledger days of a platform."""
    return [
        run_layer(stores, layer, platform, days, writer=writer, embedder=embedder, progress=progress)
        for layer in layers
    ]


def _days_done(stores: Stores, report: LayerReport, progress: Progress | None) -> Callable[[str], None]:
    """What a layer that works day by day calls after each day: `progress` hears the batch's events done."""
    if progress is None:
        return lambda day: None
    rows = stores.conn.execute(
        "SELECT day, count(*) FROM events WHERE platform = ? AND day IN (SELECT value FROM json_each(?)) GROUP BY day",
        (report.platform, json.dumps(report.days)),
    ).fetchall()
    per_day = {r[0]: r[1] for r in rows}
    total, done = sum(per_day.values()), [0]

    def day_done(day: str) -> None:
        done[0] += per_day.get(day, 0)
        progress(done[0], total, "events")

    return day_done


def _ahead(embedder: Embedder | None) -> EmbeddingAhead | None:
    """The embedder's embedding-ahead worker; none for stand-ins (tests' fake embedders) that have no model."""
    return ahead_for(embedder) if isinstance(embedder, Embedder) else None


# Writes go in batches, one transaction each (each writer episode still all-or-nothing in its own savepoint): a
# commit per episode wrote the same index and keyword-index pages to the WAL again each time. A batch's reads
# come first, outside the write lock, so another writer finds the lock free about as often as it did between
# single episodes. An interrupted batch leaves nothing of itself behind and is written again by a rerun.
COMMIT_SECONDS = 0.1  # a batch of writer episodes holds the write lock about this long...
EPISODES_PER_COMMIT = 32  # ...and has at most this many episodes (a slow writer, the LLM's, gets one)
EVENTS_PER_COMMIT = 256  # events grouped into episodes in one transaction

_T = TypeVar("_T")


@contextlib.contextmanager
def _one_commit(stores: Stores) -> Iterator[None]:
    """One transaction over a batch; when it rolls back, identity answers remembered inside it
    (identity.lookups_remembered) may name rows it undid, so they are dropped."""
    try:
        with stores.transaction():
            yield
    except BaseException:
        identity.forget_remembered(stores.conn)
        raise


def _episodes_per_commit(written: int, seconds: float) -> int:
    """How many writer episodes the next batch has: one at first, then as many as the writer took
    COMMIT_SECONDS for so far (`written` episodes in `seconds`), at most EPISODES_PER_COMMIT."""
    if not written:
        return 1
    return max(1, min(EPISODES_PER_COMMIT, int(COMMIT_SECONDS * written / max(seconds, 1e-9))))


def _take(items: Iterator[tuple[str, _T]], count: int, size: Callable[[_T], int]) -> list[tuple[str, _T]]:
    """The next (day, what was read for it) items of `items` until their `size`s add up to `count` (or to the end)."""
    taken: list[tuple[str, _T]] = []
    for item in items:
        taken.append(item)
        count -= size(item[1])
        if count <= 0:
            break
    return taken


def _build_episodes(stores: Stores, report: LayerReport, day_done: Callable[[str], None]) -> None:
    counts = {"events": 0, "created": 0, "extended": 0, "unchanged": 0}
    days = ((day, partition_events(stores, day, report.platform)) for day in report.days)
    while batch := _take(days, EVENTS_PER_COMMIT, len):
        with _one_commit(stores):
            done = [(day, build_episodes(stores, day, report.platform, events=events)) for day, events in batch]
        for day, stats in done:
            for name in counts:
                counts[name] += getattr(stats, name)
            day_done(day)
    keys = [partition_key(day, report.platform) for day in report.days]
    counts["episodes_in_batch"] = stores.conn.execute(
        "SELECT count(*) FROM episodes WHERE partition_key IN (SELECT value FROM json_each(?))", (json.dumps(keys),)
    ).fetchone()[0]
    report.rows = counts["created"] + counts["extended"]
    report.details = counts


def _write_facts(
    stores: Stores,
    report: LayerReport,
    writer: EpisodeWriter,
    only_failed: bool,
    episode_ids: Sequence[str] | None,
    day_done: Callable[[str], None],
    ahead: EmbeddingAhead | None = None,
) -> None:
    outcomes: list[EpisodeOutcome] = []
    seconds = 0.0  # the writer's, over `outcomes`

    def episodes() -> Iterator[tuple[str, tuple[str, list[Event]] | None]]:
        """Each day's episodes with their events, in order, then (day, None) when the day is done."""
        for day in report.days:
            for episode in partition_episodes(
                stores, day, report.platform, only_failed=only_failed, episode_ids=episode_ids
            ):
                yield day, episode
            yield day, None

    todo = episodes()
    facts: Counter[str] = Counter()
    while batch := _take(todo, _episodes_per_commit(len(outcomes), seconds), lambda episode: episode is not None):
        with _one_commit(stores):
            done = [
                (day, write_events(stores, episode[1], writer, episode_id=episode[0]) if episode else None)
                for day, episode in batch
            ]
        for day, outcome in done:
            if outcome is not None:
                outcomes.append(outcome)
                seconds += outcome.seconds
                facts[day] += outcome.facts
                continue
            if ahead is not None and facts[day]:
                fact_ids = partition_fact_ids(stores, report.platform, [day])
                ahead.submit(unembedded_fact_texts(stores.conn, ahead.embedder.model_name, fact_ids))
            day_done(day)
    report.failures = failed_episodes(stores, [partition_key(day, report.platform) for day in report.days])
    report.rows = sum(o.facts for o in outcomes)
    report.details = {
        "writer": writer.name,
        "episodes": len(outcomes),
        "ok": sum(1 for o in outcomes if o.status == "ok"),
        "skipped": sum(1 for o in outcomes if o.status == "skipped"),
        "failed": len(report.failures),
        "facts_written": report.rows,
        "prompt_tokens": sum(o.prompt_tokens for o in outcomes),
        "completion_tokens": sum(o.completion_tokens for o in outcomes),
        # Which LLM mode wrote each episode, and what validation dropped (zero for the offline writer).
        "episodes_structured": sum(1 for o in outcomes if o.mode == "structured"),
        "episodes_tool_loop": sum(1 for o in outcomes if o.mode == "tools"),
        "items_dropped_by_validation": sum(sum(o.dropped.values()) for o in outcomes),
    }
    dropped = Counter(reason for o in outcomes for reason, n in o.dropped.items() for _ in range(n))
    if dropped:
        report.details["dropped_by_reason"] = ", ".join(f"{reason} {n}" for reason, n in dropped.most_common())
    # What an LLM episode costs in each mode (auto mixes them): episodes, and tokens and seconds per episode.
    costs = []
    for mode in sorted({o.mode for o in outcomes if o.mode}):
        mine = [o for o in outcomes if o.mode == mode]
        tokens = sum(o.prompt_tokens + o.completion_tokens for o in mine) / len(mine)
        seconds = sum(o.seconds for o in mine) / len(mine)
        costs.append(f"{mode}: {len(mine)} episodes, {tokens:.0f} tokens and {seconds:.1f} s each")
    if costs:
        report.details["cost_by_mode"] = "; ".join(costs)


def _embed_facts(stores: Stores, report: LayerReport, embedder: Embedder, progress: Progress | None) -> None:
    fact_ids = partition_fact_ids(stores, report.platform, report.days)
    from_tools = tool_facts_without_vectors(stores, embedder.model_name)
    stats = embed_pending(
        stores,
        embedder,
        target_types=("fact",),
        fact_ids=fact_ids + from_tools,
        ahead=_ahead(embedder),
        on_progress=(lambda done, total: progress(done, total, "facts")) if progress else None,
    )
    report.rows = stats.rows
    report.details = {
        "model": embedder.model_name,
        "vectors_added": stats.rows,
        "rows_per_s": round(stats.rows_per_s, 1),
        # Of the layer's seconds: draining the embedding-ahead worker, and of that, waiting on it.
        "ahead_drain_s": round(stats.drain_s, 1),
        "ahead_wait_s": round(stats.wait_s, 1),
        "facts_in_batch": len(fact_ids),
        "tool_facts_pending": len(from_tools),
    }
