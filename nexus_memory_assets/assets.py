"""One asset per memory layer, partitioned by (day, platform): events -> episodes -> facts -> embeddings.

Each asset body is glue: open the stores, call the core library, report what a person wants to see.
"""

import dagster as dg

from nexus_memory.embeddings import embed_pending
from nexus_memory.episodes import build_episodes
from nexus_memory.writer.run import process_partition
from nexus_memory_assets.partitions import day_platform_partitions, split_key
from resources import EmbedderResource, StoresResource, WriterResource

# Steps that write the SQLite stores share a pool (limit in dagster.yaml) so they queue, not lock.
SQLITE_POOL = "nexus_sqlite"


def _md_table(header: list[str], rows: list[list[object]]) -> dg.MetadataValue:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return dg.MetadataValue.md("\n".join(lines))


@dg.asset(
    partitions_def=day_platform_partitions,
    group_name="memory",
    pool=SQLITE_POOL,
    description="Layer 1: the immutable events ledger (events.db) for one day of one platform.",
)
def events(context: dg.AssetExecutionContext, stores: StoresResource) -> dg.MaterializeResult:
    day, platform = split_key(context)
    with stores.open() as s:
        row = s.conn.execute(
            """SELECT count(*) AS n, count(DISTINCT sender_id) AS senders, count(DISTINCT thread_id) AS threads,
                      min(as_of) AS first, max(as_of) AS last FROM events WHERE platform = ? AND day = ?""",
            (platform, day),
        ).fetchone()
        by_direction = s.conn.execute(
            "SELECT direction, count(*) FROM events WHERE platform = ? AND day = ? GROUP BY direction",
            (platform, day),
        ).fetchall()
        rejects = s.conn.execute("SELECT count(*) FROM event_rejects WHERE resolved_at IS NULL").fetchone()[0]
    context.log.info(f"{row['n']} events for {platform} on {day}")
    return dg.MaterializeResult(
        metadata={
            "events": row["n"],
            "senders": row["senders"],
            "threads": row["threads"],
            "time_span": f"{row['first']} .. {row['last']}" if row["n"] else "empty",
            "by_direction": _md_table(["direction", "events"], [list(r) for r in by_direction]),
            "unresolved_rejects_all_files": rejects,
        }
    )


@dg.asset(
    partitions_def=day_platform_partitions,
    deps=[events],
    group_name="memory",
    pool=SQLITE_POOL,
    description="Layer 2b: events grouped into versioned episodes (time gap in a thread, token-capped).",
)
def episodes(context: dg.AssetExecutionContext, stores: StoresResource) -> dg.MaterializeResult:
    day, platform = split_key(context)
    with stores.open() as s:
        stats = build_episodes(s, day, platform)
        total = s.conn.execute(
            "SELECT count(*) FROM episodes WHERE partition_key = ?", (f"{day}|{platform}",)
        ).fetchone()[0]
    context.log.info(f"episodes: {stats}")
    return dg.MaterializeResult(
        metadata={
            "events": stats.events,
            "created": stats.created,
            "extended": stats.extended,
            "unchanged": stats.unchanged,
            "episodes_in_partition": total,
        }
    )


class FactsConfig(dg.Config):
    """Rerun knobs: only the failed episodes, or named episodes."""

    only_failed: bool = False
    episode_ids: list[str] = []  # noqa: RUF012 - pydantic copies defaults


@dg.asset(
    partitions_def=day_platform_partitions,
    deps=[episodes],
    group_name="memory",
    pool=SQLITE_POOL,
    description="Layer 2a: facts, entities, causal links and merge proposals written per episode.",
)
def facts(
    context: dg.AssetExecutionContext, config: FactsConfig, stores: StoresResource, writer: WriterResource
) -> dg.MaterializeResult:
    day, platform = split_key(context)
    episode_writer = writer.get_writer()

    def progress(i: int, n: int, outcome: object) -> None:
        context.log.info(
            f"[{i}/{n}] episode {outcome.episode_id}: {outcome.status} "  # type: ignore[attr-defined]
            f"{outcome.facts} facts {outcome.error or ''}"
        )  # type: ignore[attr-defined]

    with stores.open() as s:
        report = process_partition(
            s,
            f"{day}|{platform}",
            episode_writer,
            only_failed=config.only_failed,
            episode_ids=config.episode_ids or None,
            on_episode=progress,
        )
    summary = report.as_dict()
    metadata = {
        "writer": episode_writer.name,
        "episodes": summary["episodes"],
        "ok": summary["ok"],
        "skipped": summary["skipped"],
        "failed": summary["failed"],
        "facts_written": summary["facts"],
        "prompt_tokens": summary["prompt_tokens"],
        "completion_tokens": summary["completion_tokens"],
    }
    if summary["failures"]:
        metadata["failures"] = _md_table(
            ["episode", "error"], [[f["episode_id"], f["error"]] for f in summary["failures"]]
        )
        # Good episodes are committed; failing the step marks the partition for a rerun.
        raise dg.Failure(
            description=f"{summary['failed']} of {summary['episodes']} episodes failed; "
            "rerun the partition (only failed episodes are redone)",
            metadata=metadata,
        )
    return dg.MaterializeResult(metadata=metadata)


@dg.asset(
    partitions_def=day_platform_partitions,
    deps=[facts],
    group_name="memory",
    pool=SQLITE_POOL,
    description="Vectors for new facts (sentence-transformers) in embeddings.db and the search index.",
)
def embeddings(
    context: dg.AssetExecutionContext, stores: StoresResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    day, platform = split_key(context)
    model = embedder.get()
    with stores.open() as s:
        fact_ids = [
            r[0]
            for r in s.conn.execute(
                """SELECT f.id FROM facts f JOIN events e ON e.id = f.source_event_id
               WHERE e.platform = ? AND e.day = ?""",
                (platform, day),
            )
        ]
        stats = embed_pending(
            s,
            model,
            target_types=("fact",),
            fact_ids=fact_ids,
            on_progress=lambda done, total: context.log.info(f"embedded {done}/{total}"),
        )
    return dg.MaterializeResult(
        metadata={
            "model": model.model_name,
            "rows": stats.rows,
            "seconds": round(stats.seconds, 3),
            "rows_per_s": round(stats.rows_per_s, 1),
            "facts_in_partition": len(fact_ids),
        }
    )
