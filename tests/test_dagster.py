"""The Dagster layer: definitions, partitions at the edges of time, batched runs, the sensor, the checks."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.step import EmbedStats
from nexus_memory.events.ledger import RawRecord, ingest
from nexus_memory.events.partitions import Calendar, ledger_partitions, utc_today
from nexus_memory.pipeline.layers import pending_events, pending_partitions
from nexus_memory_assets.definitions import build_definitions, defs
from nexus_memory_assets.partitions import encode_platform, pipeline_run_tags, register_partitions
from nexus_memory_assets.pipeline import run_pipeline
from resources import EmbedderResource, StoresResource, WriterResource

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


def _event(
    event_id: str, platform: str, as_of: str, content: str = "We moved the launch to April because the vendor slipped."
) -> dict:
    return {"id": event_id, "platform": platform, "sender_id": "anna@example.com", "content": content, "as_of": as_of}


def _ingest(settings: Settings, records: list[dict]) -> None:
    with Stores(settings) as stores:
        summary = ingest(stores, [RawRecord("test", i, r, json.dumps(r)) for i, r in enumerate(records, 1)])
    assert summary.ingested == len(records), summary.rejects


def _write_inbox(settings: Settings, name: str, records: list[dict]) -> Path:
    inbox = Path(settings.inbox_dir)
    inbox.mkdir(parents=True, exist_ok=True)
    path = inbox / name
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def _run_job(
    settings: Settings, instance: dg.DagsterInstance, job: str, platform: str, first: str, last: str | None = None
) -> dg.ExecuteInProcessResult:
    """One range run of a job, as the sensor or `nexus-memory pipeline` launches it (the ledger's days and
    platforms registered first, as they do)."""
    _register(settings, instance)
    return (
        build_definitions(settings)
        .resolve_job_def(job)
        .execute_in_process(
            instance=instance, raise_on_error=False, tags=pipeline_run_tags(platform, first, last or first)
        )
    )


def _register(settings: Settings, instance: dg.DagsterInstance) -> list[str]:
    """Register the ledger's days and platforms as partitions, as the sensor and the pipeline do."""
    with Stores(settings) as stores:
        return register_partitions(instance, ledger_partitions(stores), Calendar.from_settings(settings))


def _checks(result: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def _sensor(settings: Settings, instance: dg.DagsterInstance, cursor: str | None = None) -> dg.SensorResult:
    sensor = defs.resolve_sensor_def("new_events_sensor")
    resources = {"stores": StoresResource(data_dir=str(settings.data_dir), inbox_dir=str(settings.inbox_dir))}
    return sensor(dg.build_sensor_context(instance=instance, resources=resources, cursor=cursor))


# --- definitions --------------------------------------------------------------------------------


def test_definitions_load_with_lineage_batching_and_checks() -> None:
    repo = defs.get_repository_def()
    graph = repo.asset_graph
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {"events", "episodes", "facts", "embeddings"} <= keys
    assert graph.get(dg.AssetKey("episodes")).parent_keys == {dg.AssetKey("events")}
    assert graph.get(dg.AssetKey("embeddings")).parent_keys == {dg.AssetKey("facts")}
    for key in ("events", "episodes", "facts", "embeddings"):  # a range of days is one run
        assert graph.get(dg.AssetKey(key)).backfill_policy == dg.BackfillPolicy.single_run()
    assert defs.resolve_sensor_def("new_events_sensor")
    for job in ("memory_pipeline", "rerun_failed_episodes"):  # partitioned like the assets they select
        assert isinstance(defs.resolve_job_def(job).partitions_def, dg.MultiPartitionsDefinition)
    checks = {k.name: k for k in repo.asset_graph.asset_check_keys}
    assert set(checks) == {
        "episodes_cover_events",
        "episodes_do_not_overlap",
        "episode_links_intact",
        "facts_have_provenance",
        "facts_in_keyword_index",
        "fact_links_intact",
        "merges_have_candidates",
        "no_failed_episodes",
        "facts_embedded",
        "vector_index_matches_embeddings",
        "fact_vectors_current",
        "observations_not_duplicated",  # Layers 5 and 6 (nexus_memory_assets/consolidation/)
        "observation_facts_exist",
    }
    blocking = {k.name for k, d in repo.asset_checks_defs_by_key.items() if d.get_spec_for_check_key(k).blocking}
    assert blocking == {
        "episodes_do_not_overlap",
        "episode_links_intact",
        "facts_have_provenance",
        "merges_have_candidates",
    }


def test_day_partitions_are_the_days_that_hold_events(settings: Settings) -> None:
    """Not every day since NEXUS_PARTITION_START: the days with events, added oldest first as they arrive."""
    from dataclasses import replace

    partitions = defs.resolve_job_def("memory_pipeline").partitions_def
    assert isinstance(partitions, dg.MultiPartitionsDefinition)
    for dimension in ("day", "platform"):
        assert isinstance(partitions.get_partitions_def_for_dimension(dimension), dg.DynamicPartitionsDefinition)
    _ingest(settings, [_event("a", "sms", "2025-03-05T10:00:00Z"), _event("b", "mail", "2025-03-03T10:00:00Z")])
    instance = dg.DagsterInstance.ephemeral()
    assert _register(settings, instance) == ["2025-03-03", "2025-03-05"]
    # A later, older day is added after the known ones; a pre-start day is processed by the start day.
    _ingest(settings, [_event("c", "sms", "2025-03-01T10:00:00Z"), _event("d", "sms", "2015-05-01T10:00:00Z")])
    assert _register(settings, instance) == ["2025-03-03", "2025-03-05", "2019-01-01", "2025-03-01"]
    assert sorted(instance.get_dynamic_partitions("platform")) == ["mail", "sms"]
    keys = partitions.get_partition_keys(dynamic_partitions_store=instance)
    assert len(keys) == 8 and "2025-03-04|sms" not in keys  # a day without events is no partition
    with pytest.raises(ValueError, match="after today"):
        build_definitions(replace(settings, partition_start="2999-01-01"))


def test_platform_keys_are_a_reversible_safe_encoding() -> None:
    from nexus_memory_assets.partitions import decode_platform

    for platform in ["gmail", "a|b", "50%", "...", "x..y", "tab\tnew\nline", "a,b[c]", "мессенджер", "e.mail"]:
        key = encode_platform(platform)
        assert decode_platform(key) == platform
        assert "|" not in key and "..." not in key and key.isprintable()
    assert encode_platform("gmail") == "gmail" and encode_platform("e.mail") == "e.mail"


# --- every accepted event is processed ------------------------------------------------------------

TODAY_NOON = datetime.now(tz=UTC).replace(hour=12, minute=0, second=0, microsecond=0)
EDGE_CASES = {
    "today": _event("t1", "sms", TODAY_NOON.isoformat()),
    "future": _event("f1", "sms", "2099-06-01T10:00:00Z"),
    "pipe_in_platform": _event("p1", "chat|work", "2025-03-03T10:00:00Z"),
    "before_start": _event("b1", "email", "2015-05-01T10:00:00Z"),
}


@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_pipeline_processes_events_at_the_edges(settings: Settings, case: str) -> None:
    """Today's event, a 2099 event, a platform with '|' and a pre-NEXUS_PARTITION_START event all become facts."""
    record = EDGE_CASES[case]
    _ingest(settings, [record, _event("n1", "sms", "2025-03-05T10:00:00Z", "We moved the launch to April.")])
    outcome = run_pipeline(settings, instance=dg.DagsterInstance.ephemeral())
    assert outcome.ok, outcome.as_dict()
    event_id = f"{record['platform']}:{record['id']}"
    with Stores(settings) as stores:
        assert pending_events(stores) == {}
        processed = stores.conn.execute("SELECT 1 FROM memory_processing_log WHERE event_id = ?", (event_id,))
        assert processed.fetchone()
        facts = stores.conn.execute("SELECT count(*) FROM facts WHERE source_event_id = ?", (event_id,))
        assert facts.fetchone()[0] >= 1
        # The stored partition key names the event's own day: it does not move when "today" does.
        day = stores.conn.execute("SELECT day FROM events WHERE id = ?", (event_id,)).fetchone()[0]
        keys = [
            r[0]
            for r in stores.conn.execute("SELECT partition_key FROM episodes WHERE platform = ?", (record["platform"],))
        ]
        assert f"{day}|{record['platform']}" in keys
    # A run per platform over a range of days (two for sms when today is far from 2025-03-05).
    assert {r.platform for r in outcome.runs} == {record["platform"], "sms"}


def test_calendar_sends_days_before_the_start_to_the_start_partition(settings: Settings) -> None:
    from nexus_memory.events.partitions import days_of_partitions

    dates = Calendar("2019-01-01")
    assert dates.partition_of("2015-05-01") == "2019-01-01"
    assert dates.partition_of("2099-06-01") == "2099-06-01"  # a day partition of its own, however far ahead
    assert dates.partition_of("2020-02-02") == "2020-02-02"
    _ingest(settings, [_event(f"e{y}", "sms", f"{y}-05-01T10:00:00Z") for y in (2015, 2019, 2020, 2099)])
    with Stores(settings) as stores:
        assert days_of_partitions(stores, "sms", ["2019-01-01"], dates) == ["2015-05-01"]
        assert days_of_partitions(stores, "sms", ["2019-05-01", "2099-05-01"], dates) == ["2019-05-01", "2099-05-01"]
        assert days_of_partitions(stores, "sms", ["2019-05-02"], dates) == []


def test_pending_days_become_one_range_per_platform_cut_at_long_gaps() -> None:
    from nexus_memory.events.partitions import platform_batches

    dates = Calendar("2019-01-01")
    pairs = [("2020-01-01", "sms"), ("2020-01-20", "sms"), ("2020-03-15", "sms"), ("2015-01-01", "a|b")]
    # The day partitions in the instance's order: days that hold any platform's events, one a day here.
    mail_days = [f"2020-{m:02d}-{d:02d}" for m in (1, 2, 3) for d in range(1, 29)]
    order = ["2019-01-01", *mail_days]
    # Days with only other platforms' events between two of a platform's days: empty in its run.
    assert platform_batches(pairs, dates, order) == [
        ("a|b", "2019-01-01", "2019-01-01"),
        ("sms", "2020-01-01", "2020-01-20"),
        ("sms", "2020-03-15", "2020-03-15"),
    ]
    assert platform_batches(pairs, dates, order, max_empty_days=100)[1:] == [("sms", "2020-01-01", "2020-03-15")]
    # With nothing in between, months apart are one range: no empty partition is paid for.
    sparse = ["2019-01-01", "2020-01-01", "2020-01-20", "2020-03-15"]
    assert platform_batches(pairs, dates, sparse)[1:] == [("sms", "2020-01-01", "2020-03-15")]
    # The instance's order, not the calendar's: an older day added last closes the list.
    assert platform_batches([("2020-01-01", "sms"), ("2019-06-01", "sms")], dates, ["2020-01-01", "2019-06-01"]) == [
        ("sms", "2020-01-01", "2019-06-01")
    ]


# --- runs over partitions ---------------------------------------------------------------------------


def test_one_range_run_builds_every_day_of_a_platform(settings: Settings) -> None:
    _ingest(
        settings,
        [
            _event(f"e{d}", "sms", f"2025-03-{d:02d}T10:00:00Z", f"Day {d}: Priya moved the launch to April.")
            for d in (1, 2, 5)
        ],
    )
    instance = dg.DagsterInstance.ephemeral()
    result = _run_job(settings, instance, "memory_pipeline", "sms", "2025-03-01", "2025-03-05")
    assert result.success
    materialised = {
        (m.materialization.asset_key.to_user_string(), m.materialization.partition)
        for m in result.get_asset_materialization_events()
    }
    # Every day of the range is materialised, and the days without events are no partitions to run.
    assert {key for layer, key in materialised if layer == "facts"} == {
        "2025-03-01|sms",
        "2025-03-02|sms",
        "2025-03-05|sms",
    }
    assert len(instance.get_runs()) == 1
    with Stores(settings) as stores:
        assert pending_partitions(stores) == []
        assert stores.counts()["episodes"] == 3


def test_materialise_events_and_episodes_for_one_partition(settings: Settings) -> None:
    _ingest(settings, EVENTS)
    instance = dg.DagsterInstance.ephemeral()
    _register(settings, instance)
    built = build_definitions(settings)
    job = built.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(
        instance=instance,
        partition_key="2025-03-03|imessage",
        asset_selection=[dg.AssetKey("events"), dg.AssetKey("episodes")],
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
def test_full_pipeline_writes_facts_and_vectors(settings: Settings) -> None:
    _ingest(settings, EVENTS)
    outcome = run_pipeline(settings, instance=dg.DagsterInstance.ephemeral())
    assert outcome.ok and len(outcome.runs) == 2
    with Stores(settings) as stores:
        counts = stores.counts()
        fact_vectors = stores.conn.execute("SELECT count(*) FROM embeddings WHERE target_type = 'fact'").fetchone()[0]
        assert counts["facts"] >= 2 and fact_vectors == counts["facts"]
        assert counts["causal_links"] >= 1
        # Contact info said in conversation is an entity with a merge proposal, never a routable contact.
        assert stores.conn.execute("SELECT count(*) FROM contacts WHERE handle LIKE 'priya.k%'").fetchone()[0] == 0
        assert counts["merge_candidates"] >= 1
    assert WriterResource().get_writer().name == "offline"
    # A second pipeline finds nothing to do.
    assert run_pipeline(settings, instance=dg.DagsterInstance.ephemeral()).runs == []


# --- the sensor ------------------------------------------------------------------------------------


def test_sensor_leaves_ingest_to_a_run_and_requests_one_run_per_platform(settings: Settings) -> None:
    today_event = _event("t1", "imessage", TODAY_NOON.isoformat(), "Lunch moved to Friday.")
    _write_inbox(settings, "batch1.jsonl", [*EVENTS, today_event])
    instance = dg.DagsterInstance.ephemeral()
    first = _sensor(settings, instance)
    # The tick ingests nothing itself: it asks for an ingest run.
    assert [r.job_name for r in first.run_requests] == ["ingest_inbox_file"]
    with Stores(settings) as stores:
        assert stores.counts()["events"] == 0
    ingest_run = (
        build_definitions(settings)
        .resolve_job_def("ingest_inbox_file")
        .execute_in_process(instance=instance, run_config=first.run_requests[0].run_config)
    )
    assert ingest_run.success
    assert not (Path(settings.inbox_dir) / "batch1.jsonl").exists()
    assert (Path(settings.inbox_dir) / "done" / "batch1.jsonl").exists()
    # The next tick sees the new ledger rows: their days and platforms become partitions, and a pipeline
    # run per platform covers its range of days (only days that hold events lie between 2025 and today).
    second = _sensor(settings, instance, first.cursor)
    start, end = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
    ranges = sorted((r.tags["nexus/platform"], r.tags[start], r.tags[end]) for r in second.run_requests)
    today = utc_today()
    assert ranges == [
        ("gmail", "2025-03-04|gmail", "2025-03-04|gmail"),
        ("imessage", "2025-03-03|imessage", f"{today}|imessage"),
    ]
    added = {r.partitions_def_name: list(r.partition_keys) for r in second.dynamic_partitions_requests}
    assert added == {"day": ["2025-03-03", "2025-03-04", today], "platform": ["gmail", "imessage"]}
    # The requested runs (partitions registered as the daemon does) process today's event too.
    for name, keys in added.items():
        instance.add_dynamic_partitions(name, keys)
    job = build_definitions(settings).resolve_job_def("memory_pipeline")
    for request in second.run_requests:
        if request.tags["nexus/platform"] == "imessage":
            assert job.execute_in_process(instance=instance, tags=request.tags).success
    with Stores(settings) as stores:
        assert "imessage" not in pending_events(stores)
    # A repeated tick with the same cursor sees nothing new.
    again = _sensor(settings, instance, second.cursor)
    assert again.run_requests == [] and again.skip_reason


def test_sensor_launches_nothing_when_nothing_is_pending(settings: Settings) -> None:
    """What opening `make ui` after `make demo` does: a fresh cursor, stores already processed."""
    _ingest(settings, EVENTS)
    assert run_pipeline(settings, instance=dg.DagsterInstance.ephemeral()).ok
    result = _sensor(settings, dg.DagsterInstance.ephemeral())
    assert result.run_requests == []
    assert json.loads(result.cursor)["rowid"] >= 3


def test_sensor_fails_a_killed_pipeline_run_and_resumes_its_range(settings: Settings) -> None:
    import subprocess

    from nexus_memory_assets.runs import WORKER_TAG, worker_tag

    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("platform", ["sms"])
    instance.add_dynamic_partitions("day", ["2025-03-01", "2025-03-09"])
    child = subprocess.Popen(["true"])
    child.wait()
    tags = pipeline_run_tags("sms", "2025-03-01", "2025-03-09")
    job = defs.resolve_job_def("memory_pipeline")
    killed = instance.create_run_for_job(
        job, tags={**tags, WORKER_TAG: worker_tag(child.pid)}, status=dg.DagsterRunStatus.STARTED
    )
    alive = instance.create_run_for_job(
        job, tags={**tags, WORKER_TAG: worker_tag()}, status=dg.DagsterRunStatus.STARTED
    )
    result = _sensor(settings, instance)
    assert instance.get_run_by_id(killed.run_id).status == dg.DagsterRunStatus.FAILURE
    assert instance.get_run_by_id(alive.run_id).status == dg.DagsterRunStatus.STARTED
    [resume] = result.run_requests
    assert resume.run_key == f"resume:{killed.run_id}" and resume.tags == tags


def test_a_bad_inbox_file_is_moved_aside_with_its_reason(settings: Settings) -> None:
    bad = _write_inbox(settings, "mystery.json", [{"not": "an export"}])
    good = _write_inbox(settings, "good.jsonl", EVENTS[:1])
    instance = dg.DagsterInstance.ephemeral()
    tick = _sensor(settings, instance)
    runs = {Path(r.run_config["ops"]["import_file"]["config"]["path"]).name: r for r in tick.run_requests}
    assert set(runs) == {"mystery.json", "good.jsonl"}
    job = build_definitions(settings).resolve_job_def("ingest_inbox_file")
    failed = job.execute_in_process(instance=instance, run_config=runs["mystery.json"].run_config, raise_on_error=False)
    assert not failed.success
    assert (
        "cannot tell the format" in failed.get_step_failure_events()[0].step_failure_data.user_failure_data.description
    )
    rejected = Path(settings.inbox_dir) / "rejected" / "mystery.json"
    assert rejected.exists() and not bad.exists()
    assert "cannot tell the format" in rejected.with_name("mystery.json.reason.txt").read_text()
    with Stores(settings) as stores:
        row = stores.conn.execute("SELECT source, line, reason FROM event_rejects").fetchone()
        assert row["source"] == str(bad) and row["line"] is None and "cannot tell the format" in row["reason"]
    # The sensor keeps going: the good file is imported, and the bad one is not asked for again.
    assert job.execute_in_process(instance=instance, run_config=runs["good.jsonl"].run_config).success
    assert not good.exists()
    later = _sensor(settings, instance, tick.cursor)
    assert {r.job_name for r in later.run_requests} == {"memory_pipeline"}


def test_a_file_imported_before_is_not_read_again(settings: Settings) -> None:
    from nexus_memory.events.inbox import import_inbox_file

    first = _write_inbox(settings, "a.jsonl", EVENTS)
    with Stores(settings) as stores:
        assert import_inbox_file(stores, first).status == "ingested"
        again = _write_inbox(settings, "renamed.jsonl", EVENTS)
        outcome = import_inbox_file(stores, again)
        assert outcome.status == "duplicate" and outcome.moved_to and outcome.moved_to.parent.name == "done"
        assert stores.counts()["events"] == 3


# --- asset checks -----------------------------------------------------------------------------------


def test_episodes_cover_events_looks_only_at_the_runs_partitions(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ingest(settings, [_event("a", "sms", "2025-03-03T10:00:00Z"), _event("b", "sms", "2025-03-09T10:00:00Z")])
    instance = dg.DagsterInstance.ephemeral()
    # Mid-backfill: the first day is done, the second not yet; the check on the first passes.
    done = _run_job(settings, instance, "memory_pipeline", "sms", "2025-03-03")
    assert _checks(done)["episodes_cover_events"].passed
    # An episodes layer that leaves events out fails it, with the count.
    import nexus_memory.pipeline.layers
    from nexus_memory.episodes.grouping import EpisodeBuildStats

    monkeypatch.setattr(nexus_memory.pipeline.layers, "build_episodes", lambda *_a, **_k: EpisodeBuildStats())
    broken = _run_job(settings, instance, "memory_pipeline", "sms", "2025-03-09")
    check = _checks(broken)["episodes_cover_events"]
    assert not check.passed and check.metadata["events_without_episode"].value == 1


def _one_partition_built(settings: Settings, passing_check: str) -> dg.DagsterInstance:
    """One event of 2025-03-03 on sms through every layer, with `passing_check` passing."""
    _ingest(settings, [_event("a", "sms", "2025-03-03T10:00:00Z")])
    instance = dg.DagsterInstance.ephemeral()
    assert _checks(_run_job(settings, instance, "memory_pipeline", "sms", "2025-03-03"))[passing_check].passed
    return instance


def test_facts_have_provenance_blocks_embedding(settings: Settings) -> None:
    instance = _one_partition_built(settings, "facts_have_provenance")
    with Stores(settings) as stores:
        stores.conn.execute("UPDATE facts SET source_event_id = 'no-such-event'")
        stores.conn.execute("DELETE FROM embeddings")
    result = _run_job(settings, instance, "memory_pipeline", "sms", "2025-03-03")
    check = _checks(result)["facts_have_provenance"]
    assert not check.passed and check.blocking and check.metadata["facts_without_source_event"].value >= 1
    # Blocking: embeddings did not run for the partition.
    assert not result.asset_materializations_for_node("embeddings")
    with Stores(settings) as stores:
        assert stores.counts()["embeddings"] == 0


def _failing_writer_for_event_b(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Make the offline writer fail on episodes starting with an event whose id ends in 'b'; returns the undo."""
    from nexus_memory.writer.offline_writer import OfflineWriter

    original = OfflineWriter.write

    def flaky(self: OfflineWriter, tools: Any, episode: Any) -> Any:
        if episode.events[0].id.endswith("b"):
            raise RuntimeError("the model server went away")
        return original(self, tools, episode)

    monkeypatch.setattr(OfflineWriter, "write", flaky)
    return lambda: monkeypatch.setattr(OfflineWriter, "write", original)


def test_no_failed_episodes_lists_failures_and_a_rerun_clears_them(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ingest(settings, [_event("a", "sms", "2025-03-03T10:00:00Z"), _event("b", "sms", "2025-03-04T10:00:00Z")])
    instance = dg.DagsterInstance.ephemeral()
    undo = _failing_writer_for_event_b(monkeypatch)
    result = _run_job(settings, instance, "memory_pipeline", "sms", "2025-03-03", "2025-03-04")
    assert result.success  # the good episode is kept and embedded; the failed one waits
    check = _checks(result)["no_failed_episodes"]
    assert not check.passed and check.metadata["failed_episodes"].value == 1
    assert "the model server went away" in check.metadata["failures"].value
    with Stores(settings) as stores:
        assert stores.counts()["embeddings"] >= 1
    undo()
    rerun = _run_job(settings, instance, "rerun_failed_episodes", "sms", "2025-03-03", "2025-03-04")
    assert _checks(rerun)["no_failed_episodes"].passed
    with Stores(settings) as stores:
        assert pending_partitions(stores) == []


def test_pipeline_command_says_which_events_are_left_and_why(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from nexus_memory.cli import main

    _ingest(settings, [_event("a", "sms", "2025-03-03T10:00:00Z"), _event("b", "sms", "2025-03-04T10:00:00Z")])
    monkeypatch.setenv("NEXUS_DATA_DIR", str(settings.data_dir))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # a throwaway instance
    undo = _failing_writer_for_event_b(monkeypatch)
    assert main(["pipeline"]) == 1
    out = capsys.readouterr().out
    assert "1 episodes failed" in out and "the model server went away" in out
    assert "events with work left after this pipeline: sms 1" in out
    assert main(["failed"]) == 0
    [failed] = json.loads(capsys.readouterr().out)
    assert (failed["day"], failed["platform"]) == ("2025-03-04", "sms") and "went away" in failed["error"]
    undo()
    assert main(["pipeline", "--only-failed"]) == 0
    assert main(["pipeline"]) == 0 and "nothing to do" in capsys.readouterr().out


def test_facts_embedded_counts_only_vectors_of_the_active_model(settings: Settings) -> None:
    instance = _one_partition_built(settings, "facts_embedded")
    with Stores(settings) as stores:
        # Vectors of a model the index does not serve do not count.
        stores.conn.execute("UPDATE embeddings SET model = 'some-older-model'")
        from nexus_memory.pipeline.invariants import active_model, facts_without_vector

        assert facts_without_vector(stores, "sms", ["2025-03-03"], active_model(stores)) >= 1
        assert facts_without_vector(stores, "sms", ["2025-03-03"], "some-older-model") == 0
        assert pending_partitions(stores) == [("2025-03-03", "sms")]
    # The check fails in a run where the embeddings step cannot fix it (the index serves another model).
    import nexus_memory.pipeline.layers

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nexus_memory.pipeline.layers, "embed_pending", lambda *_a, **_k: EmbedStats(0, 0.0, 0.0, {}))
        check = _checks(_run_job(settings, instance, "memory_pipeline", "sms", "2025-03-03"))["facts_embedded"]
    assert not check.passed and check.metadata["facts_without_vector"].value >= 1


def test_fact_vectors_current_check_warns_after_the_embedded_text_changed(settings: Settings) -> None:
    """What an operator sees when vectors predate a change of the embedded text: a warning naming the fix."""
    from nexus_memory.embeddings.model import get_embedder
    from nexus_memory.embeddings.step import embed_pending

    check = {c.node_def.name: c for c in defs.get_repository_def().asset_checks_defs_by_key.values()}
    fact_vectors_current = check["embeddings_fact_vectors_current"]
    with Stores(settings) as stores, stores.transaction():
        stores.conn.executemany(
            "INSERT INTO facts(id, text, as_of, ingested_at, created_at) VALUES (?, ?, 0, 0, 0)",
            [("f1", "Alice works at Acme"), ("f2", "Bob likes hiking")],
        )
    with Stores(settings) as stores:
        embed_pending(stores, get_embedder())
    resource = StoresResource(data_dir=str(settings.data_dir))
    context = dg.build_asset_check_context()
    current = fact_vectors_current(context, stores=resource)
    assert current.passed and current.metadata["checked"].value == 2
    with Stores(settings) as stores:
        stores.conn.execute("UPDATE embeddings SET text_hash = 'made-from-an-older-text' WHERE target_id = 'f1'")
    stale = fact_vectors_current(context, stores=resource)
    assert not stale.passed and stale.severity == dg.AssetCheckSeverity.WARN
    assert stale.metadata["stale"].value == 1 and "reembed_job" in stale.description


# --- repair jobs ------------------------------------------------------------------------------------


def test_reembed_job_recomputes_vectors_and_reports(settings: Settings) -> None:
    """The repair job an operator launches from the UI: vectors recomputed, counts in its metadata."""
    from nexus_memory.embeddings.model import get_embedder
    from nexus_memory.embeddings.step import embed_pending
    from nexus_memory_assets.maintenance import reembed_job

    with Stores(settings) as stores, stores.transaction():
        stores.conn.executemany(
            "INSERT INTO facts(id, text, as_of, ingested_at, created_at) VALUES (?, ?, 0, 0, 0)",
            [("f1", "Alice works at Acme"), ("f2", "Bob likes hiking")],
        )
    with Stores(settings) as stores:
        embed_pending(stores, get_embedder())
        stores.conn.execute("UPDATE embeddings SET embedding = zeroblob(length(embedding))")
    result = reembed_job.execute_in_process(
        resources={"stores": StoresResource(data_dir=str(settings.data_dir)), "embedder": EmbedderResource()},
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert result.success and result.output_for_node("reembed_vectors") == 2
    output = next(e for e in result.events_for_node("reembed_vectors") if e.is_successful_output)
    metadata = output.step_output_data.metadata
    assert metadata["rows"].value == 2 and metadata["by_type"].value == {"fact": 2}
