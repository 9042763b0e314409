"""Dagster's instance on PostgreSQL, through a real daemon: the stores end as the same history leaves them on SQLite.

A throwaway PostgreSQL server (tests/postgres.py) holds the instance's runs, event logs and schedules, configured as
`dagster_home/dagster.yaml` is (instance class, run queue, run monitoring) with `storage: postgres`.
`dagster-daemon run` and a `dagster-webserver` (for GraphQL, as the UI sends it) share it. On it, in turn:
a partition-range backfill of two platforms with one episode failing, a tick of the nightly consolidation
schedule, the new-events sensor taking an inbox file, and a rerun of the failed episode.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import numpy as np
import pytest
import yaml
from daemon import SELECTOR, background, dagster_daemon, wait_until
from dagster._core.scheduler.instigation import InstigatorStatus, InstigatorType, ScheduleInstigatorData
from postgres import postgres_server
from test_pipeline_kill import _fingerprint
from webserver import REPO, Webserver, free_port, process_group

from nexus_memory.core.config import Settings, load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.query_encoder import PARITY_MIN_COSINE
from nexus_memory.events.ledger import RawRecord, ingest
from nexus_memory.events.partitions import Calendar, ledger_partitions
from nexus_memory.pipeline.layers import LAYERS, pending_partitions
from nexus_memory_assets.partitions import register_partitions

WAIT_S = 420  # each run is a new process that loads the code location and the model, on two busy cores
FAIL_WRITER = """
import os
flag, event = os.environ.get("NEXUS_TEST_FAIL_FLAG"), os.environ.get("NEXUS_TEST_FAIL_EVENT")
if flag and event:
    from nexus_memory.writer.offline_writer import OfflineWriter
    original = OfflineWriter.write
    def write(self, tools, episode):
        if os.path.exists(flag) and episode.events[0].id == event:
            raise RuntimeError("the model server went away")
        return original(self, tools, episode)
    OfflineWriter.write = write
"""

# The reference: the first days with the episode failing (`pipeline` exits 1 and says so), the sixth day
# ingested (still failing), then the failed episode alone once the writer works.
REFERENCE = """
set -u
nexus=$0
"$nexus" pipeline; test $? -eq 1 || exit 11
"$nexus" ingest day6.jsonl --format jsonl || exit 12
"$nexus" pipeline; test $? -eq 1 || exit 13
rm reference-fails
"$nexus" pipeline --only-failed || exit 14
"""
SENSOR_ID = "query Sensor($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { ... on Sensor { id } } }"
STOP_SENSOR = "mutation Stop($id: String!) { stopSensor(id: $id) { __typename } }"
START_SENSOR = "mutation Start($s: SensorSelector!) { startSensor(sensorSelector: $s) { __typename } }"
SCHEDULE_ID = (
    "query Schedule($s: ScheduleSelector!) { scheduleOrError(scheduleSelector: $s) { ... on Schedule { id } } }"
)
STOP_SCHEDULE = "mutation Stop($id: String!) { stopRunningSchedule(id: $id) { __typename } }"
LAUNCH_BACKFILL = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""
BACKFILL = """
query Status($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill { status } } }"""
LAUNCH_RUN = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


# Two platforms that share no person, place or word a name could be read from: the offline writer learns names
# as it reads, so what one platform teaches it cannot depend on when the other platform's runs happened.
CHAT = {
    "priya": ("Priya Kapoor", ["Priya is moving to Berlin in May for the new office.", "The Hamburg flat was gone."]),
    "raj": ("Raj Patel", ["Raj said the payments SDK slipped to Thursday.", "Raj booked the Berlin flat."]),
}
MAIL = {
    "dana@northwind.example": ("Dana Whitfield", ["Dana booked the offsite in Lisbon because Porto was full."]),
    "marcus@northwind.example": ("Marcus Lee", ["Marcus moved the Atlas launch to April because the vendor slipped."]),
}


def _day(day: int) -> list[dict]:
    """A day of chat (a thread per person) and mail (one thread a day): two platforms, six events."""
    records = []
    for i, (sender, (name, texts)) in enumerate(CHAT.items()):
        for j, text in enumerate(texts):
            as_of = f"2025-03-{day:02d}T{10 + i}:{j:02d}:00Z"
            records.append(
                {
                    "id": f"c{day}{i}{j}",
                    "platform": "chat",
                    "sender_id": sender,
                    "sender_name": name,
                    "thread_id": f"chat-{sender}",
                    "content": f"{text} (day {day})",
                    "as_of": as_of,
                }
            )
    for i, (sender, (name, [text])) in enumerate(MAIL.items()):
        as_of = f"2025-03-{day:02d}T15:{i:02d}:00Z"
        records.append(
            {
                "id": f"m{day}{i}",
                "platform": "mail",
                "sender_id": sender,
                "sender_name": name,
                "thread_id": f"mail-{day}",
                "content": f"{text} (day {day})",
                "as_of": as_of,
            }
        )
    return records


FIRST_DAYS = [*_day(3), *_day(4), *_day(5)]  # the backfill's history
DAY_SIX = _day(6)  # dropped in the inbox for the sensor
FAILING_EVENT = "mail:m40"  # the first event of mail's day-4 episode: the writer fails it until the rerun


def _ingest(settings: Settings, records: list[dict]) -> int:
    """Ingest the records; returns the events in the ledger."""
    with Stores(settings) as stores:
        ingest(stores, [RawRecord("postgres-test", i, r, json.dumps(r)) for i, r in enumerate(records, 1)])
        return stores.counts()["events"]


def _fact_index_rows(settings: Settings) -> int:
    with Stores(settings) as stores:
        return stores.conn.execute("SELECT count(*) FROM vec_embeddings WHERE target_type = 'fact'").fetchone()[0]


def _instance_home(home: Path, storage: dict | None = None) -> Path:
    """dagster_home/dagster.yaml (instance class, run queue, run monitoring), with `storage` when given."""
    home.mkdir(parents=True)
    config = yaml.safe_load((REPO / "dagster_home" / "dagster.yaml").read_text())
    if storage:
        config["storage"] = storage
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    return home


def _ok(answer: dict, field: str) -> dict:
    assert "errors" not in answer, answer
    return answer["data"][field]


def _last_three_am() -> float:
    now = datetime.now(UTC)
    today = now.replace(hour=3, minute=0, second=0, microsecond=0)
    return (today if today <= now else today - timedelta(days=1)).timestamp()


@pytest.mark.slow
def test_the_instance_on_postgres_runs_backfill_schedule_sensor_and_rerun(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path / "data", inbox_dir=tmp_path / "inbox")
    events = _ingest(settings, FIRST_DAYS) + len(DAY_SIX)
    (tmp_path / "inject").mkdir()
    (tmp_path / "inject" / "sitecustomize.py").write_text(FAIL_WRITER)
    flag = tmp_path / "writer-fails"
    flag.touch()
    # The same history on the SQLite instance, as a user runs it (`nexus-memory pipeline`), beside the daemon's.
    reference = load_settings(data_dir=tmp_path / "reference", inbox_dir=tmp_path / "reference-inbox")
    _ingest(reference, FIRST_DAYS)
    (tmp_path / "day6.jsonl").write_text("".join(json.dumps(r) + "\n" for r in DAY_SIX))
    (tmp_path / "reference-fails").touch()
    reference_env = {
        **os.environ,
        "DAGSTER_HOME": str(_instance_home(tmp_path / "sqlite_home")),
        "NEXUS_DATA_DIR": str(reference.data_dir),
        "NEXUS_INBOX_DIR": str(reference.inbox_dir),
        "PYTHONPATH": str(tmp_path / "inject"),
        "NEXUS_TEST_FAIL_FLAG": str(tmp_path / "reference-fails"),
        "NEXUS_TEST_FAIL_EVENT": FAILING_EVENT,
    }
    nexus = str(Path(sys.executable).parent / "nexus-memory")
    with (
        background(
            ["bash", "-c", REFERENCE, nexus], reference_env, tmp_path / "reference.log", tmp_path
        ) as reference_run,
        postgres_server() as postgres,
    ):
        home = _instance_home(tmp_path / "dagster_home", postgres.storage(postgres.create_database("dagster")))
        env = {
            **os.environ,
            "DAGSTER_HOME": str(home),
            "NEXUS_DATA_DIR": str(settings.data_dir),
            "NEXUS_INBOX_DIR": str(settings.inbox_dir),
            "PYTHONPATH": str(tmp_path / "inject"),
            "NEXUS_TEST_FAIL_FLAG": str(flag),
            "NEXUS_TEST_FAIL_EVENT": FAILING_EVENT,
        }
        instance = dg.DagsterInstance.from_config(str(home))
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        with Stores(settings) as stores:  # the days and platforms are partitions, as the sensor registers them
            register_partitions(instance, ledger_partitions(stores), Calendar.from_settings(settings))
        server = Webserver(free_port(), home=home, data_dir=settings.data_dir)
        command = [str(Path(sys.executable).parent / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(server.port)]
        log = tmp_path / "daemon.log"
        with process_group([*command, "-w", str(REPO / "workspace.yaml")], env, tmp_path / "webserver.log", server):
            # Before the daemon starts: every sensor stopped (each step below starts what it needs), and the
            # nightly consolidation stopped until its tick is due.
            for sensor in (
                "new_events_sensor",
                "new_session_sensor",
                "consolidate_after_embeddings",
                "mental_models_sensor",
            ):
                found = _ok(server.graphql(SENSOR_ID, {"s": {**SELECTOR, "sensorName": sensor}}), "sensorOrError")
                _ok(server.graphql(STOP_SENSOR, {"id": found["id"]}), "stopSensor")
            schedule = {**SELECTOR, "scheduleName": "nightly_consolidation"}
            found = _ok(server.graphql(SCHEDULE_ID, {"s": schedule}), "scheduleOrError")
            _ok(server.graphql(STOP_SCHEDULE, {"id": found["id"]}), "stopRunningSchedule")

            with dagster_daemon(REPO / "workspace.yaml", env, log):
                # 1. A backfill of a range of days of two platforms, from the UI's mutation; one episode fails.
                params = {
                    "partitionsByAssets": [
                        {
                            "assetKey": {"path": [layer]},
                            "partitions": {"range": {"start": "2025-03-03|chat", "end": "2025-03-05|mail"}},
                        }
                        for layer in LAYERS
                    ],
                    "title": "chat and mail, 3 to 5 March",
                }
                launched = _ok(server.graphql(LAUNCH_BACKFILL, {"params": params}, 120), "launchPartitionBackfill")
                assert launched["__typename"] == "LaunchBackfillSuccess", launched
                backfill_id = launched["backfillId"]

                def backfill_done(_runs: list[dg.DagsterRun]) -> bool:
                    answer = server.graphql(BACKFILL, {"id": backfill_id}, 60)["data"]["partitionBackfillOrError"]
                    return answer["status"] not in ("REQUESTED", "CANCELING", "FAILING")

                wait_until(instance, backfill_done, WAIT_S, log)
                with Stores(settings) as stores:
                    assert pending_partitions(stores) == [("2025-03-04", "mail")]  # the failed episode's day

                # 2. A tick of the nightly schedule (running again, as if started just before the last 03:00),
                # and 3. the sensor taking an inbox file: an ingest run, then pipeline runs for its new days.
                [state] = [
                    s
                    for s in instance.all_instigator_state(instigator_type=InstigatorType.SCHEDULE)
                    if s.instigator_name == "nightly_consolidation"
                ]
                data = ScheduleInstigatorData(state.instigator_data.cron_schedule, _last_three_am() - 60)
                instance.update_instigator_state(state.with_status(InstigatorStatus.RUNNING).with_data(data))
                inbox = Path(settings.inbox_dir)
                inbox.mkdir(parents=True, exist_ok=True)
                (inbox / "day6.jsonl").write_text("".join(json.dumps(r) + "\n" for r in DAY_SIX))
                _ok(server.graphql(START_SENSOR, {"s": {**SELECTOR, "sensorName": "new_events_sensor"}}), "startSensor")

                def sensor_done(runs: list[dg.DagsterRun]) -> bool:
                    with Stores(settings) as stores:
                        return (
                            any(r.tags.get("dagster/schedule_name") for r in runs)
                            and any(r.job_name == "ingest_inbox_file" for r in runs)
                            and stores.counts()["events"] == events
                            and pending_partitions(stores) == [("2025-03-04", "mail")]
                        )

                wait_until(instance, sensor_done, WAIT_S, log)

                # 4. The failed episode, rerun once the writer works again.
                flag.unlink()
                tags = [{"key": k, "value": "2025-03-04|mail"} for k in (RANGE_START, RANGE_END)]
                rerun = {
                    "selector": {**SELECTOR, "jobName": "rerun_failed_episodes"},
                    "executionMetadata": {"tags": tags},
                }
                launched = _ok(server.graphql(LAUNCH_RUN, {"params": rerun}, 120), "launchRun")
                assert launched["__typename"] == "LaunchRunSuccess", launched
                rerun_id = launched["run"]["runId"]
                runs = wait_until(instance, lambda runs: any(r.run_id == rerun_id for r in runs), WAIT_S, log)

        by_origin = {
            "backfill": [r for r in runs if r.tags.get("dagster/backfill") == backfill_id],
            "schedule": [r for r in runs if r.tags.get("dagster/schedule_name") == "nightly_consolidation"],
            "sensor": [r for r in runs if r.tags.get("dagster/sensor_name") == "new_events_sensor"],
            "rerun": [r for r in runs if r.run_id == rerun_id],
        }
        assert all(by_origin.values()), {k: len(v) for k, v in by_origin.items()}
        assert {r.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}, [(r.job_name, r.status) for r in runs]
        assert all(r.tags.get("nexus/tenant") for r in runs)  # every run the project launched carries its tenant
        # What the instance recorded lives in Postgres: the materialised partitions of both platforms' days.
        done = instance.get_materialized_partitions(dg.AssetKey("embeddings"))
        assert {f"2025-03-0{d}|{p}" for d in (3, 4, 5, 6) for p in ("chat", "mail")} <= done
        # The reference ran beside the daemon; it is done by now, or given the time a scenario has.
        assert reference_run.wait(timeout=WAIT_S) == 0, (tmp_path / "reference.log").read_text()[-4000:]
        instance.dispose()

    with Stores(settings) as stores:
        assert pending_partitions(stores) == []
        assert stores.counts()["observations"] > 0  # the schedule's consolidation ran

    with dg.DagsterInstance.from_config(reference_env["DAGSTER_HOME"]) as sqlite:
        assert type(sqlite.run_storage).__name__ == "SqliteRunStorage" and sqlite.get_runs()
    got, want = _fingerprint(settings), _fingerprint(reference)
    got_vectors, want_vectors = got.pop("_vectors"), want.pop("_vectors")
    # The search index holds observations' vectors too, and a `nexus-memory pipeline` consolidates each time:
    # its fact rows are what must match.
    got.pop("index_rows"), want.pop("index_rows")
    assert _fact_index_rows(settings) == _fact_index_rows(reference) == len(want["vector_keys"])
    assert got == want
    for key, vector in want_vectors.items():  # batches differ between runs: the same vectors up to rounding
        assert float(np.asarray(got_vectors[key]) @ vector) >= PARITY_MIN_COSINE, key
