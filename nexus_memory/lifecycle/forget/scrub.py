"""No trace in the bytes: what makes deleted rows really gone from the files under the data directory.

- Every connection runs with PRAGMA secure_delete (db.connect): a deleted row, index entry or freed page
  is overwritten with zeros as it goes, in the database file and in the WAL frames that carry it.
- The keyword index uses FTS5 'secure-delete' (memory_lifecycle.sql): a deleted fact's terms leave its
  segments at once instead of at the next merge.
- A store that held content before secure_delete was on (its *_scrub_state.clean_since is NULL) may
  keep old copies in free space; it is VACUUMed once, at its first forget, and then marked clean.
- WAL files keep old page images until overwritten: each store is checkpointed with TRUNCATE, which
  copies the WAL into the database and empties the file. A reader holding the WAL open can delay that;
  the checkpoint is retried, and a store that stayed busy is reported (rerun `nexus-memory forget --scrub`).
- Vector index files (ann/) are rewritten without the vectors (vectors.rewrite_index_files), and
  dossier files that quote forgotten text are removed before the current ones are written again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from nexus_memory.core.ids import now_ms
from nexus_memory.core.stores import Stores

# Stores that hold text, with the table that says whether they are clean (schema/*_lifecycle.sql).
SCRUB_STATE = {"main": "memory_scrub_state", "events": "events_scrub_state", "identity": "identity_scrub_state"}
SCHEMAS = ("main", "events", "identity", "embeddings")
CHECKPOINT_WAIT_S = 15.0


@dataclass
class ScrubReport:
    """What one scrub did, what it cost, and whether anything is left to do."""

    vacuumed: list[str] = field(default_factory=list)
    checkpointed: list[str] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)  # stores whose WAL a reader kept: rerun the scrub
    dossiers_removed: int = 0
    index_files_rewritten: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.busy

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "complete": self.complete}


def scrub(stores: Stores, report: ScrubReport | None = None) -> ScrubReport:
    """VACUUM stores not yet clean, then checkpoint every store's WAL to empty. Outside any transaction."""
    report = report or ScrubReport()
    conn = stores.conn
    started = time.perf_counter()
    for schema, table in SCRUB_STATE.items():
        if conn.execute(f"SELECT clean_since FROM {schema}.{table} WHERE id = 1").fetchone()[0] is None:
            conn.execute(f"VACUUM {schema}")
            conn.execute(f"UPDATE {schema}.{table} SET clean_since = ? WHERE id = 1", (now_ms(),))
            report.vacuumed.append(schema)
    report.seconds["vacuum"] = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    for schema in SCHEMAS:
        (report.checkpointed if checkpoint(stores, schema) else report.busy).append(schema)
    report.seconds["checkpoint"] = round(time.perf_counter() - started, 3)
    return report


def checkpoint(stores: Stores, schema: str, wait_s: float = CHECKPOINT_WAIT_S) -> bool:
    """Copy the store's WAL into it and truncate the WAL to zero bytes; False if a reader kept it busy."""
    deadline = time.monotonic() + wait_s
    while True:
        busy = stores.conn.execute(f"PRAGMA {schema}.wal_checkpoint(TRUNCATE)").fetchone()[0]
        if not busy:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)


def remove_dossiers(directory: Path, quotes: Callable[[str], bool] | None) -> int:
    """Delete dossier files whose text repeats something forgotten; returns how many."""
    if quotes is None or not directory.is_dir():
        return 0
    removed = 0
    for path in sorted(directory.glob("*.md")):
        if quotes(path.read_text(encoding="utf-8", errors="replace")):
            path.unlink()
            removed += 1
    return removed
