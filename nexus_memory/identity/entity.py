"""An entity: a person, organisation, place or thing that memory knows by a name and a type."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entity:
    """One row of `entities`; `merged_into` names the entity it was merged into, if any."""

    id: str
    name: str
    type: str
    source: str
    merged_into: str | None = None
