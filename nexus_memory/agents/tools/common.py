"""What every agent tool group shares: the call a handler runs in, the argument bounds and schemas they reuse."""

from __future__ import annotations

from nexus_memory.core import db
from nexus_memory.core.stores import Stores
from nexus_memory.core.tooling import ToolError
from nexus_memory.recall.arguments import RECALL_PARAMETERS
from nexus_memory.recall.engine import resolve_entity

MAX_TEXT = 4_000  # characters of a reason
MAX_QUERY = 10_000
MAX_NAME = 256  # an entity name, platform or id argument

QUERY = RECALL_PARAMETERS["query"].json_schema(maxLength=MAX_QUERY)
ENTITY = RECALL_PARAMETERS["entity"].json_schema(maxLength=MAX_NAME)  # a filter: only results about it
FACT_ID = {
    "type": "string",
    "maxLength": MAX_NAME,
    "description": "The id of a fact, as returned by search_memory or recall.",
}
LIMIT = {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many (default 20)."}
ID = {"type": "string", "minLength": 1, "maxLength": MAX_NAME, "description": "Its id, as a list returned it."}


class CallContext:
    """What a handler needs besides its arguments: the stores, and what the caller said about the call."""

    def __init__(
        self, stores: Stores, session_id: str | None, embedder: object | None, reference_time: int | None
    ) -> None:
        self.stores, self.session_id, self.embedder, self.reference_time = stores, session_id, embedder, reference_time

    @property
    def conn(self) -> db.Connection:
        return self.stores.conn


def entity_matches(conn: db.Connection, entity: str) -> list[str]:
    """The live ids an entity argument (name, alias or id) names, best first; ToolError when it names none."""
    matches = resolve_entity(conn, entity)
    if not matches:
        raise ToolError(f"no entity named {entity!r}")
    return matches
