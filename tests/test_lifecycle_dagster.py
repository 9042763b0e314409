"""Each lifecycle schedule's job runs in-process and says in its metadata what changed; the schedules, the
forget job and the session sensor are in the code location."""

from __future__ import annotations

import dagster as dg
import pytest
from lifecycle_world import build, facts_with, files_holding, message

from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory_assets import lifecycle
from nexus_memory_assets.definitions import defs
from resources import StoresResource


@pytest.fixture
def built(settings: Settings) -> Settings:
    with Stores(settings) as stores:
        build(
            stores,
            [
                message(1, "alice@example.com", "I live in Paris.", sender_name="Alice", minute=0),
                message(2, "alice@example.com", "I moved to Berlin.", sender_name="Alice", minute=60 * 24 * 40),
                message(3, "ben@example.com", "I will send the report by Friday.", sender_name="Ben", session="s2"),
                message(4, "ben@example.com", "The vault code is qqzvk.", sender_name="Ben", session="s2"),
            ],
        )
    return settings


def run(job: dg.JobDefinition, settings: Settings, run_config: dict | None = None) -> dg.ExecuteInProcessResult:
    return job.execute_in_process(
        run_config=run_config,
        resources={"stores": StoresResource(data_dir=str(settings.data_dir))},
        instance=dg.DagsterInstance.ephemeral(),
    )


def output_metadata(result: dg.ExecuteInProcessResult, op: str) -> dict:
    output = next(e for e in result.events_for_node(op) if e.is_successful_output)
    return {k: v.value for k, v in output.step_output_data.metadata.items()}


def test_schedules_jobs_and_sensor_are_in_the_code_location() -> None:
    crons = {s.name: s.cron_schedule for s in defs.get_repository_def().schedule_defs}
    assert {
        "nightly_enrichment_schedule": "0 2 * * *",
        "nightly_consolidation": "0 3 * * *",
        "nightly_decay_schedule": "0 4 * * *",
        "weekly_reflection_schedule": "0 3 * * 0",
    }.items() <= crons.items()
    for name in ("nightly_enrichment", "nightly_decay", "weekly_reflection", "consolidation", "forget_job"):
        assert defs.resolve_job_def(name) is not None
    assert "new_session_sensor" in {s.name for s in defs.get_repository_def().sensor_defs}


def test_enrichment_job_enriches_then_finds_the_conflict(built: Settings) -> None:
    result = run(lifecycle.nightly_enrichment, built)
    assert result.success
    assert output_metadata(result, "enrich_entities")["facts_read"] >= 1
    conflicts = output_metadata(result, "detect_conflicts")
    assert conflicts["conflicts_found"] == 1 and conflicts["detector"] == "offline"


def test_decay_job_reports_what_decayed(built: Settings) -> None:
    result = run(lifecycle.nightly_decay, built)
    meta = output_metadata(result, "apply_decay")
    assert result.success and meta["checked"] == 4 and meta["soft_deleted"] == 0 and meta["protected"] == 0
    assert "rate" in meta and "threshold" in meta


def test_reflection_job_writes_the_weekly_insight(built: Settings) -> None:
    result = run(lifecycle.weekly_reflection, built)
    assert result.success and result.output_for_node("write_reflection") == "written"
    again = run(lifecycle.weekly_reflection, built)
    assert again.output_for_node("write_reflection") == "skipped"
    assert "6 days" in output_metadata(again, "write_reflection")["reason"]


def test_nightly_consolidation_ends_sessions_and_consolidates_them(built: Settings) -> None:
    from resources import ConsolidatorResource

    result = defs.resolve_job_def("consolidation").execute_in_process(
        run_config={"ops": {"observations": {"config": {"nightly": True}}}},
        resources={"stores": StoresResource(data_dir=str(built.data_dir)), "consolidator": ConsolidatorResource()},
        instance=dg.DagsterInstance.ephemeral(),
    )
    [event] = result.get_asset_materialization_events()
    meta = {k: v.value for k, v in event.materialization.metadata.items()}
    assert result.success and meta["sessions_ended"] == 2 and meta["sessions_consolidated"] == 2


def test_forget_job_leaves_no_trace_and_reports_rows_per_store(built: Settings) -> None:
    from nexus_memory.lifecycle.forget import Target, file_request

    with Stores(built) as stores:
        request = file_request(stores, Target("fact", facts_with(stores, "qqzvk")[0]), requested_by="test")
    config = {"ops": {"forget_target": {"config": {"request": request}}}}
    result = run(lifecycle.forget_job, built, config)
    meta = output_metadata(result, "forget_target")
    assert result.success and meta["status"] == "scrubbed"
    assert meta["removed_events"]["events"] == 1 and meta["removed_memory"]["facts"] == 1
    assert files_holding(built.data_dir, "qqzvk") == []


def test_nightly_vector_index_retrains_what_a_forget_pruned(built: Settings) -> None:
    from nexus_memory.lifecycle.forget import Target, forget
    from nexus_memory_assets.maintenance import nightly_vector_index

    with Stores(built) as stores:
        forget(stores, Target("fact", facts_with(stores, "qqzvk")[0]))
    result = run(nightly_vector_index, built)
    assert result.success and output_metadata(result, "retrain_vector_indexes")["by_type"]["fact"] == "rebuilt"
    again = run(nightly_vector_index, built)
    assert set(output_metadata(again, "retrain_vector_indexes")["by_type"].values()) == {"none"}


def test_session_sensor_asks_for_a_run_when_a_new_session_appears(built: Settings) -> None:
    from sensors.sessions import new_session_sensor

    def tick(cursor: str | None) -> dg.SensorResult | dg.SkipReason:
        context = dg.build_sensor_context(
            cursor=cursor,
            resources={"stores": StoresResource(data_dir=str(built.data_dir))},
            instance=dg.DagsterInstance.ephemeral(),
        )
        return new_session_sensor(context)

    first = tick(None)
    assert isinstance(first, dg.SensorResult) and len(first.run_requests or []) == 1
    assert isinstance(tick(first.cursor), dg.SkipReason)  # nothing new since
