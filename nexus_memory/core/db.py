"""SQLite connections with sqlite-vec loaded, WAL, busy timeouts, and versioned schemas per store.

Python's stdlib sqlite3 is often built without extension loading, so we take the first driver that
can load sqlite-vec: pysqlite3 (bundles a current SQLite), then the stdlib module.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import sqlite_vec

from nexus_memory.core.config import SetupError

STORES = ("memory", "events", "identity", "embeddings")
# Each store's schema is a list of migrations; the store's version is PRAGMA user_version.
# Migration 1 is the whole schema file; later ones are appended here as ALTER statements.
MIGRATIONS: dict[str, list[str]] = {name: [f"{name}.sql"] for name in STORES}
# embeddings 2: the hash of the text each vector was made from, so a change of that text shows.
MIGRATIONS["embeddings"].append("ALTER TABLE embeddings ADD COLUMN text_hash TEXT")
# lifecycle: fact state (decay, corrections, conflicts), sessions, forgetting, the merge journal.
MIGRATIONS["memory"].append("memory_lifecycle.sql")
MIGRATIONS["events"].append("events_lifecycle.sql")
MIGRATIONS["identity"].append("identity_lifecycle.sql")
# consolidation (after the lifecycle): observation chains, consolidation failures, mental model sources.
MIGRATIONS["memory"].append("memory_consolidation.sql")
# recall: keyword search over each fact's retrieval key (its text with its message).
MIGRATIONS["memory"].append("memory_fact_keys.sql")
# two times on every fact: when it was said (as_of) and the time it is about (about_start, about_end).
MIGRATIONS["memory"].append("memory_fact_times.sql")
# writer cost: each episode's mode and seconds beside its tokens (episode_processing).
MIGRATIONS["memory"].append("memory_episode_cost.sql")
BUSY_TIMEOUT_MS = 30_000
_savepoint_numbers = itertools.count(1)  # unique SAVEPOINT names for nested transactions


class SchemaError(SetupError):
    """A store's on-disk schema cannot be used by this version of Nexus Memory."""


def _pick_driver() -> ModuleType:
    candidates = []
    with contextlib.suppress(ImportError):
        import pysqlite3.dbapi2 as pysqlite3  # type: ignore[import-not-found]

        candidates.append(pysqlite3)
    import sqlite3

    candidates.append(sqlite3)
    for module in candidates:
        conn = module.connect(":memory:")
        try:
            if hasattr(conn, "enable_load_extension"):
                conn.enable_load_extension(True)
                sqlite_vec.load(conn)
                return module
        except Exception:
            continue
        finally:
            conn.close()
    raise RuntimeError(
        "No SQLite driver here can load sqlite-vec: install pysqlite3-binary (Linux) "
        "or a Python built with loadable SQLite extensions."
    )


sqlite = _pick_driver()
if TYPE_CHECKING:
    # pysqlite3 is the stdlib module built against a newer SQLite: same API, so checkers read the stdlib's.
    from sqlite3 import Connection, Row
else:
    Connection = sqlite.Connection
    Row = sqlite.Row
IntegrityError = sqlite.IntegrityError
OperationalError = sqlite.OperationalError


def connect(path: Path | str, *, readonly: bool = False) -> Connection:
    """Open one SQLite file with sqlite-vec, WAL, a busy timeout and foreign keys on."""
    if readonly:
        conn = sqlite.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
    else:
        conn = sqlite.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
    conn.row_factory = Row
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    # Autocommit mode: transactions are explicit (see `transaction`), never implicit.
    conn.isolation_level = None
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    # Deleted content is overwritten with zeros, so a forgotten text leaves no bytes behind
    # (ATTACHed stores inherit it; see lifecycle/forget/scrub.py).
    conn.execute("PRAGMA secure_delete = ON")
    if not readonly:
        _use_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def store_state(conn: Connection, schema: str = "main") -> tuple[int, int]:
    """What moves when an attached store may have changed since it was last read: another connection's
    commit to it (`PRAGMA data_version`) or any write of this connection (`total_changes`). Caches kept per
    connection compare it before they answer."""
    return conn.execute(f"PRAGMA {schema}.data_version").fetchone()[0], conn.total_changes


def _use_wal(conn: Connection) -> None:
    """Switch to WAL. While another process switches the same fresh file (several commands started at once
    on a new data directory), SQLite answers 'locked' at once without its busy handler: ask again until the
    busy timeout. A file already in WAL mode answers at once."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def migrate(path: Path, store: str) -> int:
    """Create or upgrade one store file to the current schema; return its version."""
    migrations = MIGRATIONS[store]
    try:
        conn = connect(path)
    except sqlite.OperationalError as exc:  # no permission, or locked past the busy timeout
        raise SchemaError(f"{path} cannot be opened: {exc}") from exc
    except sqlite.DatabaseError as exc:  # not SQLite at all, or corrupt
        raise SchemaError(
            f"{path} cannot be opened as a Nexus Memory store ({exc}): move it aside, or point NEXUS_DATA_DIR elsewhere"
        ) from exc
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > len(migrations):
            raise SchemaError(
                f"{path} has schema version {version}, newer than this Nexus Memory understands "
                f"({len(migrations)}). Upgrade nexus-memory, or point NEXUS_DATA_DIR elsewhere."
            )
        for number in range(version + 1, len(migrations) + 1):
            sql = _migration_sql(migrations[number - 1])
            conn.execute("BEGIN IMMEDIATE")
            try:
                # Another process may have applied it while this one waited for the lock: two commands
                # started at once on a fresh data directory (a hook and the MCP server).
                if conn.execute("PRAGMA user_version").fetchone()[0] >= number:
                    conn.execute("COMMIT")
                    continue
                for statement in _split_sql(sql):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")
                conn.execute("COMMIT")
            except Exception:
                conn.execute("ROLLBACK")
                raise
        return len(migrations)
    finally:
        conn.close()


def _migration_sql(entry: str) -> str:
    if entry.endswith(".sql"):
        return resources.files("nexus_memory.core.schema").joinpath(entry).read_text()
    return entry


def _split_sql(script: str) -> list[str]:
    """Split a schema script into statements (sqlite3.complete_statement handles triggers)."""
    statements, buffer = [], ""
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith("--") and not buffer.strip():
            continue
        buffer += line
        if sqlite.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements


@contextlib.contextmanager
def transaction(conn: Connection, *, immediate: bool = True) -> Iterator[Connection]:
    """The one way to group writes: all of the block's writes, or none of them.

    Outermost use: BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any error. Inside another transaction:
    a SAVEPOINT, released on success; on an error only the nested block's writes are rolled back, and
    the error propagates, so an outer block that catches it keeps its own writes.
    """
    if conn.in_transaction:
        name = f"nested_{next(_savepoint_numbers)}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:  # SQLite may already have rolled everything back (e.g. disk full)
                conn.execute(f"ROLLBACK TO {name}")
                conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def placeholders(values: Sequence[Any]) -> str:
    """'?,?,?' for an IN (...) list of these values ('' for none)."""
    return ",".join("?" * len(values))


def chunked(values: Sequence[str], size: int = 500) -> Iterator[list[str]]:
    """`values` in lists of at most `size`: IN lists stay under SQLite's variable limit."""
    for start in range(0, len(values), size):
        yield list(values[start : start + size])


def column_in(conn: Connection, sql: str, values: Sequence[str], *leading: Any) -> list[Any]:
    """The first column of `sql` over all `values`, chunked: each IN ({marks}) list of `sql` gets a chunk,
    after the `leading` parameters. Duplicates are dropped, first-seen order kept."""
    out: list[Any] = []
    for part in chunked(list(dict.fromkeys(values))):
        out += [r[0] for r in conn.execute(*_in_lists(sql, part, leading))]
    return list(dict.fromkeys(out))


def execute_in(conn: Connection, sql: str, values: Sequence[str], *leading: Any) -> int:
    """A write whose IN ({marks}) lists take all `values`, chunked; returns the rows it changed."""
    return sum(conn.execute(*_in_lists(sql, part, leading)).rowcount for part in chunked(list(dict.fromkeys(values))))


def _in_lists(sql: str, part: list[str], leading: Sequence[Any]) -> tuple[str, list[Any]]:
    return sql.replace("{marks}", placeholders(part)), [*leading, *(part * sql.count("{marks}"))]
