"""A forget launched from the Dagster UI leaves no byte of what it forgot under DAGSTER_HOME either.

The request is filed by the CLI (`nexus-memory forget --sender ... --request`), and `forget_job` is launched as
the UI launches it: a GraphQL launch on a workspace of the code location, run by the instance's run launcher in
a process of its own (so its compute logs are captured under DAGSTER_HOME as in `make ui`). Then every file of
the Dagster home (run storage, event logs, compute logs) and of the data directory is searched for the handle,
the names and the texts forgotten. A request that can no longer be carried out fails without naming them either.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.test_utils import poll_for_finished_run
from dagster_graphql.client.query import LAUNCH_PIPELINE_EXECUTION_MUTATION
from dagster_graphql.test.utils import define_out_of_process_context, execute_dagster_graphql
from lifecycle_world import build, message

from nexus_memory.bench.forget import files_holding
from nexus_memory.cli import main
from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory.lifecycle.forget import Target, file_request, forget, make_plan
from nexus_memory.lifecycle.forget.requests import REQUEST_DIR

HANDLE = "quillfeather@example.com"
SECRET = "The locker combination is vexqorn and the key is in the red box."


@pytest.fixture
def world(settings: Settings) -> Settings:
    with Stores(settings) as stores:
        build(
            stores,
            [
                message(1, HANDLE, "Hi, this is Quillfeather Marsh.", sender_name="Quillfeather Marsh"),
                message(2, HANDLE, SECRET, sender_name="Quillfeather Marsh"),
                message(3, "ben@example.com", "Ben here. I moved to Lisbon last month.", sender_name="Ben"),
            ],
        )
    return settings


def _launch_forget_job(settings: Settings, home: Path, request: str) -> dg.DagsterRun:
    """Launch forget_job as the UI does, on an instance at `home`, and wait for its run to end."""
    code = home.parent / "location.py"
    code.write_text(
        textwrap.dedent(
            f"""
            from nexus_memory.core.config import load_settings
            from nexus_memory_assets.definitions import build_definitions

            defs = build_definitions(load_settings(data_dir={str(settings.data_dir)!r}))
            """
        )
    )
    home.mkdir()
    # The instance of dagster_home/dagster.yaml, with runs launched at once instead of queued for the daemon.
    (home / "dagster.yaml").write_text(
        yaml.safe_dump(
            {
                "telemetry": {"enabled": False},
                "instance_class": {"module": "nexus_memory_assets.instance", "class": "NexusInstance"},
                "run_coordinator": {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"},
            }
        )
    )
    instance = dg.DagsterInstance.from_config(str(home))
    try:
        # The code location in a code server of its own, which the run launcher starts each run's process from.
        with define_out_of_process_context(str(code), "defs", instance) as context:
            location = next(iter(context.get_code_location_entries()))
            result = execute_dagster_graphql(
                context,
                LAUNCH_PIPELINE_EXECUTION_MUTATION,
                {
                    "executionParams": {
                        "selector": {
                            "repositoryLocationName": location,
                            "repositoryName": "__repository__",
                            "pipelineName": "forget_job",
                        },
                        "runConfigData": {"ops": {"forget_target": {"config": {"request": request}}}},
                        "mode": "default",
                    }
                },
            )
            launched = result.data["launchPipelineExecution"]
            assert launched["__typename"] == "LaunchRunSuccess", launched
            run_id = launched["run"]["runId"]
            poll_for_finished_run(instance, run_id, timeout=420)
            run = instance.get_run_by_id(run_id)
            assert run is not None
            return run
    finally:
        instance.dispose()


def test_a_forget_launched_from_the_ui_leaves_nothing_in_the_dagster_home(
    world: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "dagster_home"
    with Stores(world) as stores:
        plan = make_plan(stores.conn, Target("sender", HANDLE))
    forgotten = [HANDLE, SECRET, "vexqorn", *plan.texts]
    assert files_holding([world.data_dir], ["vexqorn"]), "the secret must be on disk before the forget"

    monkeypatch.setenv("NEXUS_DATA_DIR", str(world.data_dir))
    assert main(["forget", "--sender", HANDLE, "--request", "--json"]) == 0
    request = json.loads(capsys.readouterr().out)["request"]
    assert files_holding([world.data_dir / REQUEST_DIR], [HANDLE])  # filed where only the data directory has it

    run = _launch_forget_job(world, home, request)

    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert list(home.rglob("*.db")) and list(home.rglob("*.out")) + list(home.rglob("*.err")), "no run storage"
    assert files_holding([home], [request]), "the scan must see the run's config (it holds the request id)"
    assert files_holding([home, world.data_dir], forgotten) == []
    assert not list((world.data_dir / REQUEST_DIR).iterdir())
    with Stores(world) as stores:
        assert stores.conn.execute("SELECT count(*) FROM events WHERE sender_id = ?", (HANDLE,)).fetchone()[0] == 0
        assert stores.conn.execute("SELECT status FROM deletion_log").fetchone()[0] == "scrubbed"


def test_a_request_that_cannot_be_carried_out_fails_without_naming_its_target(world: Settings, tmp_path: Path) -> None:
    with Stores(world) as stores:
        request = file_request(stores, Target("sender", HANDLE), requested_by="test")
        forget(stores, Target("sender", HANDLE), requested_by="test")  # forgotten another way first

    run = _launch_forget_job(world, tmp_path / "dagster_home", request)

    assert run.status == dg.DagsterRunStatus.FAILURE
    assert files_holding([tmp_path / "dagster_home"], [HANDLE, "Quillfeather", "vexqorn"]) == []
    assert files_holding([world.data_dir], [HANDLE, "vexqorn"]) == []  # the person's entity stays: a sender forget
    assert not list((world.data_dir / REQUEST_DIR).iterdir())
