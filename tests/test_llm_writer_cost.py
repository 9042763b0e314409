"""What each writer episode cost, in the store: `episode_processing.mode` and `.seconds` beside its tokens,
for the offline writer ('offline') and the LLM writer ('tools' | 'structured'); shown by `nexus-memory failed`,
`stats` and the facts asset's run metadata (docs/writer.md, "One transaction per episode")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from nexus_memory.cli import main
from nexus_memory.core import db
from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory.episodes.grouping import build_episodes
from nexus_memory.events.partitions import partition_key
from nexus_memory.pipeline.layers import run_layer
from nexus_memory.writer.offline_writer import OfflineWriter
from nexus_memory.writer.run import episode_costs, failed_episodes, process_partition
from nexus_memory_assets.layers.assets import episode_cost_table
from tests.fake_openai import FakeOpenAI, content, document
from tests.test_llm_structured import doc
from tests.test_llm_structured import fact as doc_fact
from tests.test_llm_writer import DAY, RECORDS, add_events, make_writer, processing


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def test_the_offline_writer_records_its_mode_and_seconds(stores: Stores) -> None:
    add_events(stores, RECORDS)
    build_episodes(stores, DAY, "imessage")
    process_partition(stores, DAY, "imessage", OfflineWriter())
    rows = processing(stores)
    assert len(rows) == 2 and {r["mode"] for r in rows} == {"offline"}
    assert all(r["seconds"] > 0 for r in rows)
    (cost,) = episode_costs(stores)
    assert (cost.mode, cost.episodes, cost.ok) == ("offline", 2, 2)
    assert cost.seconds == pytest.approx(sum(r["seconds"] for r in rows), abs=0.01)
    # A rerun finds nothing new: the skip keeps the mode that wrote the episode and adds no cost.
    process_partition(stores, DAY, "imessage", OfflineWriter(), episode_ids=[r["episode_id"] for r in rows])
    again = processing(stores)
    assert [(r["mode"], r["seconds"], r["status"]) for r in again] == [
        (r["mode"], r["seconds"], r["status"]) for r in rows
    ]


def test_the_llm_writer_records_each_episodes_mode_seconds_and_tokens_also_when_it_fails(
    stores: Stores, fake: FakeOpenAI
) -> None:
    add_events(stores, RECORDS)  # two episodes: Alice's thread, then Bob's
    build_episodes(stores, DAY, "imessage")
    fake.add(document(doc(doc_fact("I started at Acme this week", "e1"))))  # Alice: ok
    fake.add(content("{not json"), content("{still not json"))  # Bob: fails after its retry
    writer = make_writer(fake, mode="structured", max_retries=1)
    process_partition(stores, DAY, "imessage", writer)

    rows = processing(stores)
    assert [(r["status"], r["mode"]) for r in rows] == [("ok", "structured"), ("failed", "structured")]
    assert all(r["seconds"] > 0 and r["prompt_tokens"] > 0 for r in rows)
    (failed,) = failed_episodes(stores)
    assert (failed.mode, failed.seconds) == ("structured", rows[1]["seconds"])
    (cost,) = episode_costs(stores)
    assert (cost.mode, cost.episodes, cost.ok) == ("structured", 2, 1)
    assert cost.prompt_tokens == sum(r["prompt_tokens"] for r in rows)
    # Only the episodes a run wrote (its last attempts), as the facts asset reports them.
    later = max(r["updated_at"] for r in rows) + 1
    assert episode_costs(stores, since_ms=later) == []
    assert episode_costs(stores, [partition_key(DAY, "email")]) == []

    # The rerun adds its seconds and tokens to the failed episode's row.
    fake.add(document(doc()))
    process_partition(stores, DAY, "imessage", writer, only_failed=True)
    rerun = processing(stores)[-1]
    assert rerun["status"] == "ok" and rerun["attempts"] == 2 and rerun["seconds"] > rows[1]["seconds"]


def test_the_facts_metadata_table_lists_each_mode(stores: Stores, fake: FakeOpenAI) -> None:
    add_events(stores, RECORDS)
    build_episodes(stores, DAY, "imessage")
    fake.add(document(doc()), document(doc()))
    run_layer(stores, "facts", "imessage", [DAY], writer=make_writer(fake, mode="structured"))
    table = episode_cost_table(episode_costs(stores)).value
    header, _rule, row = table.splitlines()
    assert header.startswith("| mode | episodes | ok | seconds | s / episode | tokens")
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:3] == ["structured", "2", "2"] and float(cells[3]) >= 0
    assert cells[5] == " + ".join(
        str(sum(r[k] for r in processing(stores))) for k in ("prompt_tokens", "completion_tokens")
    )


def test_failed_and_stats_show_the_cost(
    settings: Settings, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(settings.data_dir))
    with Stores(settings) as stores:
        add_events(stores, RECORDS)
        build_episodes(stores, DAY, "imessage")
        fake.add(content("{not json"), document(doc()))  # the first episode fails, the second is ok
        process_partition(stores, DAY, "imessage", make_writer(fake, mode="structured", max_retries=0))
    capsys.readouterr()
    assert main(["failed"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["mode"] == "structured" and listed["seconds"] >= 0
    assert main(["stats", "--json"]) == 0
    by_mode: dict[str, Any] = json.loads(capsys.readouterr().out)["episode_processing_by_mode"]
    assert by_mode["structured"]["episodes"] == 2 and by_mode["structured"]["ok"] == 1
    assert main(["stats"]) == 0
    assert "writer structured  2 episodes (1 ok)" in capsys.readouterr().out


def test_a_store_made_before_the_cost_columns_upgrades_in_place(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    migrations = db.MIGRATIONS["memory"]
    before = migrations[: migrations.index("memory_episode_cost.sql")]
    with monkeypatch.context() as patched:
        patched.setitem(db.MIGRATIONS, "memory", before)
        with Stores(settings) as old:
            add_events(old, RECORDS[:1])
            build_episodes(old, DAY, "imessage")
            (episode_id,) = [r[0] for r in old.conn.execute("SELECT id FROM episodes")]
            old.conn.execute(
                """INSERT INTO episode_processing (episode_id, status, writer, prompt_tokens, updated_at)
                   VALUES (?, 'failed', 'llm:m', 100, 1)""",
                (episode_id,),
            )
            assert "mode" not in {r[1] for r in old.conn.execute("PRAGMA table_info(episode_processing)")}
    with Stores(settings) as upgraded:
        (row,) = processing(upgraded)
        assert (row["mode"], row["seconds"], row["prompt_tokens"]) == (None, 0, 100)
        (cost,) = episode_costs(upgraded)
        assert (cost.mode, cost.episodes) == ("", 1)
        assert "(not recorded)" in episode_cost_table([cost]).value


def test_the_facts_asset_shows_the_runs_cost_by_mode(settings: Settings) -> None:
    import dagster as dg

    from tests.test_dagster import _event, _ingest, _run_job

    _ingest(settings, [_event("a", "sms", "2025-03-03T10:00:00Z"), _event("b", "sms", "2025-03-03T16:00:00Z")])
    result = _run_job(settings, dg.DagsterInstance.ephemeral(), "memory_pipeline", "sms", "2025-03-03")
    assert result.success
    (facts,) = [
        e.materialization.metadata
        for e in result.get_asset_materialization_events()
        if e.materialization.asset_key.to_user_string() == "facts"
    ]
    table = facts["cost_by_mode"].value
    assert table.splitlines()[0].startswith("| mode | episodes | ok | seconds")
    with Stores(settings) as stores:
        (cost,) = episode_costs(stores)
    assert cost.mode == "offline" and f"| offline | {cost.episodes} | {cost.ok} |" in table
