"""The Dagster layer: Definitions load, sensor with a cursor, in-process materialisation of a partition."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from nexus_memory.config import Settings
from nexus_memory.stores import Stores
from nexus_memory_assets import assets
from nexus_memory_assets.definitions import defs
from nexus_memory_assets.partitions import partition_key
from resources import EmbedderResource, StoresResource, WriterResource
from sensors import new_events_sensor

EVENTS = [
    {
        "id": "1",
        "platform": "imessage",
        "sender_id": "+15550111",
        "sender_name": "Priya",
        "thread_id": "dm-priya",
        "content": "My new email is priya.k@example.com",
        "as_of": "2025-03-03T09:00:00Z",
    },
    {
        "id": "2",
        "platform": "imessage",
        "sender_id": "+15550100",
        "direction": "outbound",
        "thread_id": "dm-priya",
        "content": "Got it, thanks!",
        "as_of": "2025-03-03T09:01:00Z",
    },
    {
        "id": "3",
        "platform": "gmail",
        "sender_id": "boss@example.com",
        "thread_id": "launch",
        "content": "We moved the launch to April because the vendor slipped.",
        "as_of": "2025-03-04T15:00:00Z",
    },
]


def _write_inbox(settings: Settings, name: str, records: list[dict]) -> Path:
    inbox = Path(settings.inbox_dir)
    inbox.mkdir(parents=True, exist_ok=True)
    path = inbox / name
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def test_definitions_load_with_lineage() -> None:
    repo = defs.get_repository_def()
    graph = repo.asset_graph
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {"events", "episodes", "facts", "embeddings"} <= keys
    assert graph.get(dg.AssetKey("episodes")).parent_keys == {dg.AssetKey("events")}
    assert graph.get(dg.AssetKey("embeddings")).parent_keys == {dg.AssetKey("facts")}
    assert defs.resolve_sensor_def("new_events_sensor")
    for job in ("memory_pipeline", "rerun_failed_episodes"):  # partitioned like the assets they select
        assert isinstance(defs.resolve_job_def(job).partitions_def, dg.MultiPartitionsDefinition)


def test_sensor_ingests_inbox_and_requests_only_touched_partitions(settings: Settings) -> None:
    _write_inbox(settings, "batch1.jsonl", EVENTS)
    instance = dg.DagsterInstance.ephemeral()
    resources = {"stores": StoresResource(data_dir=str(settings.data_dir), inbox_dir=str(settings.inbox_dir))}
    context = dg.build_sensor_context(instance=instance, resources=resources)
    result = new_events_sensor(context)
    keys = sorted(str(r.partition_key) for r in result.run_requests)
    assert keys == ["2025-03-03|imessage", "2025-03-04|gmail"]
    assert sorted(result.dynamic_partitions_requests[0].partition_keys) == ["gmail", "imessage"]
    cursor = result.cursor
    # A repeated tick with the same cursor sees nothing new; the same file is never ingested twice.
    again = new_events_sensor(dg.build_sensor_context(instance=instance, resources=resources, cursor=cursor))
    assert isinstance(again, dg.SkipReason)
    # A new file touching one partition requests exactly that partition.
    _write_inbox(settings, "batch2.jsonl", [{**EVENTS[2], "id": "4", "content": "Launch checklist attached."}])
    third = new_events_sensor(dg.build_sensor_context(instance=instance, resources=resources, cursor=cursor))
    assert [str(r.partition_key) for r in third.run_requests] == ["2025-03-04|gmail"]
    with Stores(settings) as stores:
        assert stores.counts()["events"] == 4


def test_materialise_events_and_episodes_for_one_partition(settings: Settings) -> None:
    _write_inbox(settings, "batch1.jsonl", EVENTS)
    from nexus_memory.ingest import ingest_file

    with Stores(settings) as stores:
        ingest_file(stores, Path(settings.inbox_dir) / "batch1.jsonl", "jsonl")
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("platform", ["imessage", "gmail"])
    result = dg.materialize(
        [assets.events, assets.episodes],
        partition_key=partition_key("2025-03-03", "imessage"),
        instance=instance,
        resources={"stores": StoresResource(data_dir=str(settings.data_dir))},
    )
    assert result.success
    materialisations = {
        e.materialization.asset_key.to_user_string(): e.materialization.metadata
        for e in result.get_asset_materialization_events()
    }
    assert materialisations["events"]["events"].value == 2
    assert materialisations["episodes"]["created"].value == 1
    with Stores(settings) as stores:
        assert stores.conn.execute("SELECT count(*) FROM episodes WHERE platform = 'gmail'").fetchone()[0] == 0


@pytest.mark.slow
def test_full_pipeline_for_a_partition_writes_facts_and_vectors(settings: Settings) -> None:
    from nexus_memory.ingest import ingest_file

    _write_inbox(settings, "batch1.jsonl", EVENTS)
    with Stores(settings) as stores:
        ingest_file(stores, Path(settings.inbox_dir) / "batch1.jsonl", "jsonl")
    from nexus_memory_assets.pipeline import run_pipeline

    outcome = run_pipeline(settings, instance=dg.DagsterInstance.ephemeral(), progress=lambda _l: None)
    assert outcome["partitions"] == 2 and not outcome["failed"]
    with Stores(settings) as stores:
        counts = stores.counts()
        fact_vectors = stores.conn.execute("SELECT count(*) FROM embeddings WHERE target_type = 'fact'").fetchone()[0]
        assert counts["facts"] >= 2 and fact_vectors == counts["facts"]
        assert counts["causal_links"] >= 1
        # Contact info said in conversation is an entity with a merge proposal, never a routable contact.
        assert stores.conn.execute("SELECT count(*) FROM contacts WHERE handle LIKE 'priya.k%'").fetchone()[0] == 0
        assert counts["merge_candidates"] >= 1
    assert WriterResource().get_writer().name == "offline"


def _two_embedded_facts(settings: Settings) -> None:
    from nexus_memory.embeddings import embed_pending, get_embedder

    with Stores(settings) as stores, stores.transaction():
        stores.conn.executemany(
            "INSERT INTO facts(id, text, as_of, ingested_at, created_at) VALUES (?, ?, 0, 0, 0)",
            [("f1", "Alice works at Acme"), ("f2", "Bob likes hiking")],
        )
    with Stores(settings) as stores:
        embed_pending(stores, get_embedder())


def test_reembed_job_recomputes_vectors_and_reports(settings: Settings) -> None:
    """The repair job an operator launches from the UI: vectors recomputed, counts in its metadata."""
    from nexus_memory_assets.maintenance import reembed_job

    _two_embedded_facts(settings)
    with Stores(settings) as stores:
        stores.conn.execute("UPDATE embeddings SET embedding = zeroblob(length(embedding))")
    result = reembed_job.execute_in_process(
        resources={"stores": StoresResource(data_dir=str(settings.data_dir)), "embedder": EmbedderResource()},
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert result.success and result.output_for_node("reembed_vectors") == 2
    output = next(e for e in result.events_for_node("reembed_vectors") if e.is_successful_output)
    metadata = output.step_output_data.metadata
    assert metadata["rows"].value == 2 and metadata["by_type"].value == {"fact": 2}
    with Stores(settings) as stores:
        norms = [
            sum(b * b for b in memoryview(r[0]).cast("f"))
            for r in stores.conn.execute("SELECT embedding FROM embeddings")
        ]
        assert len(norms) == 2 and all(abs(n - 1.0) < 1e-4 for n in norms)


def test_fact_vectors_current_check_warns_after_the_embedded_text_changed(settings: Settings) -> None:
    """What an operator sees when vectors predate a change of the embedded text: a warning naming the fix."""
    from nexus_memory_assets.checks import fact_vectors_current

    _two_embedded_facts(settings)
    resource = StoresResource(data_dir=str(settings.data_dir))
    context = dg.build_asset_check_context()
    current = fact_vectors_current(context, stores=resource)
    assert current.passed and current.metadata["checked"].value == 2
    with Stores(settings) as stores:
        stores.conn.execute("UPDATE embeddings SET text_hash = 'made-from-an-older-text' WHERE target_id = 'f1'")
    stale = fact_vectors_current(context, stores=resource)
    assert not stale.passed and stale.severity == dg.AssetCheckSeverity.WARN
    assert stale.metadata["stale"].value == 1 and "reembed_job" in stale.description
