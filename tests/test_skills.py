"""The skills folder: SCHEMA.md from the live schema, every QUERIES.md pattern run on a built store, the scripts."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from built_store import built_copy

from nexus_memory import cli
from nexus_memory.agents import skills
from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores


@pytest.fixture
def built(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    settings = built_copy(tmp_path_factory, tmp_path)
    monkeypatch.setenv("NEXUS_DATA_DIR", str(settings.data_dir))
    return settings


@pytest.fixture
def folder(built: Settings, tmp_path: Path) -> Path:
    assert cli.main(["skills", "export", str(tmp_path / "skills")]) == 0
    return tmp_path / "skills"


def test_export_writes_the_folder(folder: Path, built: Settings) -> None:
    assert sorted(p.name for p in folder.iterdir()) == ["DATA_DIR", "QUERIES.md", "SCHEMA.md", "search", "write"]
    assert (folder / "DATA_DIR").read_text().strip() == str(built.data_dir.resolve())
    for script in ("search", "write"):
        assert os.access(folder / script, os.X_OK)
        assert str(built.data_dir.resolve()) in (folder / script).read_text()


def test_schema_lists_every_live_table_with_its_purpose(folder: Path, built: Settings) -> None:
    text = (folder / "SCHEMA.md").read_text()
    with Stores(built, readonly=True) as stores:
        tables = skills.live_tables(stores)
    names = {name for _, name, _ in tables}
    assert {"facts", "events", "entities", "embeddings", "derived_events", "facts_fts", "vec_embeddings"} <= names
    assert not any(n.startswith(("sqlite_", "facts_fts_", "vec_embeddings_")) for n in names)  # internals left out
    purposes = skills.table_purposes()
    for store, name, sql in tables:
        assert purposes.get(name), (
            f"{name} ({store}.db): no `-- ` comment before its CREATE TABLE in nexus_memory/core/schema/"
        )
        assert f"- `{name}` ({store}.db): {purposes[name]}" in text
        assert sql.strip() in text
    assert "text_hash" in text  # the live schema, migrations included, not only the .sql files


def _run(settings: Settings, sql: str, params: dict[str, object]) -> list[tuple]:
    """One pattern with the parameters it names."""
    with Stores(settings, readonly=True) as stores:
        return [tuple(r) for r in stores.conn.execute(sql, {n: params[n] for n in re.findall(r":(\w+)", sql)})]


def _run_patterns(settings: Settings, markdown: str, params: dict[str, object]) -> list[list[tuple]]:
    """Every ```sql block of QUERIES.md."""
    return [_run(settings, sql, params) for sql in skills.sql_blocks(markdown)]


def test_every_query_pattern_runs_and_answers(folder: Path, built: Settings) -> None:
    markdown = (folder / "QUERIES.md").read_text()
    blocks = skills.sql_blocks(markdown)
    assert len(blocks) == len(skills.QUERIES)
    with Stores(built, readonly=True) as stores:
        thread = stores.conn.execute(
            "SELECT thread_id FROM events WHERE thread_id IS NOT NULL GROUP BY thread_id "
            "ORDER BY count(DISTINCT sender_id) DESC LIMIT 1"
        ).fetchone()[0]
    params = {
        "name": "Dana Whitfield",  # an alias (display name) of a delivery entity
        "limit": 20,
        "since": "2025-03-01",
        "thread_id": thread,
        "word": "",
        "terms": "launch OR ledger",
        "text": "dana",
    }
    answers = dict(zip((title for title, *_ in skills.QUERIES), _run_patterns(built, markdown, params), strict=True))
    for title, rows in answers.items():
        assert rows, f"{title}: no rows on the sample store"
    assert any("Atlas" in row[2] for row in answers["An entity's facts"])
    assert len(answers["Who was in a thread"]) >= 2
    assert {row[0] for row in answers["Open commitments and action items"]} <= {"commitment", "action_item"}
    later = _run_patterns(built, markdown, {**params, "since": "2025-03-20"})[1]
    assert 0 < len(later) < len(answers["What changed about X since a date"])


def test_write_then_read_back_with_the_patterns(folder: Path, built: Settings, capsys: pytest.CaptureFixture) -> None:
    """The `write` script runs `nexus-memory remember|correct|confirm --json`; here those run in-process
    (the model is loaded already), the script itself below."""
    facts_of = skills.sql_blocks((folder / "QUERIES.md").read_text())[0]  # "An entity's facts"
    params = {"name": "Dana Whitfield", "limit": 50}
    before = _run(built, facts_of, params)
    assert cli.main(["remember", "Dana Whitfield moved to the Lisbon office", "--json"]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["side_effects"]["embedded"] == 1 and written["side_effects"]["cooccurrences"] >= 1
    ids = [r[0] for r in _run(built, facts_of, params)]
    assert ids[0] == written["fact_id"]  # linked to Dana's entity through her alias, newest first
    assert cli.main(["remember", "Dana Whitfield moved to the Lisbon office", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)  # stored once: the answer is that fact
    assert again["duplicate"] is True and again["fact_id"] == written["fact_id"] and "side_effects" not in again
    assert cli.main(["correct", written["fact_id"], "Dana Whitfield moved to the Porto office", "--json"]) == 0
    corrected = json.loads(capsys.readouterr().out)
    ids = [r[0] for r in _run(built, facts_of, params)]
    assert corrected["fact_id"] in ids and written["fact_id"] not in ids
    assert len(ids) == len(before) + 1


def test_write_script(folder: Path, built: Settings) -> None:
    env = {**os.environ, "NEXUS_DATA_DIR": str(built.data_dir)}
    with Stores(built, readonly=True) as stores:
        fact_id = stores.conn.execute("SELECT id FROM facts LIMIT 1").fetchone()[0]
    confirmed = subprocess.run([str(folder / "write"), "confirm", fact_id], env=env, capture_output=True, text=True)
    assert confirmed.returncode == 0 and json.loads(confirmed.stdout)["fact_id"] == fact_id
    unknown = subprocess.run(
        [str(folder / "write"), "confirm", "no-such-fact"], env=env, capture_output=True, text=True
    )
    assert unknown.returncode == 2 and "no-such-fact" in unknown.stderr
    for refused in (["forget", "--fact", fact_id, "--yes"], ["stats"], []):
        done = subprocess.run([str(folder / "write"), *refused], env=env, capture_output=True, text=True)
        assert done.returncode == 2 and "usage: write" in done.stderr
    with Stores(built, readonly=True) as stores:
        assert stores.conn.execute("SELECT 1 FROM facts WHERE id = ?", (fact_id,)).fetchone()


def test_search_script_returns_results_with_provenance(folder: Path, built: Settings) -> None:
    env = {**os.environ, "NEXUS_DATA_DIR": str(built.data_dir)}
    out = subprocess.run(
        [str(folder / "search"), "When is the Atlas launch?", "--max-results", "5", "--after", "2025-03-01"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout)
    assert 0 < len(result["results"]) <= 5
    assert result["time_after"] == skills.day_ms("2025-03-01")
    assert all(r["source_event_ids"] for r in result["results"] if r["type"] == "fact")
    bad = subprocess.run([str(folder / "search"), "x", "--max-results", "0"], env=env, capture_output=True, text=True)
    assert bad.returncode == 1 and "max_results" in json.loads(bad.stdout)["error"]
