"""Fresh events: what was said seconds ago, found by its words before the writer has made facts of it.

An event recorded live (record_events, `ingest -`) reaches facts and vectors only when the pipeline has
run for its partition. Until then recall (scope `events`, in the default scope) and the context block
search it here: among the ledger's newest FRESH_WINDOW rows, those the writer has not processed yet (no
`memory_processing_log` row) and no fact is drawn from, holding at least half of the query's search terms
(`keyword.extract_terms`, as whole words). Best first: most terms held, then newest. Once the writer
has processed an event it leaves this list, and its facts answer instead; a store whose events are all
processed gets nothing from here, so the other scopes' results are unchanged.

The cost is bounded whatever the store's size: a look at FRESH_WINDOW rows by rowid (each an index probe of
the processing log, and of the facts for those it has not seen), a substring test per term in SQL on the
rows left, and the tokens of the few that pass.
"""

from __future__ import annotations

import math
from typing import Any

from nexus_memory.core import db
from nexus_memory.recall import keyword
from nexus_memory.recall.filters import Filters
from nexus_memory.recall.prompt import Prompt
from nexus_memory.recall.results import RecallResult

FRESH_WINDOW = 2_000  # newest ledger rows looked at: a live backlog the pipeline has not caught up with
MIN_TERM_SHARE = 0.5  # of the query's terms an event must hold


def fresh_slots(max_results: int) -> int:
    """How many of `max_results` fresh events may take: a quarter, at least one."""
    return max(1, max_results // 4)


def fresh_events(conn: db.Connection, prompt: Prompt, filters: Filters, limit: int) -> list[RecallResult]:
    """Unprocessed recent events holding at least half of `prompt`'s terms, best first, at most `limit`,
    as results of type "event" (their source event is themselves). Time and place filters apply; an
    entity filter matches none (the writer links events to entities)."""
    terms = keyword.like_terms(prompt.terms)  # its longest few
    clause = filters.event_sql("e")
    if not terms or clause is None or limit <= 0:
        return []
    where, args = clause
    needed = max(1, math.ceil(MIN_TERM_SHARE * len(terms)))
    held_sql, held_args = _terms_held_sql(terms)
    # SQL counts substrings of the lower-cased text (lowered once per row) to keep the rows read few;
    # whole words decide below.
    rows = conn.execute(
        f"""WITH recent AS MATERIALIZED (
                SELECT e.rowid AS r, lower(e.content) AS lowered
                FROM (SELECT rowid AS r FROM events ORDER BY rowid DESC LIMIT ?) w JOIN events e ON e.rowid = w.r
                WHERE NOT EXISTS (SELECT 1 FROM memory_processing_log l WHERE l.event_id = e.id)
                  AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.source_event_id = e.id) AND {where})
            SELECT e.id, e.platform, e.sender_id, e.sender_name, e.thread_id, e.session_id, e.direction,
                   e.content, e.as_of, e.source, h.held
            FROM (SELECT r, {held_sql} AS held FROM recent) h JOIN events e ON e.rowid = h.r
            WHERE h.held >= ? ORDER BY h.held DESC, e.rowid DESC LIMIT ?""",
        [FRESH_WINDOW, *args, *held_args, needed, 4 * limit],
    ).fetchall()
    wanted = set(terms)
    held = [(len(wanted & set(keyword.tokenize(r["content"]))), r) for r in rows]
    best = sorted((pair for pair in held if pair[0] >= needed), key=lambda pair: -pair[0])[:limit]
    return [_result(row, count / len(terms), rank) for rank, (count, row) in enumerate(best, start=1)]


def _terms_held_sql(terms: list[str]) -> tuple[str, list[str]]:
    """An SQL sum over `lowered` (SQLite's lower(): ASCII only): how many of `terms` it holds, and its arguments."""
    parts, args = [], []
    for term in terms:
        if term.isascii():
            parts.append("(instr(lowered, ?) > 0)")
            args.append(term)
        else:  # a capitalised non-ASCII word keeps its capital there: looked for as written too
            parts.append("(instr(lowered, ?) > 0 OR instr(lowered, ?) > 0)")
            args += [term, term.capitalize()]
    return " + ".join(parts), args


def _result(row: Any, share: float, rank: int) -> RecallResult:
    return RecallResult(
        id=row["id"],
        type="event",
        text=row["content"],
        score=round(share, 6),
        as_of=row["as_of"],
        source_event_ids=[row["id"]],
        entities=[],
        ranks={"fresh": rank},
        platform=row["platform"],
        thread_id=row["thread_id"],
        session_id=row["session_id"],
        metadata={
            "scores": {"fresh": round(share, 6)},
            "sender_id": row["sender_id"],
            "sender_name": row["sender_name"],
            "direction": row["direction"],
            "source": row["source"],
        },
    )
