"""The offline mental-model report: structured, not narrative, and bounded in size.

    # Caroline's career
    Question: What do we know about Caroline's career?
    ## Who
    ## What we know, by topic      (observations grouped by category, each in time order)
    ## Open commitments            (derived action items and commitments) / ## Decisions
    ## Recent episodes
    ## Sources

Everything comes from bounded queries (at most MAX_OBSERVATIONS observations of at most MAX_LINES
lines, 10 commitments, 5 episodes), so a refresh costs the same on a large store as on a small one.
The text depends only on the store, never on the time of the refresh: refreshing an unchanged model
gives the same text (and so no new version).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.ids import day_month_year_of
from nexus_memory.core.stores import Stores
from nexus_memory.observations import store as observations
from nexus_memory.observations.subjects import load_entities

MAX_OBSERVATIONS = 12
MAX_LINES = 12  # newest fact lines shown per observation
MAX_DERIVED = 10
MAX_EPISODES = 5
MAX_SOURCE_EVENTS = 10
CONTACT_TYPES = ("email", "phone", "handle")


@dataclass
class Report:
    """A report's markdown and what it was built from ((source_type, source_id) pairs)."""

    text: str
    sources: list[tuple[str, str]] = field(default_factory=list)
    fact_ids: list[str] = field(default_factory=list)


def build_report(
    stores: Stores,
    name: str,
    question: str,
    entity_id: str | None,
    *,
    by_relevance: bool = True,
    embedder: Any = None,
) -> Report:
    """The report for a model; `by_relevance` picks observations by the question, else the largest."""
    conn = stores.conn
    report = Report("")
    lines = [f"# {name}", f"Question: {question}" if question else ""]
    if entity_id:
        lines += _who(conn, entity_id)
    chosen = _observations(stores, question, entity_id, by_relevance, embedder)
    facts = observations.fact_rows(conn, [f for o in chosen for f in o["fact_ids"]])
    for obs in chosen:
        obs["first_as_of"] = min((facts[f]["as_of"] for f in obs["fact_ids"] if f in facts), default=0)
    lines += _what_we_know(chosen)
    report.sources += [("observation", o["id"]) for o in chosen]
    report.fact_ids = [f for o in chosen for f in o["fact_ids"]]
    if entity_id:
        derived, derived_lines = _derived(conn, entity_id)
        lines += derived_lines
        report.sources += [("derived_event", d) for d in derived]
        episodes, episode_lines = _episodes(conn, entity_id)
        lines += episode_lines
        report.sources += [("episode", e) for e in episodes]
    lines += _sources(conn, chosen)
    report.text = "\n".join(line for line in lines if line is not None).strip() + "\n"
    return report


def _entity_family(conn: db.Connection, entity_id: str) -> list[str]:
    """The entity and every entity merged into it."""
    return [entity_id, *(r[0] for r in conn.execute("SELECT id FROM entities WHERE merged_into = ?", (entity_id,)))]


def _who(conn: db.Connection, entity_id: str) -> list[str]:
    info = load_entities(conn, [entity_id]).get(entity_id)
    if info is None:
        return ["", "## Who", "(this entity no longer exists)"]
    family = _entity_family(conn, entity_id)
    marks = db.placeholders(family)
    aliases = conn.execute(
        f"SELECT DISTINCT alias, alias_type FROM aliases WHERE entity_id IN ({marks}) ORDER BY alias_type, alias",
        family,
    ).fetchall()
    names = sorted({a for a, t in aliases if t not in CONTACT_TYPES and a != info.display})
    contacts = sorted({f"{a} ({t})" for a, t in aliases if t in CONTACT_TYPES and a.lower() != info.display.lower()})
    facts, first, last = conn.execute(
        f"SELECT count(*), min(as_of), max(as_of) FROM fact_entities WHERE entity_id IN ({marks})", family
    ).fetchone()
    lines = ["", "## Who", f"- {info.display} ({info.type.replace('_', ' ')})"]
    if names:
        lines.append(f"- Also known as: {', '.join(names)}")
    if contacts:
        lines.append(f"- Contact handles: {', '.join(contacts)}")
    if facts:
        lines.append(f"- {facts} facts, from {day_month_year_of(first)} to {day_month_year_of(last)}")
    return lines


def _observations(
    stores: Stores, question: str, entity_id: str | None, by_relevance: bool, embedder: Any
) -> list[dict[str, Any]]:
    """Current observations to report: the question's most relevant ones, or the entity's largest."""
    conn = stores.conn
    if entity_id and not by_relevance:
        found = observations.current_observations(conn, [entity_id])
        found.sort(key=lambda o: (-len(o["fact_ids"]), o["root_id"]))
        return found[:MAX_OBSERVATIONS]
    from nexus_memory.recall import recall  # the read path; imported here to keep this module light

    response = recall(
        stores,
        question,
        scope=("observations",),
        entity=entity_id,
        max_results=MAX_OBSERVATIONS * 2,
        embedder=embedder,
        touch=False,
    )
    ids = [r.id for r in response.results if r.type == "observation"]
    found = {o["id"]: o for o in _current_by_ids(conn, ids)}
    chosen = [found[i] for i in ids if i in found and (entity_id is None or found[i]["entity_id"] == entity_id)]
    return chosen[:MAX_OBSERVATIONS]


def _current_by_ids(conn: db.Connection, run_ids: Sequence[str]) -> list[dict[str, Any]]:
    entities = [
        r[0]
        for part in db.chunked(list(run_ids))
        for r in conn.execute(
            f"SELECT DISTINCT entity_id FROM analysis_runs WHERE id IN ({db.placeholders(part)})", part
        )
    ]
    return [o for o in observations.current_observations(conn, entities) if o["id"] in set(run_ids)]


def _what_we_know(chosen: list[dict[str, Any]]) -> list[str]:
    if not chosen:
        return ["", "## What we know, by topic", "Nothing consolidated yet."]
    groups: dict[str, list[dict[str, Any]]] = {}
    for obs in chosen:
        topic = obs["topic"] or "general"
        category = topic.split(":", 1)[0] if ":" in topic else "other"
        groups.setdefault(category, []).append(obs)
    lines = ["", "## What we know, by topic"]
    for category in groups:  # in the order of their most relevant (or largest) observation
        lines += ["", f"### {category}"]
        for obs in sorted(groups[category], key=_first_date):
            lines += _observation_block(obs)
    return lines


def _first_date(obs: dict[str, Any]) -> tuple[int, str]:
    return obs.get("first_as_of", 0), obs["root_id"]


def _observation_block(obs: dict[str, Any]) -> list[str]:
    """An observation's change sentences and its newest MAX_LINES fact lines, in time order."""
    text_lines = (obs["output_text"] or "").splitlines()
    body = text_lines[1:] if text_lines and " — " in text_lines[0] else text_lines
    changes = [ln for ln in body if not ln.startswith("- ")]
    facts = [ln for ln in body if ln.startswith("- ")]
    stale = " (stale: newer facts not yet consolidated)" if obs["is_stale"] else ""
    lines = [f"**{obs['topic'] or 'general'}** — {len(obs['fact_ids'])} facts{stale}"]
    lines += changes
    if len(facts) > MAX_LINES:
        lines.append(f"- … {len(facts) - MAX_LINES} earlier facts")
    lines += facts[-MAX_LINES:]
    return [*lines, ""]


def _derived(conn: db.Connection, entity_id: str) -> tuple[list[str], list[str]]:
    family = _entity_family(conn, entity_id)
    rows = conn.execute(
        f"""SELECT id, type, content, as_of FROM derived_events WHERE entity_id IN ({db.placeholders(family)})
            AND type IN ('action_item', 'commitment', 'decision') ORDER BY as_of DESC, id LIMIT ?""",
        [*family, MAX_DERIVED],
    ).fetchall()
    lines: list[str] = []
    open_items = [r for r in rows if r["type"] != "decision"]
    decisions = [r for r in rows if r["type"] == "decision"]
    for title, items in (("Open commitments", open_items), ("Decisions", decisions)):
        if items:
            lines += ["", f"## {title}"]
            lines += [
                f"- {day_month_year_of(r['as_of'])} ({r['type'].replace('_', ' ')}): {r['content']}"
                for r in sorted(items, key=lambda r: (r["as_of"], r["id"]))
            ]
    return [r["id"] for r in rows], lines


def _episodes(conn: db.Connection, entity_id: str) -> tuple[list[str], list[str]]:
    family = _entity_family(conn, entity_id)
    rows = conn.execute(
        f"""SELECT ep.id, ep.platform, ep.end_time, ep.event_count,
                   (SELECT content FROM events WHERE id = ep.first_event_id) AS opening
            FROM episode_entity_mentions m JOIN episodes ep ON ep.id = m.episode_id
            WHERE m.entity_id IN ({db.placeholders(family)})
              AND NOT EXISTS (SELECT 1 FROM episodes c WHERE c.parent_id = ep.id)
            ORDER BY ep.end_time DESC, ep.id LIMIT ?""",
        [*family, MAX_EPISODES],
    ).fetchall()
    if not rows:
        return [], []
    lines = ["", "## Recent episodes"]
    for r in rows:
        opening = " ".join((r["opening"] or "").split())[:100]
        lines.append(f"- {day_month_year_of(r['end_time'])}, {r['platform']}, {r['event_count']} events: “{opening}”")
    return [r["id"] for r in rows], lines


def _sources(conn: db.Connection, chosen: list[dict[str, Any]]) -> list[str]:
    if not chosen:
        return []
    fact_ids = [f for o in chosen for f in o["fact_ids"]]
    events = list(
        dict.fromkeys(
            r["source_event_id"] for r in observations.fact_rows(conn, fact_ids).values() if r["source_event_id"]
        )
    )
    lines = [
        "",
        "## Sources",
        f"- Observations: {', '.join(o['id'] for o in chosen)}",
        f"- Facts: {len(set(fact_ids))}",
    ]
    if events:
        shown = ", ".join(sorted(events)[:MAX_SOURCE_EVENTS])
        more = f" and {len(events) - MAX_SOURCE_EVENTS} more" if len(events) > MAX_SOURCE_EVENTS else ""
        lines.append(f"- Source events: {shown}{more}")
    return lines
