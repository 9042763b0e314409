"""Every run the code location launches is queued with its tenant (`nexus/tenant`): the run queue reads run tags
when it dequeues, so a tag added once the run started (claim_run) is too late for its per-tenant limit.

The instance is the one `dagster_home/dagster.yaml` names (NexusInstance) with Dagster's queued run coordinator and
no daemon running the queue, so every run stays QUEUED and its tags are read before anything runs. Runs are made
the ways Dagster makes them: a launch from the UI (GraphQL, as "Materialize" and the launchpad send it), an asset
backfill (the UI's mutation, then the backfill daemon's own iteration), and for every job, schedule and sensor
the creation path the daemons take (the job's snapshot, the request's tags only).
"""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.definitions.assets.job.asset_job import IMPLICIT_ASSET_JOB_NAME
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster._daemon.backfill import execute_backfill_iteration
from dagster_graphql.client.query import LAUNCH_PARTITION_BACKFILL_MUTATION, LAUNCH_PIPELINE_EXECUTION_MUTATION
from dagster_graphql.test.utils import execute_dagster_graphql

from nexus_memory.core.config import Settings
from nexus_memory_assets.instance import NexusInstance
from nexus_memory_assets.tenant import TENANT_TAG

TENANT = "acme"
PARTITION = "2025-03-03|chat"


@pytest.fixture
def location(settings: Settings, tmp_path: Path) -> tuple[dg.DagsterInstance, WorkspaceProcessContext]:
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        yaml.safe_dump(
            {
                "telemetry": {"enabled": False},
                "instance_class": {"module": "nexus_memory_assets.instance", "class": "NexusInstance"},
                "run_coordinator": {
                    "module": "dagster._core.run_coordinator",
                    "class": "QueuedRunCoordinator",
                    "config": {
                        "tag_concurrency_limits": [
                            {"key": TENANT_TAG, "value": {"applyLimitPerUniqueValue": True}, "limit": 1}
                        ]
                    },
                },
            }
        )
    )
    code = tmp_path / "location.py"  # the code location of one tenant, as a code server loads it
    code.write_text(
        textwrap.dedent(
            f"""
            from nexus_memory.core.config import load_settings
            from nexus_memory_assets.definitions import build_definitions

            defs = build_definitions(load_settings(data_dir={str(settings.data_dir)!r}, tenant={TENANT!r}))
            """
        )
    )
    instance = dg.DagsterInstance.from_config(str(home))
    assert isinstance(instance, NexusInstance)
    instance.add_dynamic_partitions("day", ["2025-03-03"])
    instance.add_dynamic_partitions("platform", ["chat"])
    origin = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(python_file=str(code), attribute="defs", working_directory=str(tmp_path)),
        location_name="tenant_acme",
    )
    with WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget(origin)) as context:
        yield instance, context
    instance.dispose()


def _queued_tags(instance: dg.DagsterInstance, run_id: str) -> dict[str, str]:
    run = instance.get_run_by_id(run_id)
    assert run is not None and run.status == dg.DagsterRunStatus.QUEUED, run and run.status
    return dict(run.tags)


def test_materialize_from_the_ui_is_queued_with_the_tenant(location: tuple) -> None:
    instance, context = location
    request = context.create_request_context()
    result = execute_dagster_graphql(
        request,
        LAUNCH_PIPELINE_EXECUTION_MUTATION,
        {
            "executionParams": {
                "selector": {
                    "repositoryLocationName": "tenant_acme",
                    "repositoryName": "__repository__",
                    "pipelineName": IMPLICIT_ASSET_JOB_NAME,
                    "assetSelection": [{"path": ["events"]}],
                },
                "mode": "default",
                # What the UI sends for one partition: the partition's tags only.
                "executionMetadata": {
                    "tags": [
                        {"key": "dagster/partition", "value": PARTITION},
                        {"key": "dagster/partition/day", "value": "2025-03-03"},
                        {"key": "dagster/partition/platform", "value": "chat"},
                    ]
                },
            }
        },
    )
    launched = result.data["launchPipelineExecution"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    assert _queued_tags(instance, launched["run"]["runId"])[TENANT_TAG] == TENANT


def test_an_asset_backfills_runs_are_queued_with_the_tenant(location: tuple) -> None:
    instance, context = location
    result = execute_dagster_graphql(
        context.create_request_context(),
        LAUNCH_PARTITION_BACKFILL_MUTATION,
        {
            "backfillParams": {
                "partitionNames": [PARTITION],
                "assetSelection": [{"path": ["events"]}, {"path": ["episodes"]}],
                "fromFailure": False,
            }
        },
    )
    launched = result.data["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    for error in execute_backfill_iteration(context, logging.getLogger("backfill")):
        assert error is None, error
    runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": launched["backfillId"]}))
    assert runs, "the backfill daemon made no run"
    for run in runs:
        assert _queued_tags(instance, run.run_id)[TENANT_TAG] == TENANT


def test_every_job_schedule_and_sensor_run_is_created_with_the_tenant(location: tuple) -> None:
    """The daemons' creation path (a sensor's or automation's asset request, a schedule, a job backfill): the job's
    snapshot and the request's own tags, nothing of the job's tags merged in by the caller."""
    instance, context = location
    repository = next(
        iter(context.create_request_context().get_code_location("tenant_acme").get_repositories().values())
    )
    jobs = {job.name: job for job in repository.get_all_jobs()}
    targets = {s.job_name for s in repository.get_schedules()} | {
        t.job_name for s in repository.get_sensors() for t in s.get_targets()
    }
    assert IMPLICIT_ASSET_JOB_NAME in jobs and targets and targets <= set(jobs)
    for name, job in jobs.items():
        run = instance.create_run(
            job_name=name,
            run_id=None,
            run_config={},
            status=dg.DagsterRunStatus.NOT_STARTED,
            tags={"dagster/sensor_name": "any"},
            root_run_id=None,
            parent_run_id=None,
            step_keys_to_execute=None,
            execution_plan_snapshot=None,
            job_snapshot=job.job_snapshot,
            parent_job_snapshot=None,
            asset_selection=None,
            asset_check_selection=None,
            resolved_op_selection=None,
            op_selection=None,
            remote_job_origin=job.get_remote_origin(),
            job_code_origin=job.get_python_origin(),
            asset_graph=context.create_request_context().asset_graph,
        )
        assert run.tags.get(TENANT_TAG) == TENANT, name
        assert job.tags.get(TENANT_TAG) == TENANT or job.run_tags.get(TENANT_TAG) == TENANT, name
