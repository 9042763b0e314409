"""The one way a fact is stored, by the writer's tools and the agents' alike: checked, then inserted unless a
near-duplicate is stored already.

A near-duplicate has nearly the same content words (Jaccard >= 0.75) and an `as_of` within a day, so a
rerun never adds a fact twice whatever the caller does. Which stored facts count (`dedup`):
  - "all facts" for the writer: a fact a person corrected is not brought back by a rerun;
  - "visible facts" for a person's `remember_fact`: a hidden (corrected, decayed) fact does not stand in
    the way of saying it again;
  - "off" for a correction: it is near the fact it corrects by nature (one digit of a phone number), and
    it is written to replace it.
The keyword index (facts_fts) gets its row from a trigger on the insert (schema/memory.sql).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Literal

from nexus_memory.core import db
from nexus_memory.core.ids import now_ms, ulid
from nexus_memory.core.tooling import ToolError
from nexus_memory.core.words import STOPWORDS, word_set
from nexus_memory.facts.state import hidden_sql

DEDUP_JACCARD = 0.75
DEDUP_WINDOW_MS = 24 * 3600 * 1000
MAX_FACT_CHARS = 2000
MAX_AS_OF = 4_102_444_800_000  # 2100-01-01 in unix ms
_WORD = re.compile(r"\w+", re.UNICODE)
# Only the commonest function words (and "us", "really") are left out of the comparison, not the whole list:
# "not", "before", "more", "will" tell facts apart (the whole list merges 3 more of LoCoMo dev's 6,099 facts).
_DEDUP_STOPWORDS = (
    STOPWORDS
    & word_set(
        """
        a an the and or but so of to in on at for with is are was were be been it this that i you he she we they
        me him them my your his her our their just very
        """
    )
) | {"us", "really"}

Dedup = Literal["all facts", "visible facts", "off"]


def content_tokens(text: str) -> set[str]:
    """Lower-cased content words, the unit of the dedup Jaccard."""
    return {w for w in _WORD.findall(text.lower()) if w not in _DEDUP_STOPWORDS}


@functools.lru_cache(maxsize=65_536)
def _fact_tokens(text: str) -> frozenset[str]:
    """content_tokens of a stored fact's text, remembered: the same facts are compared again and again."""
    return frozenset(content_tokens(text))


def jaccard(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def find_duplicate(conn: db.Connection, text: str, as_of: int, *, visible_only: bool = False) -> str | None:
    """The stored fact with the most nearly the same words within a day of as_of (Jaccard >= 0.75), if any;
    with `visible_only`, hidden (corrected, decayed) facts do not count.

    The day either side comes first (the as_of index), then words are compared: a backfill writes in time
    order, so the cost per fact stays that of one busy day however much history is already stored (a keyword
    search over all time first made a backfill quadratic).
    """
    tokens = content_tokens(text)
    if not tokens:
        return None
    # Jaccard is at most the ratio of the two set sizes, so most rows are ruled out by size alone.
    fewest, most = len(tokens) * DEDUP_JACCARD, len(tokens) / DEDUP_JACCARD
    visible = f"AND NOT {hidden_sql('f')}" if visible_only else ""
    best, best_score = None, 0.0
    for fact_id, other in conn.execute(
        f"SELECT f.id, f.text FROM facts f WHERE f.as_of BETWEEN ? AND ? {visible} ORDER BY f.as_of, f.rowid",
        (as_of - DEDUP_WINDOW_MS, as_of + DEDUP_WINDOW_MS),
    ):
        words = _fact_tokens(other)
        if fewest <= len(words) <= most:
            score = jaccard(tokens, words)
            if score >= DEDUP_JACCARD and score > best_score:  # the first of equally close facts
                best, best_score = fact_id, score
    return best


def insert_fact(
    conn: db.Connection,
    text: str,
    as_of: int,
    *,
    metadata: dict[str, Any] | None = None,
    provenance: dict[str, Any] | None = None,
    source_event_id: str | None = None,
    ingested_at: int | None = None,
    about: tuple[int, int] | None = None,
    context: str | None = None,
    platform: str | None = None,
    session_id: str | None = None,
    dedup: Dedup = "all facts",
) -> dict[str, Any]:
    """Store one fact unless a near-duplicate is stored (module docstring); returns {fact_id, status}, the
    status "inserted" or "duplicate" (the stored fact's id). Raises ToolError for a bad argument.

    Its metadata is `provenance` (who wrote it), then the source event's platform, thread, session and
    direction, then `metadata` (the caller's, checked); the platform, thread and session columns are read
    from it, else `platform` and `session_id`. `ingested_at` defaults to the source event's time, else now.
    `as_of` is when the fact was said; `about` the first and last ms of the time its text names, if it names one
    (docs/stores.md, "A fact's two times").
    """
    if not isinstance(text, str) or not text.strip():
        raise ToolError("insert_fact needs a non-empty 'text'")
    if len(text) > MAX_FACT_CHARS:
        raise ToolError(f"fact text is {len(text)} characters; keep facts atomic (< {MAX_FACT_CHARS})")
    if not isinstance(as_of, int) or isinstance(as_of, bool) or not 0 <= as_of < MAX_AS_OF:
        raise ToolError("insert_fact needs 'as_of' as unix milliseconds")
    if about is not None and not _is_span(about):
        raise ToolError("'about' must be (start, end) unix milliseconds with start <= end")
    if metadata is not None and not isinstance(metadata, dict):
        raise ToolError("'metadata' must be an object")
    event = None
    if source_event_id is not None:
        event = conn.execute(
            "SELECT platform, thread_id, session_id, direction, as_of FROM events WHERE id = ?",
            (source_event_id,),
        ).fetchone()
        if event is None:
            raise ToolError(f"unknown source_event_id {source_event_id!r}")
    text = " ".join(text.split())
    if dedup != "off" and (duplicate := find_duplicate(conn, text, as_of, visible_only=dedup == "visible facts")):
        return {"fact_id": duplicate, "status": "duplicate"}
    meta = dict(provenance or {})
    if event is not None:
        meta.update(
            platform=event["platform"],
            thread_id=event["thread_id"],
            session_id=event["session_id"],
            direction=event["direction"],
        )
    meta.update(metadata or {})
    now = now_ms()
    fact_id = ulid(now)
    conn.execute(
        """INSERT INTO facts (id, text, context, as_of, ingested_at, source_event_id, metadata, created_at,
               platform, thread_id, session_id, about_start, about_end)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            fact_id,
            text,
            context,
            as_of,
            ingested_at if ingested_at is not None else (event["as_of"] if event else now),
            source_event_id,
            json.dumps(meta, ensure_ascii=False),
            now,
            meta.get("platform", platform),
            meta.get("thread_id"),
            meta.get("session_id", session_id),
            about[0] if about else None,
            about[1] if about else None,
        ),
    )
    return {"fact_id": fact_id, "status": "inserted"}


def _is_span(about: Any) -> bool:
    """(start, end) unix ms with 0 <= start <= end < MAX_AS_OF."""
    return (
        isinstance(about, tuple | list)
        and len(about) == 2
        and all(isinstance(t, int) and not isinstance(t, bool) for t in about)
        and 0 <= about[0] <= about[1] < MAX_AS_OF
    )
