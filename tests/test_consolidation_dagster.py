"""Layers 5 and 6 in Dagster: lineage, materialisation metadata, asset checks, the nightly schedule, the
new-facts sensor, the mental-model partitions, and the second-pipeline-run invariant."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from nexus_memory.core.config import Settings, load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.mental_models import create_model
from nexus_memory_assets.consolidation.assets import mental_models, observations
from nexus_memory_assets.consolidation.checks import observation_facts_exist, observations_not_duplicated
from nexus_memory_assets.consolidation.jobs import nightly_consolidation
from nexus_memory_assets.definitions import build_definitions, defs
from resources import ConsolidatorResource, EmbedderResource, StoresResource
from sensors import consolidate_after_embeddings, mental_models_sensor
from tests.memory_builders import embed, fact, person

REPO = Path(__file__).resolve().parent.parent


def _facts(settings: Settings) -> str:
    with Stores(settings) as stores:
        alice = person(stores, "Alice Chen")
        fact(stores, "Alice Chen is training for the Berlin marathon in September.", "2023-05-02", alice)
        fact(stores, "Alice Chen ran 30 km on Sunday for her Berlin marathon training.", "2023-06-04", alice)
        fact(stores, "Alice Chen adopted a cat named Luna.", "2023-06-05", alice)
        embed(stores)
    return alice


def _resources(settings: Settings) -> dict:
    return {
        "stores": StoresResource(data_dir=str(settings.data_dir)),
        "embedder": EmbedderResource(),
        "consolidator": ConsolidatorResource(),
    }


def test_lineage_shows_six_layers_and_the_automation() -> None:
    graph = defs.get_repository_def().asset_graph
    assert graph.get(dg.AssetKey("observations")).parent_keys == {dg.AssetKey("embeddings")}
    assert graph.get(dg.AssetKey("mental_models")).parent_keys == {dg.AssetKey("observations")}
    assert isinstance(defs.resolve_job_def("refresh_mental_models").partitions_def, dg.DynamicPartitionsDefinition)
    assert defs.resolve_job_def("consolidation").partitions_def is None
    schedule = defs.resolve_schedule_def("nightly_consolidation")
    assert schedule.cron_schedule == "0 3 * * *" and schedule.job_name == "consolidation"
    assert defs.resolve_sensor_def("new_session_sensor").job_name == "consolidation"  # the one session trigger
    for name in ("consolidate_after_embeddings", "mental_models_sensor"):
        assert defs.resolve_sensor_def(name)


def test_materialise_observations_then_a_model_partition(settings: Settings) -> None:
    _facts(settings)
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([observations], instance=instance, resources=_resources(settings))
    assert result.success
    [event] = result.get_asset_materialization_events()
    metadata = {k: v.value for k, v in event.materialization.metadata.items()}
    assert metadata["facts_consolidated"] == 3 and metadata["facts_isolated"] == 1
    assert metadata["observations_created"] == 1 and metadata["observations_versioned"] == 0
    assert metadata["facts_per_observation"] == 2.0 and metadata["stale_observations"] == 0
    assert metadata["llm_prompt_tokens"] == 0 and metadata["emergent_models_created"] == 1
    [partition] = instance.get_dynamic_partitions("mental_model")
    done = dg.materialize([mental_models], partition_key=partition, instance=instance, resources=_resources(settings))
    assert done.success
    [event] = done.get_asset_materialization_events()
    assert event.materialization.metadata["version"].value == 1
    with Stores(settings) as stores:  # the model got a vector, so recall(scope=mental_models) finds it
        assert stores.conn.execute("SELECT count(*) FROM embeddings WHERE target_type = 'mental_model'").fetchone()[0]
    context = dg.build_asset_check_context()
    resource = StoresResource(data_dir=str(settings.data_dir))
    assert observations_not_duplicated(context, stores=resource).passed
    assert observation_facts_exist(context, stores=resource).passed


def test_near_duplicate_check_fails_on_copies(settings: Settings) -> None:
    _facts(settings)
    dg.materialize([observations], instance=dg.DagsterInstance.ephemeral(), resources=_resources(settings))
    with Stores(settings) as stores, stores.transaction():  # a copy that bypassed consolidation
        conn = stores.conn
        row = conn.execute("SELECT * FROM analysis_runs").fetchone()
        conn.execute(
            """INSERT INTO episodes (id, definition_id, start_time, end_time, event_count, created_at)
               VALUES ('kep_copy', 'def_knowledge', 0, 0, 0, 0)"""
        )
        conn.execute(
            """INSERT INTO analysis_runs (id, analysis_type_id, episode_id, status, output_text, created_at, root_id,
                   entity_id) VALUES ('obs_copy', 'observation_v1', 'kep_copy', 'completed', ?, 0, 'obs_copy', ?)""",
            (row["output_text"], row["entity_id"]),
        )
    check = observations_not_duplicated(
        dg.build_asset_check_context(), stores=StoresResource(data_dir=str(settings.data_dir))
    )
    assert not check.passed and check.metadata["near_duplicate_pairs"].value == 1


def test_nightly_schedule_runs_consolidation_in_process(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    _facts(settings)
    monkeypatch.setenv("NEXUS_DATA_DIR", str(settings.data_dir))
    instance = dg.DagsterInstance.ephemeral()
    context = dg.build_schedule_context(instance=instance, scheduled_execution_time=None)
    requests = list(nightly_consolidation.evaluate_tick(context).run_requests or [])
    assert len(requests) == 1
    assert requests[0].run_config == {"ops": {"observations": {"config": {"nightly": True}}}}  # ends open sessions
    job = build_definitions(load_settings()).resolve_job_def("consolidation")
    result = job.execute_in_process(run_config=requests[0].run_config, instance=instance)
    assert result.success
    with Stores(settings) as stores:
        assert stores.counts()["observations"] == 1
        assert stores.conn.execute("SELECT count(*) FROM facts WHERE is_consolidated = 0").fetchone()[0] == 0


def test_new_fact_vectors_trigger_consolidation(settings: Settings) -> None:
    _facts(settings)
    instance = dg.DagsterInstance.ephemeral()
    resources = {"stores": StoresResource(data_dir=str(settings.data_dir))}
    quiet = consolidate_after_embeddings(dg.build_sensor_context(instance=instance, resources=resources))
    assert not quiet.run_requests  # no embeddings materialisation yet
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key="embeddings"))
    result = consolidate_after_embeddings(dg.build_sensor_context(instance=instance, resources=resources))
    [request] = result.run_requests
    assert request.run_key.startswith("facts:")
    again = consolidate_after_embeddings(
        dg.build_sensor_context(instance=instance, resources=resources, cursor=result.cursor)
    )
    assert not again.run_requests  # the same materialisation is not seen twice
    dg.materialize([observations], instance=instance, resources=_resources(settings))
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key="embeddings"))
    idle = consolidate_after_embeddings(
        dg.build_sensor_context(instance=instance, resources=resources, cursor=result.cursor)
    )
    assert not idle.run_requests  # new vectors, but every fact is consolidated already


def test_mental_models_sensor_registers_and_refreshes_due_models(settings: Settings) -> None:
    alice = _facts(settings)
    instance = dg.DagsterInstance.ephemeral()
    resources = {"stores": StoresResource(data_dir=str(settings.data_dir))}
    with Stores(settings) as stores:
        model = create_model(stores, "Alice's running", "How is the marathon training going?", pinned=True)
    first = mental_models_sensor(dg.build_sensor_context(instance=instance, resources=resources))
    assert [r.partition_key for r in first.run_requests] == [model.root_id]
    assert first.dynamic_partitions_requests[0].partition_keys == [model.root_id]
    instance.add_dynamic_partitions("mental_model", [model.root_id])
    dg.materialize([mental_models], partition_key=model.root_id, instance=instance, resources=_resources(settings))
    idle = mental_models_sensor(dg.build_sensor_context(instance=instance, resources=resources))
    assert not idle.run_requests
    with Stores(settings) as stores:  # new knowledge about Alice: the pinned model is due
        fact(stores, "Alice Chen finished the Berlin marathon in 3 hours 50 minutes.", "2023-09-24", alice)
        embed(stores)
    dg.materialize([observations], instance=instance, resources=_resources(settings))
    due = mental_models_sensor(dg.build_sensor_context(instance=instance, resources=resources))
    assert model.root_id in [r.partition_key for r in due.run_requests]


@pytest.mark.slow
def test_a_second_pipeline_run_changes_no_count(settings: Settings) -> None:
    from nexus_memory.events.ingest import ingest_file
    from nexus_memory_assets.pipeline import run_pipeline

    with Stores(settings) as stores:
        ingest_file(stores, REPO / "nexus_memory" / "sample_data" / "events.jsonl", "jsonl")
    instance = dg.DagsterInstance.ephemeral()
    first = run_pipeline(settings, instance=instance, progress=lambda _l: None)
    assert first.ok and first.consolidation and first.consolidation.observations == "ok"
    tables = ("analysis_runs", "observation_facts", "episode_events", "mental_models", "mental_model_sources")

    def rows(stores: Stores) -> dict[str, int]:
        return {t: stores.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}

    with Stores(settings) as stores:
        counts, before = stores.counts(), rows(stores)
    assert counts["observations"] > 0 and counts["mental_models"] > 0
    second = run_pipeline(settings, instance=instance, progress=lambda _l: None)
    assert second.runs == [] and second.consolidation and second.consolidation.mental_models == []
    with Stores(settings) as stores:
        assert stores.counts() == counts and rows(stores) == before
