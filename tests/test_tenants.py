"""Two tenants on one Dagster instance in PostgreSQL: the run queue lets one run per tenant write at a time.

Each tenant is a data directory of its own served by a code location of its own (a gRPC code server started with
that tenant's NEXUS_DATA_DIR and NEXUS_TENANT, as deploy/docker/compose.yaml starts them), and its runs are launched
by its own new-events and consolidation sensors through one `dagster-daemon`. The queue is the one of
deploy/docker/dagster.yaml (`nexus/tenant` and `dagster/code_location`, one run each). Both tenants' runs finish,
each tenant's stores hold its own events only, and no two runs of one tenant ever ran at once.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import dagster as dg
import pytest
import yaml
from daemon import code_server, dagster_daemon, wait_until
from postgres import postgres_server
from webserver import REPO, free_port

from nexus_memory.core.config import Settings, load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.events.ledger import RawRecord, ingest
from nexus_memory.pipeline.layers import pending_partitions

TENANTS = ("acme", "globex")
WAIT_S = 480  # every run is a new process loading the code location and the model, on two busy cores


def _history(tenant: str) -> list[dict]:
    """Two days of chat and mail that only this tenant has: its name is in every id and every message."""
    records = []
    for day in (3, 4):
        for platform, sender, text in (
            ("chat", "priya", "Priya is moving to Berlin in May for the new office."),
            ("chat", "raj", "Raj said the payments SDK slipped to Thursday."),
            ("mail", "dana@example.com", "Dana booked the offsite in Lisbon because Porto was full."),
        ):
            records.append(
                {
                    "id": f"{tenant}-{platform}-{day}-{sender}",
                    "platform": platform,
                    "sender_id": sender,
                    "thread_id": f"{platform}-{sender}",
                    "content": f"{text} ({tenant}, day {day})",
                    "as_of": f"2025-03-0{day}T1{len(records) % 10}:00:00Z",
                }
            )
    return records


def test_the_tenant_is_nexus_tenant_else_the_data_directorys_own_id(settings: Settings) -> None:
    from dataclasses import replace

    from nexus_memory.core.tenant import TENANT_ID_FILE, tenant_of

    own = tenant_of(settings)
    assert own.startswith("data-") and len(own) == len("data-") + 12
    assert tenant_of(settings) == own == (settings.data_dir / TENANT_ID_FILE).read_text().strip()  # made once, kept
    other = replace(settings, data_dir=settings.data_dir.parent / "other")
    assert tenant_of(other) != own
    assert tenant_of(replace(settings, tenant="acme")) == "acme"
    with pytest.raises(ValueError, match="NEXUS_TENANT"):
        tenant_of(replace(settings, tenant="acme corp"))


def test_every_job_schedule_and_sensor_launches_runs_tagged_with_the_tenant(settings: Settings) -> None:
    """Job run tags (the launchpad, schedules, sensors, job backfills, `nexus-memory pipeline`'s in-process runs),
    Dagster's own asset job included (runs of selected assets; queued with it: tests/test_tenant_queue.py)."""
    from dataclasses import replace

    from nexus_memory_assets.definitions import build_definitions

    built = build_definitions(replace(settings, tenant="acme"))
    repository = built.get_repository_def()
    jobs = repository.get_all_jobs()
    assert len(jobs) > 5 and all(job.run_tags.get("nexus/tenant") == "acme" for job in jobs)
    assert all(schedule.job.run_tags.get("nexus/tenant") == "acme" for schedule in repository.schedule_defs)
    assert all(job.run_tags.get("nexus/tenant") == "acme" for s in repository.sensor_defs for job in s.jobs)

    records = _history("acme")[:3]
    with Stores(settings) as stores:
        ingest(stores, [RawRecord("acme", i, r, json.dumps(r)) for i, r in enumerate(records, 1)])
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("day", ["2025-03-03"])
    instance.add_dynamic_partitions("platform", ["chat"])
    inbox = Path(settings.inbox_dir)
    inbox.mkdir(parents=True)
    (inbox / "more.jsonl").write_text(json.dumps(_history("acme")[3]) + "\n")
    config = {"ops": {"import_file": {"config": {"path": str(inbox / "more.jsonl")}}}}
    job_run = built.resolve_job_def("ingest_inbox_file").execute_in_process(run_config=config, instance=instance)
    asset_run = built.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, partition_key="2025-03-03|chat", asset_selection=[dg.AssetKey("events")]
    )
    assert job_run.success and asset_run.success
    for result in (job_run, asset_run):
        assert instance.get_run_by_id(result.run_id).tags["nexus/tenant"] == "acme"


def _events(settings: Settings) -> set[str]:
    with Stores(settings) as stores:
        return {r[0] for r in stores.conn.execute("SELECT id FROM events")}


@pytest.mark.slow
def test_two_tenants_share_one_instance_one_run_per_tenant_at_a_time(tmp_path: Path) -> None:
    tenants: dict[str, Settings] = {}
    for tenant in TENANTS:
        settings = load_settings(data_dir=tmp_path / tenant / "data", inbox_dir=tmp_path / tenant / "inbox")
        records = _history(tenant)
        with Stores(settings) as stores:
            summary = ingest(stores, [RawRecord(tenant, i, r, json.dumps(r)) for i, r in enumerate(records, 1)])
        assert summary.ingested == len(records), summary.rejects
        tenants[tenant] = settings

    deploy = yaml.safe_load((REPO / "deploy" / "docker" / "dagster.yaml").read_text())
    ports = {tenant: free_port() for tenant in TENANTS}
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(
        yaml.safe_dump(
            {
                "load_from": [
                    {"grpc_server": {"host": "127.0.0.1", "port": port, "location_name": tenant}}
                    for tenant, port in ports.items()
                ]
            }
        )
    )
    with postgres_server() as postgres:
        home = tmp_path / "dagster_home"
        home.mkdir()
        config = {
            "telemetry": {"enabled": False},
            "storage": postgres.storage(postgres.create_database("dagster")),
            "concurrency": deploy["concurrency"],  # the queue of the deployment example, as it is
            "instance_class": deploy["instance_class"],
        }
        (home / "dagster.yaml").write_text(yaml.safe_dump(config))
        base = {k: v for k, v in os.environ.items() if not k.startswith("NEXUS_")}
        base |= {"DAGSTER_HOME": str(home), "NEXUS_EMERGENT_MODELS": "0"}  # no mental models: fewer runs
        instance = dg.DagsterInstance.from_config(str(home))
        with (
            code_server(
                "acme",
                ports["acme"],
                {**base, "NEXUS_TENANT": "acme", "NEXUS_DATA_DIR": str(tenants["acme"].data_dir)},
                tmp_path / "acme.log",
            ),
            code_server(
                "globex",
                ports["globex"],
                {**base, "NEXUS_TENANT": "globex", "NEXUS_DATA_DIR": str(tenants["globex"].data_dir)},
                tmp_path / "globex.log",
            ),
            dagster_daemon(workspace, base, tmp_path / "daemon.log"),
        ):

            def both_done(runs: list[dg.DagsterRun]) -> bool:
                consolidated = {r.tags.get("nexus/tenant") for r in runs if r.job_name == "consolidation"}
                if consolidated != set(TENANTS):
                    return False
                for settings in tenants.values():
                    with Stores(settings) as stores:
                        if pending_partitions(stores):
                            return False
                return True

            wait_until(instance, both_done, WAIT_S, tmp_path / "daemon.log")
        records = {r.dagster_run.run_id: r for r in instance.get_run_records()}
        instance.dispose()

    runs = [record.dagster_run for record in records.values()]
    assert {run.status for run in runs} == {dg.DagsterRunStatus.SUCCESS}, [(r.job_name, r.status) for r in runs]
    # Every run carries its tenant, the one its code location serves.
    assert {(run.tags.get("nexus/tenant"), run.tags.get("dagster/code_location")) for run in runs} == {
        (tenant, tenant) for tenant in TENANTS
    }
    spans: dict[str, list[tuple[float, float, float]]] = {tenant: [] for tenant in TENANTS}
    for record in records.values():
        created = record.create_timestamp.timestamp()
        assert record.start_time and record.end_time
        spans[record.dagster_run.tags["nexus/tenant"]].append((record.start_time, record.end_time, created))
    for tenant, tenant_spans in spans.items():
        ordered = sorted(tenant_spans)
        jobs = [r.job_name for r in runs if r.tags["nexus/tenant"] == tenant]
        assert jobs.count("memory_pipeline") == 2, jobs  # a run per platform, queued together by the sensor
        # The queue never ran two runs of one tenant at once ...
        for (_, earlier_end, _), (later_start, _, _) in itertools.pairwise(ordered):
            assert later_start >= earlier_end, (tenant, ordered)
        # ... and it had to hold one back: a run queued while another of its tenant was still running.
        assert any(created < earlier_end for (_, earlier_end, _), (_, _, created) in itertools.pairwise(ordered))
    # Tenants side by side: some run of one tenant ran while a run of the other did.
    assert any(
        start < other_end and other_start < end
        for start, end, _ in spans["acme"]
        for other_start, other_end, _ in spans["globex"]
    )
    # Each tenant's stores hold its own events, all of them processed, and nothing of the other tenant's.
    for tenant, settings in tenants.items():
        assert _events(settings) == {f"{r['platform']}:{r['id']}" for r in _history(tenant)}
        with Stores(settings) as stores:
            sources = {r[0] for r in stores.conn.execute("SELECT source_event_id FROM facts")}
            assert sources and all(tenant in source for source in sources)
            assert pending_partitions(stores) == []
