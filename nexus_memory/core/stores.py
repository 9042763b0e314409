"""The four SQLite stores (docs/stores.md), opened as one connection.

memory.db is the main database; events.db, identity.db and embeddings.db are ATTACHed under
their own names. Table names are unique across the stores, so SQL can name tables unqualified,
and one transaction can cover writes to several stores (an episode's facts and its entities).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from nexus_memory.core import db
from nexus_memory.core.config import Settings, SetupError, load_settings


class Stores:
    """Open handles on events.db, memory.db, identity.db and embeddings.db."""

    def __init__(self, settings: Settings | None = None, *, readonly: bool = False) -> None:
        self.settings = settings or load_settings()
        self.data_dir = Path(self.settings.data_dir)
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file of that name, no permission, a read-only disk
            raise SetupError(f"the data directory {self.data_dir} cannot be made: {exc.strerror}") from exc
        self.versions = {name: db.migrate(self.path(name), name) for name in db.STORES}
        self.conn = db.connect(self.path("memory"), readonly=readonly)
        for name in ("events", "identity", "embeddings"):
            uri = f"file:{self.path(name)}?mode=ro" if readonly else str(self.path(name))
            self.conn.execute(f"ATTACH DATABASE ? AS {name}", (uri,))
            if not readonly:
                # Both are per database: an ATTACHed store has its own (FULL would fsync each commit).
                self.conn.execute(f"PRAGMA {name}.journal_mode = WAL")
                self.conn.execute(f"PRAGMA {name}.synchronous = NORMAL")

    def path(self, name: str) -> Path:
        return self.settings.store_path(name)

    def transaction(self) -> contextlib.AbstractContextManager[db.Connection]:
        """One unit of work over all four stores (nests; see db.transaction)."""
        return db.transaction(self.conn)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Stores:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def counts(self) -> dict[str, int]:
        """Row counts of every layer (what `nexus-memory stats` prints)."""
        queries = {
            "events": "SELECT count(*) FROM events",
            "event_rejects": "SELECT count(*) FROM event_rejects WHERE resolved_at IS NULL",
            "derived_events": "SELECT count(*) FROM derived_events",
            "episodes": "SELECT count(*) FROM episodes",
            "facts": "SELECT count(*) FROM facts",
            "entities": "SELECT count(*) FROM entities WHERE merged_into IS NULL",
            "causal_links": "SELECT count(*) FROM causal_links",
            "merge_candidates": "SELECT count(*) FROM merge_candidates WHERE status = 'pending'",
            "embeddings": "SELECT count(*) FROM embeddings",
            # Current versions (older versions stay for history and are not counted).
            "observations": """SELECT count(*) FROM analysis_runs r WHERE r.analysis_type_id = 'observation_v1'
                AND r.status = 'completed' AND NOT EXISTS (SELECT 1 FROM analysis_runs c WHERE c.parent_id = r.id)""",
            "mental_models": """SELECT count(*) FROM mental_models m
                WHERE NOT EXISTS (SELECT 1 FROM mental_models c WHERE c.parent_id = m.id)""",
        }
        return {name: self.conn.execute(sql).fetchone()[0] for name, sql in queries.items()}
