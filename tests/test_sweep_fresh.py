"""A fresh machine: several commands started at once on an empty data directory (a prompt hook, the MCP
server, an ingest) each open the stores, and every one of them works; the schema is made once."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from nexus_memory.core import db
from nexus_memory.core.config import load_settings
from nexus_memory.core.stores import Stores

PROCESSES = 6


def _open_at_once(data_dir: str, start: multiprocessing.synchronize.Barrier) -> None:
    start.wait()
    with Stores(load_settings(data_dir=Path(data_dir))) as stores:
        stores.conn.execute("SELECT count(*) FROM facts").fetchone()


@pytest.mark.parametrize("attempt", range(4))
def test_stores_opened_by_many_processes_at_once_on_a_fresh_directory(tmp_path: Path, attempt: int) -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(PROCESSES)
    processes = [context.Process(target=_open_at_once, args=(str(tmp_path), start)) for _ in range(PROCESSES)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
    assert [p.exitcode for p in processes] == [0] * PROCESSES
    for store, migrations in db.MIGRATIONS.items():
        conn = db.connect(tmp_path / f"{store}.db")
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(migrations)
        conn.close()
