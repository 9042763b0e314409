"""The weekly reflection: a look back over the week, saved as a protected mental model that get_context
appends as "Weekly insight".

It runs at most once per 6 days, and only when at least 3 facts arrived (were written to memory) in the
last 7 days. Offline it is a deterministic digest of the week: the most active entities, what changed
(conflicts found and corrections made), and the open action items, commitments and decisions. With an LLM
configured, the model turns the same digest into a few sentences of prose (one
`LLMClient.structured_call`); prose with a sentence the digest does not hold (`facts/grounding.py`, the
writer's rule) counts as a failure: the digest is saved instead and the failure reported. Each
reflection is a new version (parent_id) of the one before, so only the newest is current; mental models
never decay.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.ids import day_of, now_ms, ulid
from nexus_memory.core.stores import Stores
from nexus_memory.facts.grounding import Source, date_words, ungrounded
from nexus_memory.facts.state import hidden_sql
from nexus_memory.lifecycle import runs
from nexus_memory.llm.client import Budget, LLMClient, LLMError, Usage

DAY_MS = 86_400_000
MIN_DAYS_BETWEEN = 6
WINDOW_DAYS = 7
MIN_FACTS = 3
TOP_ENTITIES = 5
MAX_ITEMS = 10  # action items / changes listed
SUBTYPE = "reflection"
OPEN_KINDS = ("action_item", "commitment", "decision")


@dataclass
class ReflectionReport:
    status: str  # 'written' or 'skipped'
    reason: str = ""
    mental_model_id: str | None = None
    facts_in_week: int = 0
    writer: str = "offline"
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def reflect(stores: Stores, *, now: int | None = None, use_llm: bool | None = None) -> ReflectionReport:
    """Write this week's reflection unless one was written in the last 6 days or fewer than 3 facts arrived."""
    started = time.perf_counter()
    now = now_ms() if now is None else now
    conn, settings = stores.conn, stores.settings
    llm = settings.llm_enabled if use_llm is None else use_llm
    report = ReflectionReport("skipped")
    previous = latest(conn)
    start = now - WINDOW_DAYS * DAY_MS
    report.facts_in_week = conn.execute(
        f"SELECT count(*) FROM facts f WHERE f.created_at > ? AND f.created_at <= ? AND NOT {hidden_sql('f')}",
        (start, now),
    ).fetchone()[0]
    if previous is not None and now - previous[1] < MIN_DAYS_BETWEEN * DAY_MS:
        report.reason = f"the last reflection is {(now - previous[1]) / DAY_MS:.1f} days old (at most one per 6 days)"
    elif report.facts_in_week < MIN_FACTS:
        report.reason = f"{report.facts_in_week} facts arrived in the last 7 days (at least {MIN_FACTS} needed)"
    else:
        digest = weekly_digest(conn, start, now)
        text = render_digest(digest)
        if llm:
            try:
                text = _prose(stores, digest, text)
                report.writer = f"llm:{settings.llm_model_for('reflection')}"
            except LLMError as exc:
                report.failures.append(str(exc))
        report.status = "written"
        report.mental_model_id = _save(conn, text, digest, previous[0] if previous else None, now)
    report.seconds = round(time.perf_counter() - started, 3)
    with db.transaction(conn):
        runs.record_run(conn, "reflection", now, now_ms(), report.as_dict())
    return report


def latest(conn: db.Connection) -> tuple[str, int] | None:
    """(id, created_at) of the current reflection."""
    row = conn.execute(
        """SELECT m.id, m.created_at FROM mental_models m WHERE m.subtype = ?
           AND NOT EXISTS (SELECT 1 FROM mental_models c WHERE c.parent_id = m.id)
           ORDER BY m.created_at DESC, m.id DESC LIMIT 1""",
        (SUBTYPE,),
    ).fetchone()
    return (row[0], row[1]) if row else None


def weekly_digest(conn: db.Connection, start: int, end: int) -> dict[str, Any]:
    """What the week held: counts, the most active entities, changes, open items (ids and texts)."""
    window = (start, end)
    facts, platforms = conn.execute(
        f"""SELECT count(*), count(DISTINCT f.platform) FROM facts f
            WHERE f.created_at > ? AND f.created_at <= ? AND NOT {hidden_sql("f")}""",
        window,
    ).fetchone()
    active = conn.execute(
        f"""SELECT fe.entity_id, count(*) AS n FROM facts f JOIN fact_entities fe ON fe.fact_id = f.id
            JOIN entities e ON e.id = fe.entity_id
            WHERE f.created_at > ? AND f.created_at <= ? AND NOT {hidden_sql("f")}
              AND e.type NOT IN ('date', 'url') AND NOT e.is_user
            GROUP BY fe.entity_id ORDER BY n DESC, fe.entity_id LIMIT ?""",
        (*window, TOP_ENTITIES),
    ).fetchall()
    changes = conn.execute(
        """SELECT o.text, n.text FROM fact_conflicts c JOIN facts o ON o.id = c.old_fact_id
           JOIN facts n ON n.id = c.new_fact_id WHERE c.created_at > ? AND c.created_at <= ?
           UNION ALL
           SELECT o.text, n.text FROM fact_state s JOIN facts o ON o.id = s.fact_id
           JOIN facts n ON n.id = s.superseded_by
           WHERE s.hidden_reason = 'corrected' AND s.hidden_at > ? AND s.hidden_at <= ? LIMIT ?""",
        (*window, *window, MAX_ITEMS),
    ).fetchall()
    open_items = conn.execute(
        f"""SELECT type, content, as_of FROM derived_events WHERE created_at > ? AND created_at <= ?
            AND type IN ({db.placeholders(OPEN_KINDS)}) ORDER BY as_of DESC, id LIMIT ?""",
        (*window, *OPEN_KINDS, MAX_ITEMS),
    ).fetchall()
    return {
        "start": start,
        "end": end,
        "facts": facts,
        "platforms": platforms,
        "active": [{"entity_id": r[0], "name": display_name(conn, r[0]), "facts": r[1]} for r in active],
        "changes": [{"before": r[0], "after": r[1]} for r in changes],
        "open": [{"type": r[0], "text": r[1], "as_of": r[2]} for r in open_items],
    }


def display_name(conn: db.Connection, entity_id: str) -> str:
    """The entity's name, or for a raw handle the display name it goes by."""
    row = conn.execute("SELECT name, type FROM entities WHERE id = ?", (entity_id,)).fetchone()
    if row["type"] in ("person", "organization", "location", "concept", "project"):
        return row["name"]
    alias = conn.execute(
        "SELECT alias FROM aliases WHERE entity_id = ? AND alias_type IN ('display_name', 'name') ORDER BY alias",
        (entity_id,),
    ).fetchone()
    return alias[0] if alias else row["name"]


def render_digest(digest: dict[str, Any]) -> str:
    """The offline reflection: a few plain lines, the same for the same week."""
    lines = [
        f"Week of {day_of(digest['start'])} to {day_of(digest['end'])}: {digest['facts']} new facts"
        f" from {digest['platforms']} platform{'s' if digest['platforms'] != 1 else ''}."
    ]
    if digest["active"]:
        lines.append("Most active: " + ", ".join(f"{a['name']} ({a['facts']} facts)" for a in digest["active"]) + ".")
    if digest["changes"]:
        lines.append("What changed:")
        lines += [f"- {c['after']} (before: {c['before']})" for c in digest["changes"]]
    if digest["open"]:
        lines.append("Open action items, commitments and decisions:")
        lines += [f"- {o['text']} ({o['type'].replace('_', ' ')}, {day_of(o['as_of'])})" for o in digest["open"]]
    return "\n".join(lines)


_SCHEMA = {
    "type": "object",
    "properties": {"insight": {"type": "string"}},
    "required": ["insight"],
    "additionalProperties": False,
}
_SYSTEM = (
    "You write a short weekly reflection for a personal assistant's memory: 3 to 6 sentences of plain prose "
    "about what mattered this week, what changed, and what is still open. Use only the digest you are given; "
    'do not invent anything. Answer JSON: {"insight": "..."}.'
)
MAX_PROSE_CHARS = 2_000
# What the prose is asked to say of the digest ("what mattered this week, what changed, what is still open").
FRAME_WORDS = "week weekly mattered changed change changes still open"


def _prose(stores: Stores, digest: dict[str, Any], offline_text: str) -> str:
    client = LLMClient.for_operation(stores.settings, "reflection")
    messages = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": offline_text}]
    source = Source([offline_text], [FRAME_WORDS, date_words(digest["start"]), date_words(digest["end"])])
    # No retry: a failed reflection saves the digest instead and reports why.
    result = client.structured_call(
        _SCHEMA, messages, Budget(), Usage(), name="reflection", retries=0, check=lambda a: _check(a, source)
    )
    return " ".join(result.data["insight"].split())[:MAX_PROSE_CHARS]


def _check(answer: dict[str, Any], source: Source) -> None:
    """ValueError when the insight is empty or says what the digest does not."""
    if not answer["insight"].strip():
        raise ValueError("the answer has no insight text")
    if unsaid := ungrounded(answer["insight"], source):
        sentence, found = unsaid[0]
        raise ValueError(f"the insight says what the digest does not: {sentence!r} ({found.why()})")


def _save(conn: db.Connection, text: str, digest: dict[str, Any], parent_id: str | None, now: int) -> str:
    model_id = ulid(now)
    with db.transaction(conn):
        conn.execute(
            """INSERT INTO mental_models (id, name, description, subtype, entity_id, tags, parent_id, is_stale,
                   refresh_trigger, last_refreshed, created_at, updated_at)
               VALUES (?, ?, ?, ?, NULL, ?, ?, 0, 'weekly', ?, ?, ?)""",
            (
                model_id,
                f"Weekly reflection {day_of(digest['start'])} to {day_of(digest['end'])}",
                text,
                SUBTYPE,
                json.dumps(["weekly", "protected"]),
                parent_id,
                now,
                now,
                now,
            ),
        )
    return model_id
