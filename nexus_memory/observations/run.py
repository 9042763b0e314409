"""`consolidate(stores)`: every unconsolidated fact, one at a time, into observations (the loop of docs/layers.md).

For each fact, in time order: recall related observations and facts (the subject's view), let the
consolidator plan (isolated, or create / update / delete observations), apply the plan in memory, and
at the end of each chunk write the changed observations (a new knowledge-episode version and a new
analysis-run version each, parent_id to the previous), link observation_facts and mark the facts
consolidated, in one transaction. An observation gets at most one new version per run: later facts of
the same run amend that version. A fact whose plan failed is recorded with its reason and stays
pending, so the next run retries it; nothing of it is written.

Facts wait (stay pending) until the embeddings step has given them a vector. After the loop: current
observations of one entity that have become near-duplicates are merged, observations whose entity
has nothing pending stop being stale, and new observation versions get their vector.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

from nexus_memory.core import db
from nexus_memory.core.config import Settings
from nexus_memory.core.progress import Progress
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.vectors.vec0 import index_state
from nexus_memory.observations import store
from nexus_memory.observations.actions import ConsolidationFailed, Plan, apply
from nexus_memory.observations.duplicates import merge_near_duplicates
from nexus_memory.observations.offline import OfflineConsolidator
from nexus_memory.observations.render import render_observation
from nexus_memory.observations.subjects import name_words
from nexus_memory.observations.topics import topic_label
from nexus_memory.observations.vectors import index_observation_vectors
from nexus_memory.observations.view import EntityView, FactInput, Loader

BATCH = 500  # facts read per query


class Consolidator(Protocol):
    name: str

    def plan(self, fact: FactInput, view: EntityView) -> Plan: ...


@dataclass
class ConsolidationReport:
    """What one consolidation run did (the observations asset's metadata)."""

    consolidator: str
    facts_seen: int = 0
    consolidated: int = 0
    isolated: int = 0
    failed: int = 0
    waiting_for_vectors: int = 0
    observations_created: int = 0
    observations_versioned: int = 0
    observations_retired: int = 0
    merged_duplicates: int = 0
    observations: int = 0  # current, after the run
    facts_per_observation: float = 0.0
    stale_observations: int = 0
    versioned_observations: int = 0  # chains with more than one version, store-wide
    vectors_written: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    failures: list[dict[str, str]] = field(default_factory=list)
    # Facts this run left without an observation (one isolated now and paired later is not counted).
    isolated_ids: set[str] = field(default_factory=set, repr=False)

    def as_dict(self) -> dict:
        out = asdict(self)
        out.pop("isolated_ids")
        return out


class ConsolidationBusy(RuntimeError):
    """Another consolidation run holds this store; it will consolidate the pending facts."""


@contextlib.contextmanager
def exclusive(data_dir: Path) -> Iterator[None]:
    """One consolidation at a time per store: two would plan the same facts against stale views."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock (run one consolidation at a time yourself)
        yield
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / ".consolidation.lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConsolidationBusy(f"another consolidation run is working on {data_dir}") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def pick_consolidator(settings: Settings, *, offline: bool = False) -> Consolidator:
    """The LLM consolidator when the writer's LLM is configured (and not `offline`), else the offline one."""
    if settings.llm_enabled and not offline:
        from nexus_memory.observations.llm import LLMConsolidator

        return LLMConsolidator.from_settings(settings)
    return OfflineConsolidator()


def consolidate(
    stores: Stores,
    consolidator: Consolidator | None = None,
    *,
    chunk: int | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
) -> ConsolidationReport:
    """Consolidate every pending fact (or the first `limit`); see the module docstring.

    `chunk` is how many facts share one write transaction: many for the offline consolidator, one
    for an LLM (a transaction must never wait on a model call). `progress` hears the facts seen after
    each chunk. Raises ConsolidationBusy when another run is consolidating this store.
    """
    with exclusive(stores.data_dir):
        return _consolidate(stores, consolidator or OfflineConsolidator(), chunk, limit, progress)


def _consolidate(
    stores: Stores,
    consolidator: Consolidator,
    chunk: int | None,
    limit: int | None,
    progress: Progress | None,
) -> ConsolidationReport:
    started = time.perf_counter()
    chunk = chunk or (BATCH if consolidator.name == "offline" else 1)
    report = ConsolidationReport(consolidator.name)
    conn = stores.conn
    state = index_state(conn)
    drafts: set[str] = set()
    loader = Loader(conn, state[0] if state else None, drafts)
    with db.transaction(conn):
        store.ensure_registry(conn)
        report.observations_retired += _retire_merged_entities(conn)
        store.settle_hidden_pending(conn)
        report.observations_retired += _drop_hidden_facts(conn, loader)
    pending = store.pending_fact_count(conn)
    pending = pending if limit is None else min(pending, limit)
    touched_entities: set[str] = set()
    after: tuple[int, int] | None = None
    while limit is None or report.facts_seen < limit:
        rows = store.unconsolidated_batch(
            conn, after, BATCH if limit is None else min(BATCH, limit - report.facts_seen)
        )
        if not rows:
            break
        after = (rows[-1]["as_of"], rows[-1]["seq"])
        facts = loader.facts(rows)
        for start in range(0, len(facts), chunk):
            _run_chunk(conn, consolidator, loader, facts[start : start + chunk], report, drafts, touched_entities)
            if progress:
                progress(report.facts_seen, max(pending, report.facts_seen), "facts")
    with db.transaction(conn):
        merged = merge_near_duplicates(conn, loader, touched_entities, _write_changed)
        report.merged_duplicates = merged
        store.clear_stale(conn)
    report.vectors_written = index_observation_vectors(stores)
    report.__dict__.update(store.observation_summary(conn))
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _run_chunk(
    conn: db.Connection,
    consolidator: Consolidator,
    loader: Loader,
    facts: list[FactInput],
    report: ConsolidationReport,
    drafts: set[str],
    touched_entities: set[str],
) -> None:
    """Plan each fact of the chunk against the views, then write everything it changed at once."""
    done: list[str] = []
    failures: list[tuple[FactInput, ConsolidationFailed]] = []
    changed: dict[int, tuple[EntityView, object]] = {}
    for fact in facts:
        report.facts_seen += 1
        if fact.vector is None:
            report.waiting_for_vectors += 1
            continue
        if fact.subject is None:
            done.append(fact.id)
            report.isolated_ids.add(fact.id)
            continue
        view = loader.view(fact.subject)
        if fact.id in view.member_of:  # consolidated into an observation already: nothing to add
            done.append(fact.id)
            continue
        try:
            plan = consolidator.plan(fact, view)
        except ConsolidationFailed as failure:
            failures.append((fact, failure))
            report.prompt_tokens += failure.prompt_tokens
            report.completion_tokens += failure.completion_tokens
            continue
        report.prompt_tokens += plan.prompt_tokens
        report.completion_tokens += plan.completion_tokens
        for state in apply(view, fact, plan):
            changed[id(state)] = (view, state)
        report.isolated_ids.difference_update(f for a in plan.actions for f in a.with_facts)
        if not plan.actions:
            report.isolated_ids.add(fact.id)
            if fact.durable and fact.vector is not None:
                view.pool[fact.id] = fact  # a later fact may pair with it
        done.append(fact.id)
        touched_entities.add(view.entity.id)
    try:
        with db.transaction(conn):
            for view, state in changed.values():
                outcome = _write_changed(conn, view, state)  # type: ignore[arg-type]
                if outcome == "created":
                    report.observations_created += 1
                elif outcome == "versioned":
                    report.observations_versioned += 1
                elif outcome == "retired":
                    report.observations_retired += 1
                if state.run_id:  # type: ignore[attr-defined]
                    drafts.add(state.run_id)  # type: ignore[attr-defined]
            store.mark_consolidated(conn, done)
            for fact, failure in failures:
                store.record_failure(
                    conn, fact.id, consolidator.name, failure.reason, failure.prompt_tokens, failure.completion_tokens
                )
    except Exception:
        loader.forget()  # the views hold changes that were rolled back
        raise
    report.consolidated += len(done)
    report.isolated = len(report.isolated_ids)
    report.failed += len(failures)
    report.failures += [{"fact_id": f.id, "error": e.reason} for f, e in failures]


def _write_changed(conn: db.Connection, view: EntityView, state: store.ObservationState) -> str | None:
    """Render (unless an LLM wrote the text) and persist one changed observation."""
    if not state.retired and (not state.authored or not state.topic):
        facts = list(state.facts.values())
        words = [view.inputs[f.id].specific for f in facts if f.id in view.inputs]
        state.topic = topic_label(words, name_words(view.entity))
        if not state.authored:
            state.text = render_observation(view.entity.display, state.topic, facts)
    events_of = {f.id: view.inputs[f.id].source_event_id for f in state.facts.values() if f.id in view.inputs}
    return store.write_state(conn, state, events_of)


def _retire_merged_entities(conn: db.Connection) -> int:
    """Observations of an entity merged into another are retired and their facts consolidated again,
    so they land with the surviving entity's observations."""
    retired = 0
    for obs in store.merged_entity_observations(conn):
        state = store.ObservationState(
            root_id=obs["root_id"],
            entity_id=obs["entity_id"],
            topic="",
            facts={},
            text="",
            run_id=obs["id"],
            episode_id=None,
            version=store.version_of(obs["id"]),
            retired=f"entity merged into {obs['merged_into']}",
            dirty=True,
        )
        fact_ids = [
            r[0] for r in conn.execute("SELECT fact_id FROM observation_facts WHERE analysis_run_id = ?", (obs["id"],))
        ]
        store.write_state(conn, state, {})
        store.unconsolidate(conn, fact_ids)
        retired += 1
    return retired


def _drop_hidden_facts(conn: db.Connection, loader: Loader) -> int:
    """Observations resting on facts hidden since (corrected, decayed, contradicted) get a new version
    without them, or are retired when nothing is left; returns how many were retired."""
    retired = 0
    for entity_id in store.entities_with_hidden_facts(conn):
        entity = loader.entity(entity_id)
        if entity is None:
            continue
        view = loader.view(entity)
        for state in view.observations:
            if state.dirty:
                retired += state.retired is not None
                _write_changed(conn, view, state)
    return retired
