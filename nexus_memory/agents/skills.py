"""The skills folder for agents in code mode: `nexus-memory skills export DIR`.

An agent with a shell reads memory with plain SQL and writes through two scripts:
  SCHEMA.md   every table of the live stores, with its one-line purpose (the comment before its
              CREATE TABLE in the schema files, nexus_memory/core/schema/*.sql) and its CREATE statement
              as SQLite holds it;
  QUERIES.md  read patterns in plain SQL with named parameters (each one runs in the test suite);
  search      hybrid recall (the `recall` agent tool): results with dates and source event ids;
  write       remember / correct / confirm a fact through the agent tools, with the side effects
              of a write (co-occurrences, merge candidates, the fact's embedding; see agents/writes.py).
  DATA_DIR    the folder of the four SQLite files the scripts and queries use.
"""

from __future__ import annotations

import re
import shlex
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.stores import Stores
from nexus_memory.recall.arguments import RECALL_PARAMETERS

# --- SCHEMA.md -----------------------------------------------------------------------------------

_CREATE = re.compile(r"^CREATE (?:VIRTUAL )?TABLE (?:IF NOT EXISTS )?(\w+)", re.IGNORECASE)


def table_purposes() -> dict[str, str]:
    """Table name -> the first line of the `-- ` comment block right before its CREATE TABLE, in every
    schema file the stores' migrations run."""
    purposes: dict[str, str] = {}
    files = [entry for store in db.STORES for entry in db.MIGRATIONS[store] if entry.endswith(".sql")]
    for name in files:
        comment: list[str] = []
        for line in resources.files("nexus_memory.core.schema").joinpath(name).read_text().splitlines():
            stripped = line.strip()
            match = _CREATE.match(stripped)
            if match and comment:
                purposes[match.group(1)] = comment[0]
            if stripped.startswith("--"):
                comment.append(stripped[2:].strip())
            else:
                comment = []
    return purposes


def live_tables(stores: Stores) -> list[tuple[str, str, str]]:
    """(store, table, CREATE statement) of every table a reader queries: no SQLite or index internals."""
    tables = []
    for store in db.STORES:
        schema = "main" if store == "memory" else store
        listed = [tuple(r) for r in stores.conn.execute(f"PRAGMA {schema}.table_list")]
        virtual = [name for _, name, kind, *_ in listed if kind == "virtual"]
        for _, name, kind, *_ in listed:
            internal = kind == "shadow" or name.startswith("sqlite_") or any(name.startswith(v + "_") for v in virtual)
            if not internal:
                sql = stores.conn.execute(f"SELECT sql FROM {schema}.sqlite_master WHERE name = ?", (name,)).fetchone()
                tables.append((store, name, sql[0]))
    return sorted(tables)


def schema_markdown(stores: Stores) -> str:
    purposes = table_purposes()
    lines = [
        "# Nexus Memory schema",
        "",
        "Four SQLite files in DATA_DIR: memory.db (facts, episodes, observations, mental models), events.db",
        "(the immutable event ledger), identity.db (entities and merges) and embeddings.db (vectors).",
        "Table names are unique across them: open memory.db and ATTACH the other three under their own",
        "names (see QUERIES.md), then name tables unqualified. Times are unix milliseconds (UTC).",
        "Read with SQL; write through the `write` script, which keeps the derived tables in step.",
        "",
    ]
    lines += [f"- `{name}` ({store}.db): {purposes.get(name, '')}" for store, name, _ in live_tables(stores)]
    for store, name, sql in live_tables(stores):
        lines += ["", f"## {name}", "", f"{store}.db. {purposes.get(name, '')}", "", "```sql", sql.strip() + ";", "```"]
    return "\n".join(lines) + "\n"


# --- QUERIES.md ----------------------------------------------------------------------------------

# The entity a name means: its own row or an alias, followed to the entity it was merged into.
_ENTITY = """WITH named AS (
  SELECT id FROM entities WHERE normalized = lower(trim(:name))
  UNION SELECT entity_id FROM aliases WHERE normalized = lower(trim(:name))
), target AS (
  SELECT coalesce(e.merged_into, e.id) AS id FROM entities e JOIN named ON named.id = e.id
), corrected AS (  -- facts an agent tool corrected: they are no longer true
  SELECT json_extract(metadata, '$.supersedes') AS id FROM facts
  WHERE platform = 'memory_tool' AND json_valid(metadata) AND json_extract(metadata, '$.supersedes') IS NOT NULL
)"""

# (title, what it answers, parameters, SQL). Every pattern runs in tests/test_skills.py.
QUERIES: list[tuple[str, str, dict[str, str], str]] = [
    (
        "An entity's facts",
        "What is known about a person, place or thing, newest first (corrected facts left out).",
        {"name": "a name or alias, e.g. 'Dana Whitfield', 'dana.whitfield@northwind.example'", "limit": "e.g. 20"},
        _ENTITY
        + """
SELECT f.id, datetime(f.as_of / 1000, 'unixepoch') AS at, f.text, f.platform, f.source_event_id
FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id
WHERE fe.entity_id IN (SELECT id FROM target) AND f.id NOT IN (SELECT id FROM corrected)
ORDER BY fe.as_of DESC LIMIT :limit;""",
    ),
    (
        "What changed about X since a date",
        "Facts about an entity from a day on, oldest first; a correction shows the text it replaced.",
        {"name": "a name or alias", "since": "a date, 'YYYY-MM-DD'"},
        _ENTITY
        + """
SELECT f.id, datetime(f.as_of / 1000, 'unixepoch') AS at, f.text,
       old.text AS replaces, f.id IN (SELECT id FROM corrected) AS corrected_later
FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id
LEFT JOIN facts old ON json_valid(f.metadata) AND old.id = json_extract(f.metadata, '$.supersedes')
WHERE fe.entity_id IN (SELECT id FROM target)
  AND fe.as_of >= CAST(strftime('%s', :since) AS INTEGER) * 1000
ORDER BY fe.as_of;""",
    ),
    (
        "Who was in a thread",
        "Everyone who wrote in a conversation thread, with the entity their handle belongs to.",
        {"thread_id": "events.thread_id (see 'Recent threads')"},
        """SELECT ev.sender_id, max(ev.sender_name) AS display_name, n.id AS entity_id, n.name AS entity,
       count(*) AS messages, datetime(min(ev.as_of) / 1000, 'unixepoch') AS first,
       datetime(max(ev.as_of) / 1000, 'unixepoch') AS last
FROM events ev
LEFT JOIN contacts c ON c.platform = ev.platform AND c.handle = ev.sender_id
LEFT JOIN entities e ON e.id = c.entity_id
LEFT JOIN entities n ON n.id = coalesce(e.merged_into, e.id)
WHERE ev.thread_id = :thread_id
GROUP BY ev.sender_id ORDER BY messages DESC;""",
    ),
    (
        "Recent threads",
        "Conversation threads by their latest message, with how many people and messages they hold.",
        {"limit": "e.g. 20"},
        # SQLite takes a bare column (content) from the row that max(as_of) picked: the latest message.
        """SELECT thread_id, platform, count(DISTINCT sender_id) AS people, count(*) AS messages,
       datetime(max(as_of) / 1000, 'unixepoch') AS last, substr(content, 1, 120) AS last_text
FROM events WHERE thread_id IS NOT NULL
GROUP BY thread_id, platform ORDER BY max(as_of) DESC LIMIT :limit;""",
    ),
    (
        "Open commitments and action items",
        "Promises and to-dos stated since a date, newest first, with who said them and where. There is no "
        "'done' flag: read the thread after an item (events of its thread_id) to see whether it was kept.",
        {"since": "a date, 'YYYY-MM-DD'"},
        """SELECT d.type, d.content, n.name AS stated_by, datetime(d.as_of / 1000, 'unixepoch') AS at,
       ev.platform, ev.thread_id, d.source_event_id
FROM derived_events d
JOIN events ev ON ev.id = d.source_event_id
LEFT JOIN entities e ON e.id = d.entity_id
LEFT JOIN entities n ON n.id = coalesce(e.merged_into, e.id)
WHERE d.type IN ('commitment', 'action_item')
  AND d.as_of >= CAST(strftime('%s', :since) AS INTEGER) * 1000
ORDER BY d.as_of DESC;""",
    ),
    (
        "Decisions, preferences and corrections",
        "What was decided, preferred or corrected, newest first, optionally only those naming a word.",
        {"word": "a word to look for, or '' for all"},
        """SELECT d.type, d.content, datetime(d.as_of / 1000, 'unixepoch') AS at, d.source_event_id
FROM derived_events d
WHERE d.type IN ('decision', 'preference_stated', 'correction')
  AND (:word = '' OR d.content LIKE '%' || :word || '%')
ORDER BY d.as_of DESC;""",
    ),
    (
        "Facts by keyword",
        'Full-text (BM25) search over fact text; FTS5 syntax: words, "exact phrases", OR, prefix*.',
        {"terms": "e.g. 'postgres OR ledger'", "limit": "e.g. 20"},
        """SELECT f.id, datetime(f.as_of / 1000, 'unixepoch') AS at, f.text, f.platform
FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid
WHERE facts_fts MATCH :terms ORDER BY rank LIMIT :limit;""",
    ),
    (
        "Find an entity",
        "Entities whose name or alias contains a text: the step before writing about someone, to reuse them.",
        {"text": "part of a name, handle, email or phone"},
        """SELECT n.id, n.name, n.type, n.mention_count, group_concat(DISTINCT a.alias) AS aliases
FROM entities n LEFT JOIN aliases a ON a.entity_id = n.id
WHERE n.merged_into IS NULL AND (n.normalized LIKE '%' || lower(:text) || '%' OR n.id IN (
      SELECT entity_id FROM aliases WHERE normalized LIKE '%' || lower(:text) || '%'))
GROUP BY n.id ORDER BY n.mention_count DESC LIMIT 20;""",
    ),
    (
        "Who appears with whom",
        "The entities most often named in the same facts as an entity.",
        {"name": "a name or alias"},
        _ENTITY
        + """
SELECT n.name, n.type, c.count AS facts_together, datetime(c.last_seen / 1000, 'unixepoch') AS last_seen
FROM entity_cooccurrences c
JOIN entities n ON n.id = CASE WHEN c.entity_a IN (SELECT id FROM target) THEN c.entity_b ELSE c.entity_a END
WHERE c.entity_a IN (SELECT id FROM target) OR c.entity_b IN (SELECT id FROM target)
ORDER BY c.count DESC LIMIT 20;""",
    ),
    (
        "Merge candidates waiting for a person",
        "Entity pairs that may be the same, with the reason (accept with `nexus-memory candidates accept ID`).",
        {},
        """SELECT mc.id, b.name AS maybe, a.name AS same_as, mc.confidence, mc.reason
FROM merge_candidates mc JOIN entities a ON a.id = mc.entity_a_id JOIN entities b ON b.id = mc.entity_b_id
WHERE mc.status = 'pending' ORDER BY mc.confidence DESC;""",
    ),
]


def queries_markdown(data_dir: Path) -> str:
    path = shlex.quote(str(data_dir))
    lines = [
        "# Read patterns",
        "",
        "Plain SQL over the four stores (tables: SCHEMA.md). Open them read-only with the sqlite3 shell:",
        "",
        "```sh",
        f"DATA_DIR={path}",
        'sqlite3 -readonly "$DATA_DIR/memory.db" \\',
        "  -cmd \"ATTACH '$DATA_DIR/events.db' AS events\" \\",
        "  -cmd \"ATTACH '$DATA_DIR/identity.db' AS identity\" \\",
        "  -cmd \"ATTACH '$DATA_DIR/embeddings.db' AS embeddings\"",
        "```",
        "",
        "then give the named parameters, e.g. `.param set :name 'Dana Whitfield'`, and paste a query.",
        "Names compare in their normalised form (lower case, single spaces). For meaning rather than",
        "words, use the `search` script; write only through the `write` script.",
    ]
    for title, purpose, params, sql in QUERIES:
        lines += ["", f"## {title}", "", purpose, ""]
        lines += [f"- `:{name}`: {meaning}" for name, meaning in params.items()] or ["No parameters."]
        lines += ["", "```sql", sql, "```"]
    return "\n".join(lines) + "\n"


def sql_blocks(markdown: str) -> list[str]:
    """The ```sql blocks of a markdown text, in order."""
    return re.findall(r"```sql\n(.*?)\n```", markdown, flags=re.DOTALL)


# --- the scripts ---------------------------------------------------------------------------------

_SEARCH = """\
# Search memory (semantic + keyword + entity, fused): facts, observations and mental models,
# each with its date, platform and source event ids. Prints the recall tool's JSON; exit 1 on error.
#   search "what did Dana decide about the ledger" [--max-results N] [--entity NAME]
#          [--after YYYY-MM-DD] [--before YYYY-MM-DD] [--platform P] [--budget {budgets}]
#          [--scope {scopes}]
exec {command} skills search "$@"
"""

_WRITE = """\
# Write to memory through the agent tools, with what a write sets off: the fact's embedding,
# entity co-occurrences, merge candidates for new names. Prints the tool's JSON; on a bad call
# one line on stderr and exit 2.
#   write remember "Sarah's birthday is on 4 July" [--entity Sarah ...]
#   write correct FACT_ID "Sarah's birthday is on 14 July" [--reason "she said so"]
#   write confirm FACT_ID
case "$1" in
  remember|correct|confirm) ;;
  *) echo "usage: write remember TEXT | correct FACT_ID TEXT | confirm FACT_ID" >&2; exit 2 ;;
esac
exec {command} "$@" --json
"""

SCRIPTS = {"search": _SEARCH, "write": _WRITE}


def script_text(name: str, data_dir: Path, command: list[str]) -> str:
    """A script of the folder: the stores it uses by default, then the `nexus-memory` command it runs."""
    return (
        "#!/bin/sh\n"
        f"default_data_dir={shlex.quote(str(data_dir))}\n"
        'export NEXUS_DATA_DIR="${NEXUS_DATA_DIR:-$default_data_dir}"\n'
        + SCRIPTS[name].format(
            command=shlex.join(command),
            budgets="|".join(RECALL_PARAMETERS["budget"].choices),
            scopes=" ".join(RECALL_PARAMETERS["scope"].choices),
        )
    )


def export(stores: Stores, directory: Path) -> list[Path]:
    """Write the skills folder for these stores into `directory`; returns the files written."""
    from nexus_memory.core.command import installed_command

    directory.mkdir(parents=True, exist_ok=True)
    data_dir = stores.data_dir.resolve()
    command = installed_command()
    files = {
        "SCHEMA.md": schema_markdown(stores),
        "QUERIES.md": queries_markdown(data_dir),
        "search": script_text("search", data_dir, command),
        "write": script_text("write", data_dir, command),
        "DATA_DIR": f"{data_dir}\n",
    }
    written = []
    for name, text in files.items():
        path = directory / name
        path.write_text(text)
        if name in SCRIPTS:
            path.chmod(0o755)
        written.append(path)
    return written


# --- what the scripts run ------------------------------------------------------------------------


def day_ms(day: str, *, end: bool = False) -> int:
    """'YYYY-MM-DD' as unix ms at the start (or the last millisecond) of that UTC day."""
    try:
        start = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"{day!r} is not a day as YYYY-MM-DD") from None
    return int(start.timestamp() * 1000) + (86_400_000 - 1 if end else 0)


def search_arguments(
    query: str, *, after: str | None = None, before: str | None = None, **filters: Any
) -> dict[str, Any]:
    """The recall tool's arguments for a search: the query, the recall `filters` given (None: not given), and
    the days `after` and `before` as time_after / time_before; the tool validates them."""
    arguments: dict[str, Any] = {"query": query}
    arguments.update({key: value for key, value in filters.items() if value is not None})
    if after:
        arguments["time_after"] = day_ms(after)
    if before:
        arguments["time_before"] = day_ms(before, end=True)
    return arguments
