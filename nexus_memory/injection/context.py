"""Memory injection: the markdown block put in front of an agent's prompt (docs/recall.md, "Injection").

`get_context(stores, prompt, session_id=...)` packs, within `max_tokens`, the memory hierarchy over
memory from *other* sessions (see pack.py: mental models, then observations, a stale one
followed by its newer facts, then facts not already shown, a short message whole in place of its facts
while they fit in a share of the budget), keeping only evidence, not noise:

    ## Mental models
    ### Caroline's career
    - 27 June 2023: Lately, Caroline has been looking into counseling and mental health as a career.

    ## Observations
    ### Alice Chen — home: boston, denver
    Alice Chen used to live in Boston until May 2023; since June 2023 Alice Chen lives in Denver.
    - 14 June 2023: Alice Chen moved to Denver for a new job at Acme.

    ## Relevant memory
    ### 10 May 2023
    - Tyler works at Anthropic
    - Tyler is moving to Oakland next month (in June 2023)
    ### 12 May 2023
    - Tyler: Found a flat in Oakland! Two bedrooms, and the office is a bike ride away.

    ## Said moments ago (no facts of it yet)
    - Tyler: we signed the lease on the Oakland flat today (2026-11-26, imessage)

    ## Weekly insight
    <the newest version of the newest mental model with subtype 'reflection'>

Noise rule (inject nothing rather than noise): only items that are evidence for the prompt are
injected (`nexus_memory.injection.relevance`: a strong semantic match, or a weaker one that a named entity, a
rare shared word or the prompt's time window confirms; a prompt about names this memory has never
seen gets only strong matches). Recall always returns *some* nearest neighbours; the gate decides.
When no fact passes, the answer is "" (the reflection alone is not injected: it is query-independent
and would be repeated before every turn).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.stores import Stores
from nexus_memory.core.tokens import estimate_tokens
from nexus_memory.identity.participant import Participant
from nexus_memory.injection.pack import SECTION_HEADINGS, ContextItem, build_context
from nexus_memory.recall.results import touch_results

__all__ = ["context_block", "format_context", "get_context", "latest_reflection"]

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 800
# No cap on facts: the token budget decides how many. A cap (with its one-fact-per-turn rule) left most of
# the budget unused: on LoCoMo dev, five facts filled ~120 of 800 tokens, and the answer was in the block for
# fewer questions than the best BM25 turns held (docs/recall.md, "Answer in context").
DEFAULT_MAX_FACTS: int | None = None


def get_context(
    stores: Stores,
    prompt: str,
    *,
    session_id: str | None = None,
    max_facts: int | None = DEFAULT_MAX_FACTS,
    reference_time: int | None = None,
    embedder: object | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    tags: Sequence[str] | None = None,
    strict: bool = False,
    participants: Sequence[Participant] = (),
) -> str:
    """The memory block for `prompt`, or "" when nothing relevant is remembered.

    Relevant facts fill `max_tokens` (`max_facts`, when given, caps them, one per source turn).
    Facts of the current `session_id` are excluded (the conversation already holds them); `tags`
    scopes mental models (see recall); `participants`, the delivered handles of the people in the
    conversation, say who a name in the prompt means (a John this memory never met is not the John it
    knows: `nexus_memory.recall.participants`). Injected items count as accessed. By default it never raises:
    injection must not break an agent turn, so a failure is logged and answered with "". `strict=True`
    lets the error through (tests, callers that must tell "nothing relevant" from "recall failed").
    """
    try:
        items, block = context_block(
            stores,
            prompt,
            max_tokens=max_tokens,
            session_id=session_id,
            max_facts=max_facts,
            reference_time=reference_time,
            embedder=embedder,
            tags=tags,
            participants=participants,
        )
        if items:
            touch_results(stores, [item.result for item in items])
        return block
    except Exception:  # see docstring: log, inject nothing
        if strict:
            raise
        log.exception("get_context failed; injecting no memory")
        return ""


def context_block(
    stores: Stores, prompt: str, *, max_tokens: int = DEFAULT_MAX_TOKENS, **options: Any
) -> tuple[list[ContextItem], str]:
    """The packed items and the block as injected ("" when no item is relevant), the whole block, the weekly
    insight included, within `max_tokens`; nothing counted as accessed. `options` as for `build_context`."""
    reflection = latest_reflection(stores.conn)
    reserved = estimate_tokens(_reflection_section(reflection)) + 2 if reflection else 0
    items = build_context(stores, prompt, max_tokens=max_tokens - reserved, **options)
    return items, format_context(items, reflection) if items else ""


def format_context(items: list[ContextItem], reflection: str | None) -> str:
    """One section per layer present (models, observations, facts, events not processed yet), then the
    latest reflection."""
    lines: list[str] = []
    for kind, heading in SECTION_HEADINGS.items():
        chosen = [item for item in items if item.type == kind]
        if not chosen:
            continue
        lines += ([""] if lines else []) + [heading]
        for item in chosen:
            lines += ([f"### {item.title}"] if item.title else []) + item.lines
    if reflection:
        lines += ["", _reflection_section(reflection)]
    return "\n".join(lines) + "\n"


def _reflection_section(reflection: str) -> str:
    return f"## Weekly insight\n{reflection.strip()}"


def latest_reflection(conn: db.Connection) -> str | None:
    """Description of the newest current (not superseded by a newer version) reflection model."""
    row = conn.execute(
        """SELECT m.description FROM mental_models m
           WHERE m.subtype = 'reflection'
             AND NOT EXISTS (SELECT 1 FROM mental_models c WHERE c.parent_id = m.id)
           ORDER BY m.updated_at DESC, m.id DESC LIMIT 1"""
    ).fetchone()
    return row[0] if row else None
