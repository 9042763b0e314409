"""Memory injection: the markdown block put in front of an agent's prompt (docs/recall.md, "Injection").

`get_context(stores, prompt, session_id=...)` runs a mid-budget recall over facts from *other*
sessions, keeps only the results that are evidence rather than noise, and formats

    ## Relevant memory
    - Tyler works at Anthropic (2023-05-10)

    ## Weekly insight
    <the newest version of the newest mental model with subtype 'reflection'>

Noise rule (inject nothing rather than noise): only facts that are evidence for the prompt are
injected (`nexus_memory.relevance`: a strong semantic match, or a weaker one that a named entity, a
rare shared word or the prompt's time window confirms; a prompt about names this memory has never
seen gets only strong matches). Recall always returns *some* nearest neighbours; the gate decides.
When no fact passes, the answer is "" (the reflection alone is not injected: it is query-independent
and would be repeated before every turn).
"""

from __future__ import annotations

import logging
from typing import Any

from nexus_memory import db, relevance
from nexus_memory.ids import day_of
from nexus_memory.recall.engine import recall
from nexus_memory.recall.results import RecallResult, touch_results
from nexus_memory.stores import Stores

log = logging.getLogger(__name__)


def get_context(stores: Stores, prompt: str, *, strict: bool = False, **options: Any) -> str:
    """The memory block for `prompt`, or "" when nothing relevant is remembered.

    `options` are those of `context_facts` (session_id, max_facts, reference_time, embedder). Injected
    facts count as accessed. By default it never raises: injection must not break an agent turn, so
    a failure is logged and answered with "". `strict=True` lets the error through (tests, callers
    that must tell "nothing relevant" from "recall failed").
    """
    try:
        relevant = context_facts(stores, prompt, **options)
        if not relevant:
            return ""
        touch_results(stores, relevant)
        return format_context(relevant, latest_reflection(stores.conn))
    except Exception:
        if strict:
            raise
        log.exception("get_context failed; injecting no memory")
        return ""


def context_facts(
    stores: Stores,
    prompt: str,
    *,
    session_id: str | None = None,
    max_facts: int = 5,
    reference_time: int | None = None,
    embedder: object | None = None,
) -> list[RecallResult]:
    """The facts `get_context` injects, best first (none when recall found only noise); touches nothing.

    Facts of the current `session_id` are excluded (the conversation already holds them).
    """
    response = recall(
        stores,
        prompt,
        scope=("facts",),
        exclude_session_id=session_id,
        max_results=max(max_facts * 3, 10),
        budget="mid",
        reference_time=reference_time,
        embedder=embedder,  # type: ignore[arg-type]
        touch=False,
    )
    window = (response.time_after, response.time_before)
    return relevance.evidence(stores.conn, prompt, response.results, window=window)[:max_facts]


def format_context(facts: list[RecallResult], reflection: str | None) -> str:
    """'## Relevant memory' bullets (with dates), then '## Weekly insight' (the latest reflection) if any."""
    lines = ["## Relevant memory"]
    lines += [f"- {' '.join(r.text.split())}{_date_suffix(r.as_of)}" for r in facts]
    if reflection:
        lines += ["", "## Weekly insight", reflection.strip()]
    return "\n".join(lines) + "\n"


def _date_suffix(as_of: int | None) -> str:
    if as_of is None:
        return ""
    return f" ({day_of(as_of)})"


def latest_reflection(conn: db.Connection) -> str | None:
    """Description of the newest current (not superseded by a newer version) reflection model."""
    row = conn.execute(
        """SELECT m.description FROM mental_models m
           WHERE m.subtype = 'reflection'
             AND NOT EXISTS (SELECT 1 FROM mental_models c WHERE c.parent_id = m.id)
           ORDER BY m.updated_at DESC, m.id DESC LIMIT 1"""
    ).fetchone()
    return row[0] if row else None
