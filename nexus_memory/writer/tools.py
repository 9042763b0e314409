"""The writer's tools (docs/writer.md): one implementation for the LLM tool loop and the offline extractor.

`recall`, `insert_fact`, `create_entity`, `link_fact_entity`, `insert_causal_link`, `propose_merge`.
Every tool validates its arguments and raises `ToolError` with a message an LLM can act on.
`insert_fact` is facts.insert, the one way a fact is stored (the agents' too): it also guards against
near-duplicates (Jaccard >= 0.75 in the same time neighbourhood), so a rerun never adds a fact twice
whatever the caller does.
"""

from __future__ import annotations

import re
from typing import Any

from nexus_memory.core.ids import now_ms
from nexus_memory.core.stores import Stores
from nexus_memory.core.tooling import ToolError  # the one tool error, also for callers importing it from here
from nexus_memory.facts.insert import insert_fact
from nexus_memory.identity import store as identity

# The recall the writer's model is offered (writer/llm/model_tools.py): what it looks up before it writes.
WRITER_SCOPES = ("facts", "entities", "observations")
WRITER_DEFAULT_SCOPE = ("facts",)
WRITER_DEFAULT_MAX_RESULTS = 10
WRITER_MAX_RESULTS = 50


class WriterTools:
    """The write tools bound to one open transaction on the stores and one writer run."""

    def __init__(
        self, stores: Stores, writer_run_id: str, episode_id: str | None = None, writer: str = "offline"
    ) -> None:
        self.stores = stores
        self.conn = stores.conn
        self.writer_run_id = writer_run_id
        self.episode_id = episode_id
        self.writer = writer
        self.facts_written: list[str] = []
        self.entity_mentions: dict[str, int] = {}

    # -- read -------------------------------------------------------------------------------
    def recall(self, query: str, **filters: Any) -> list[dict[str, Any]]:
        """Search memory (the recall engine) for dedup, related facts and entity lookups.

        `filters` are recall()'s parameters (recall/arguments.py) with the writer's defaults: scope
        WRITER_DEFAULT_SCOPE, max_results WRITER_DEFAULT_MAX_RESULTS (held to 1..WRITER_MAX_RESULTS), and
        recall()'s budget for one that is not a budget. Dates in the query are words here, and nothing
        found counts as accessed."""
        from nexus_memory.recall import recall
        from nexus_memory.recall.arguments import RECALL_PARAMETERS

        if not isinstance(query, str) or not query.strip():
            raise ToolError("recall needs a non-empty 'query' string")
        budget = RECALL_PARAMETERS["budget"]
        max_results = int(filters.get("max_results", WRITER_DEFAULT_MAX_RESULTS))
        response = recall(
            self.stores,
            query,
            **{
                **filters,
                "scope": filters.get("scope") or list(WRITER_DEFAULT_SCOPE),
                "max_results": max(1, min(max_results, WRITER_MAX_RESULTS)),
                "budget": filters["budget"] if filters.get("budget") in budget.choices else budget.default,
            },
            touch=False,
            parse_dates=False,
        )
        return [
            {
                "id": r.id,
                "type": r.type,
                "text": r.text,
                "as_of": r.as_of,
                "score": round(r.score, 4),
                "entities": r.entities,
            }
            for r in response.results
        ]

    # -- write ------------------------------------------------------------------------------
    def insert_fact(
        self,
        text: str,
        as_of: int,
        ingested_at: int | None = None,
        source_event_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        context: str | None = None,
        about: tuple[int, int] | None = None,
    ) -> dict[str, Any]:
        """Store a new fact unless a near-duplicate exists (facts.insert). Returns {fact_id, status}.

        `as_of` is when it was said, `about` the (first, last) ms of the time its text names, if any."""
        result = insert_fact(
            self.conn,
            text,
            as_of,
            metadata=metadata,
            provenance={"writer": self.writer, "writer_run_id": self.writer_run_id, "episode_id": self.episode_id},
            source_event_id=source_event_id,
            ingested_at=ingested_at,
            about=about,
            context=context,
        )
        if result["status"] == "inserted":
            self.facts_written.append(result["fact_id"])
        return result

    def create_entity(
        self, name: str, type: str, normalized: str | None = None, source: str = "inferred"
    ) -> dict[str, Any]:
        """Create an entity, or return the live one with the same normalised name and type (or any type,
        when a merge made the name known: a person accepted that it names that entity)."""
        if not isinstance(name, str) or not name.strip():
            raise ToolError("create_entity needs a non-empty 'name'")
        if not isinstance(type, str) or not re.fullmatch(r"[a-z_]{2,40}", type):
            raise ToolError("'type' must be a lower-case word such as person, organization, email, phone")
        if source not in ("inferred", "user", "import"):
            raise ToolError("'source' must be inferred, user or import (delivery entities come from deliveries)")
        existing = identity.find_entities(self.conn, normalized or name, type=type) or identity.known_by_merge(
            self.conn, normalized or name
        )
        if existing:
            return {"entity_id": existing[0].id, "status": "existing"}
        entity_id = identity.create_entity(self.conn, name, type, source=source, normalized=normalized)
        return {"entity_id": entity_id, "status": "created"}

    def link_fact_entity(self, fact_id: str, entity_id: str) -> dict[str, Any]:
        """Link a fact to an entity and count co-occurrence with the fact's other entities."""
        return self.link_fact_entities(fact_id, [entity_id])[0]

    def link_fact_entities(self, fact_id: str, entity_ids: list[str]) -> list[dict[str, Any]]:
        """`link_fact_entity` for each entity in turn, in a few statements: one {status, entity_id} each.

        Each new link counts one mention of its entity and one co-occurrence with every entity the fact
        was linked to before it (a link already there counts nothing)."""
        fact = self.conn.execute("SELECT as_of FROM facts WHERE id = ?", (fact_id,)).fetchone()
        if fact is None:
            raise ToolError(f"unknown fact_id {fact_id!r}")
        for entity_id in entity_ids:
            if identity.get_entity(self.conn, entity_id) is None:
                raise ToolError(f"unknown entity_id {entity_id!r}")
        as_of = fact["as_of"]
        linked = {r[0] for r in self.conn.execute("SELECT entity_id FROM fact_entities WHERE fact_id = ?", (fact_id,))}
        results: list[dict[str, Any]] = []
        pairs: list[tuple[str, str]] = []
        new: list[str] = []
        for entity_id in (identity.canonical_id(self.conn, e) for e in entity_ids):
            if entity_id in linked:
                results.append({"status": "already_linked", "entity_id": entity_id})
                continue
            pairs += [(entity_id, other) for other in linked]
            linked.add(entity_id)
            new.append(entity_id)
            results.append({"status": "linked", "entity_id": entity_id})
        self.conn.executemany(
            "INSERT INTO fact_entities (fact_id, entity_id, as_of) VALUES (?, ?, ?)",
            [(fact_id, entity_id, as_of) for entity_id in new],
        )
        identity.count_cooccurrences(self.conn, pairs, as_of)
        self.conn.executemany(
            "UPDATE entities SET mention_count = mention_count + 1, last_seen = max(coalesce(last_seen, 0), ?)"
            " WHERE id = ?",
            [(as_of, entity_id) for entity_id in new],
        )
        for entity_id in new:
            self.entity_mentions[entity_id] = self.entity_mentions.get(entity_id, 0) + 1
        return results

    def insert_causal_link(self, from_fact_id: str, to_fact_id: str, strength: float) -> dict[str, Any]:
        """Record that one fact caused another (strength 0..1)."""
        if from_fact_id == to_fact_id:
            raise ToolError("a fact cannot cause itself")
        if not isinstance(strength, int | float) or not 0.0 <= float(strength) <= 1.0:
            raise ToolError("'strength' must be a number between 0 and 1")
        for fact_id in (from_fact_id, to_fact_id):
            if not self.conn.execute("SELECT 1 FROM facts WHERE id = ?", (fact_id,)).fetchone():
                raise ToolError(f"unknown fact_id {fact_id!r}")
        self.conn.execute(
            """INSERT INTO causal_links (from_fact_id, to_fact_id, strength, created_at) VALUES (?, ?, ?, ?)
               ON CONFLICT (from_fact_id, to_fact_id) DO UPDATE SET strength = max(strength, excluded.strength)""",
            (from_fact_id, to_fact_id, float(strength), now_ms()),
        )
        return {"status": "linked"}

    def propose_merge(self, entity_a_id: str, entity_b_id: str, confidence: float, reason: str) -> dict[str, Any]:
        """Propose that entity b is entity a; only exact email/phone matches above 0.99 auto-merge."""
        if not isinstance(confidence, int | float) or not 0.0 <= float(confidence) <= 1.0:
            raise ToolError("'confidence' must be a number between 0 and 1")
        if not isinstance(reason, str) or not reason.strip():
            raise ToolError("propose_merge needs a 'reason'")
        try:
            return identity.propose_merge(self.conn, entity_a_id, entity_b_id, float(confidence), reason)
        except identity.MergeError as exc:
            raise ToolError(str(exc)) from exc
