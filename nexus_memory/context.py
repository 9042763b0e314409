"""Memory injection: the markdown block put in front of an agent's prompt (docs/recall.md, "Injection").

`get_context(stores, prompt, session_id=...)` runs a mid-budget recall over facts from *other*
sessions, keeps only the results that are evidence rather than noise, and formats

    ## Relevant memory
    - Tyler works at Anthropic (2023-05-10)

    ## Latest reflection
    <the newest version of the newest mental model with subtype 'reflection'>

Noise rule (inject nothing rather than noise): a fact is injected only when
  - its cosine similarity to the prompt is >= `min_score` (default 0.35; for MiniLM unrelated
    sentences score about 0.0-0.2 and paraphrases above 0.5), or
  - it shares a non-stopword term with the prompt (keyword hit), or it is linked to an entity the
    prompt names (entity hit), or the prompt asked for a time window ("what did I do yesterday").
The semantic strategy always returns *some* nearest neighbours; only they are held to the threshold.
When no fact passes, the answer is "" (the reflection alone is not injected: it is query-independent
and would be repeated before every turn).
"""

from __future__ import annotations

import logging

from nexus_memory import db
from nexus_memory.ids import day_of
from nexus_memory.recall.engine import recall
from nexus_memory.recall.results import RecallResult, touch_results
from nexus_memory.stores import Stores

log = logging.getLogger(__name__)

MIN_SEMANTIC_SIM = 0.35
_EVIDENCE = ("keyword", "entity", "recency")


def get_context(
    stores: Stores,
    prompt: str,
    *,
    session_id: str | None = None,
    max_facts: int = 5,
    reference_time: int | None = None,
    embedder: object | None = None,
    min_score: float = MIN_SEMANTIC_SIM,
    strict: bool = False,
) -> str:
    """The memory block for `prompt`, or "" when nothing relevant is remembered.

    Facts of the current `session_id` are excluded (the conversation already holds them). Injected
    facts count as accessed. By default it never raises: injection must not break an agent turn, so
    a failure is logged and answered with "". `strict=True` lets the error through (tests, callers
    that must tell "nothing relevant" from "recall failed").
    """
    try:
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
        relevant = [r for r in response.results if is_relevant(r, min_score)][:max_facts]
        if not relevant:
            return ""
        touch_results(stores, relevant)
        return format_context(relevant, latest_reflection(stores.conn))
    except Exception:
        if strict:
            raise
        log.exception("get_context failed; injecting no memory")
        return ""


def is_relevant(result: RecallResult, min_score: float = MIN_SEMANTIC_SIM) -> bool:
    """The noise rule of the module docstring."""
    if any(strategy in result.ranks for strategy in _EVIDENCE):
        return True
    similarity = result.metadata.get("scores", {}).get("semantic")
    return similarity is not None and similarity >= min_score


def format_context(facts: list[RecallResult], reflection: str | None) -> str:
    """'## Relevant memory' bullets (with dates), then '## Latest reflection' when there is one."""
    lines = ["## Relevant memory"]
    lines += [f"- {' '.join(r.text.split())}{_date_suffix(r.as_of)}" for r in facts]
    if reflection:
        lines += ["", "## Latest reflection", reflection.strip()]
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
