"""One forget request, start to finish: plan, one transaction over every store, then the byte scrub.

All four stores are attached to one connection, so the deletions are one transaction: an error part-way
rolls every store back to what it was. (SQLite commits attached WAL databases one file at a time, so only
a power cut between those commits could leave part of a forget done; running the same forget again
finishes it, since the plan is worked out from what is left.) The files outside SQLite (vector index,
dossiers) are rewritten after the commit, then the scrub empties free space and WALs. The deletion log
row is written inside the transaction and completed after the scrub: ids and counts, who asked, when and
why, never the content.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.ids import now_ms, ulid
from nexus_memory.core.progress import Progress
from nexus_memory.core.stores import Stores
from nexus_memory.lifecycle import reconsolidate
from nexus_memory.lifecycle.forget import derived, episodes, facts, identity_rows, ledger, scrub, vectors
from nexus_memory.lifecycle.forget.plan import ForgetPlan, Target, make_plan

PREVIEW_IDS = 20  # ids listed per kind in a preview
STEPS = ("plan", "delete", "index_files", "derived", "scrub")  # what `progress` counts, in this order
MAPPED_BYTES = 1 << 30  # how much of each store a forget may read through a memory map (at most the file)


@dataclass
class ForgetResult:
    """What one forget removed (rows per store and table), what the scrub did, and what it cost."""

    request_id: str
    target_kind: str
    target: str  # as logged: an id, or the hash of a sender handle
    removed: dict[str, dict[str, int]]
    derived: dict[str, Any]
    scrub: dict[str, Any]
    status: str  # 'scrubbed' or 'scrub_failed' (rows are gone; rerun `nexus-memory forget --scrub`)
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def preview(stores: Stores, target: Target) -> dict[str, Any]:
    """What forgetting `target` would remove (counts and the first ids), without removing anything."""
    plan = make_plan(stores.conn, target)
    return {
        "target_kind": target.kind,
        "would_remove": plan.summary(),
        "event_ids": plan.event_ids[:PREVIEW_IDS],
        "fact_ids": plan.fact_ids[:PREVIEW_IDS],
        "entity_ids": plan.entity_ids[:PREVIEW_IDS],
        # Other handles that may be the same person: taken along only when asked (include candidates).
        "candidates": [{**asdict(c), "included": target.include_candidates} for c in plan.candidates],
    }


def forget(
    stores: Stores,
    target: Target,
    *,
    requested_by: str = "unknown",
    reason: str | None = None,
    progress: Progress | None = None,
) -> ForgetResult:
    """Forget an event, a fact, a sender or an entity everywhere (module docstring). Raises ForgetError
    for an unknown or ambiguous target; any other error leaves every store as it was. `progress` hears the
    STEPS done (and the reconsolidation's facts, when the forget sends facts back to it)."""
    with _mapped(stores.conn):
        return _forget(stores, target, requested_by, reason, progress)


@contextlib.contextmanager
def _mapped(conn: db.Connection) -> Iterator[None]:
    """Read every store through a memory map while a forget runs, then as before. Why: sqlite-vec clears a
    deleted vector inside its chunk (1,024 vectors, a chain of ~380 overflow pages) and walks the chain page
    by page; mapped, a page read is a memory access instead of a system call (a sender at 100k facts: 286k
    reads of 1.2 GB became 53k of 0.2 GB, and the forget's CPU time fell by a sixth)."""
    before = {s: conn.execute(f"PRAGMA {s}.mmap_size").fetchone()[0] for s in scrub.SCHEMAS}
    for schema in before:
        conn.execute(f"PRAGMA {schema}.mmap_size = {MAPPED_BYTES}")
    try:
        yield
    finally:
        for schema, size in before.items():
            conn.execute(f"PRAGMA {schema}.mmap_size = {size}")


def _forget(
    stores: Stores, target: Target, requested_by: str, reason: str | None, progress: Progress | None
) -> ForgetResult:
    started = time.perf_counter()
    conn = stores.conn
    plan = make_plan(conn, target)
    request_id, now = ulid(), now_ms()
    seconds: dict[str, float] = {"plan": round(time.perf_counter() - started, 3)}
    _done(progress, "plan")
    mark = time.perf_counter()
    with db.transaction(conn):
        removed, changes = apply_plan(conn, plan, request_id, now)
        conn.execute(
            """INSERT INTO deletion_log (id, target_kind, target, requested_by, reason, requested_at, status,
                   counts, ids) VALUES (?, ?, ?, ?, ?, ?, 'deleted', ?, ?)""",
            (
                request_id,
                target.kind,
                plan.logged_target,
                requested_by,
                reason,
                now,
                json.dumps(removed, sort_keys=True),
                json.dumps({"events": plan.event_ids, "facts": plan.fact_ids, "entities": plan.entity_ids}),
            ),
        )
    seconds["delete"] = round(time.perf_counter() - mark, 3)
    _done(progress, "delete")
    try:
        report = after_commit(
            stores, plan, changes, [t for t, n in removed["embeddings"].items() if n], seconds, progress
        )
        outcome = report.as_dict()
        status = "scrubbed" if report.complete else "scrub_failed"
    except Exception as exc:  # the rows are gone; what is left is the scrub, which `finish_scrub` reruns
        outcome = {"complete": False, "error": f"{type(exc).__name__}: {exc}"}
        status = "scrub_failed"
    seconds["total"] = round(time.perf_counter() - started, 3)
    _finish_log(stores, [request_id], status, {**outcome, "seconds": seconds})
    return ForgetResult(request_id, target.kind, plan.logged_target, removed, changes, outcome, status, seconds)


def finish_scrub(stores: Stores) -> dict[str, Any]:
    """Scrub again after a forget whose scrub did not complete (a busy reader, a crash): rewrite every vector
    index file, VACUUM what is not clean, empty the WALs; completes the deletion log rows that waited."""
    started = time.perf_counter()
    waiting = [r[0] for r in stores.conn.execute("SELECT id FROM deletion_log WHERE status != 'scrubbed'")]
    report = scrub.ScrubReport()
    report.index_files_rewritten = vectors.rewrite_index_files(stores, vectors.TARGET_TYPES)
    scrub.scrub(stores, report)
    outcome = {**report.as_dict(), "seconds": {"total": round(time.perf_counter() - started, 3)}}
    if report.complete and waiting:
        _finish_log(stores, waiting, "scrubbed", outcome)
    return {**outcome, "deletion_log_completed": len(waiting) if report.complete else 0}


def _finish_log(stores: Stores, request_ids: list[str], status: str, scrub_outcome: dict[str, Any]) -> None:
    """Complete deletion log rows, then empty memory.db's WAL again (the update itself went through it)."""
    with db.transaction(stores.conn):
        stores.conn.executemany(
            "UPDATE deletion_log SET status = ?, finished_at = ?, scrub = ? WHERE id = ?",
            [(status, now_ms(), json.dumps(scrub_outcome, default=str), r) for r in request_ids],
        )
    scrub.checkpoint(stores, "main")


def apply_plan(
    conn: db.Connection, plan: ForgetPlan, request_id: str, now: int
) -> tuple[dict[str, dict[str, int]], dict[str, Any]]:
    """Every deletion of the plan, in dependency order; call inside one transaction over all stores."""
    memory: Counter[str] = Counter()
    quoting = vectors.facts_quoting(conn, plan.event_ids, plan.fact_ids)  # needs the events
    links = facts.fact_links(conn, plan.fact_ids)  # needs the links
    stale = reconsolidate.mark_stale(conn, plan.fact_ids)
    removed_episodes = episodes.episodes_holding(conn, plan.event_ids)
    made = derived.delete_observations(conn, plan, removed_episodes)
    versions = episodes.remove_events(conn, plan.event_ids)  # needs the events
    memory.update(facts.delete_event_rows(conn, plan.event_ids))
    memory.update(facts.delete_facts(conn, plan.fact_ids))
    memory.update(facts.drop_entity_references(conn, plan.entity_ids))
    plan.rare_words = derived.rare_words(conn, plan)  # needs the facts gone
    derived.delete_mental_models(conn, plan, made, removed_episodes)
    memory.update(
        observations=len(made.observations_deleted),
        mental_models=len(made.mental_models_deleted),
        episodes=len(versions.removed),
    )
    identity: Counter[str] = Counter(identity_rows.uncount_links(conn, links, plan.entity_ids))
    identity.update(identity_rows.delete_entities(conn, plan.entity_ids, plan.fact_ids))
    identity.update(identity_rows.delete_handles(conn, plan.handles))
    embedding_rows = vectors.delete_vectors(
        conn,
        {
            "fact": [*plan.fact_ids, *quoting],
            "entity": plan.entity_ids,
            "observation": made.observations_deleted,
            "mental_model": made.mental_models_deleted,
        },
    )
    events = ledger.delete_ledger_rows(conn, plan, request_id, now)
    removed = {
        "events": events,
        "memory": {k: v for k, v in memory.items() if v},
        "identity": {k: v for k, v in identity.items() if v},
        "embeddings": embedding_rows,
    }
    changes = {
        "episodes_edited": len(versions.edited),
        "facts_requeued_for_consolidation": made.facts_requeued,
        "facts_to_embed_again": len(quoting),
        **stale.as_dict(),
    }
    return removed, changes


def after_commit(
    stores: Stores,
    plan: ForgetPlan,
    changes: dict[str, Any],
    vector_types: list[str],
    seconds: dict[str, float],
    progress: Progress | None = None,
) -> scrub.ScrubReport:
    """Files outside SQLite, the layers that are rebuilt from what is left, then the byte scrub."""
    report = scrub.ScrubReport()
    mark = time.perf_counter()
    report.index_files_rewritten = vectors.rewrite_index_files(stores, vector_types)
    seconds["index_files"] = round(time.perf_counter() - mark, 3)
    _done(progress, "index_files")
    mark = time.perf_counter()
    consolidated = (
        reconsolidate.run_consolidation(stores, progress=progress)
        if changes["facts_requeued_for_consolidation"]
        else None
    )
    changes["reconsolidated"] = consolidated is not None
    report.dossiers_removed = scrub.remove_dossiers(reconsolidate.dossier_dir(stores), derived.quotes_forgotten(plan))
    changes["dossiers_rewritten"] = reconsolidate.refresh_dossiers(stores)
    seconds["derived"] = round(time.perf_counter() - mark, 3)
    _done(progress, "derived")
    mark = time.perf_counter()
    scrub.scrub(stores, report)
    seconds["scrub"] = round(time.perf_counter() - mark, 3)
    _done(progress, "scrub")
    return report


def _done(progress: Progress | None, step: str) -> None:
    """Tell `progress` that one of the STEPS ended."""
    if progress:
        progress(STEPS.index(step) + 1, len(STEPS), "steps")


def forget_or_preview(
    stores: Stores,
    target: Target,
    *,
    confirm: bool,
    requested_by: str,
    reason: str | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The one entry point of the CLI and the agent tool: without `confirm`, only say what would go."""
    if not confirm:
        return {
            "forgotten": False,
            **preview(stores, target),
            "note": "nothing was removed yet: confirm (CLI --yes, tool confirm=true) to forget all of this",
        }
    done = forget(stores, target, requested_by=requested_by, reason=reason, progress=progress)
    return {"forgotten": True, **done.as_dict()}
