"""Dagster resources: thin handles on the core library's stores, writer, embedder and consolidator.

  settings.py      the base: optional overrides of Settings fields, the rest from the environment
  stores.py        StoresResource, the SQLite stores
  writer.py        WriterResource, the LLM writer or the offline one
  embedder.py      EmbedderResource, the sentence-transformers model
  consolidator.py  ConsolidatorResource, who consolidates and narrates mental models

`resources_for(settings)` gives the settings resources the whole of one Settings, so nothing is read
from the environment behind it.
"""

from __future__ import annotations

import dagster as dg

from nexus_memory.core.config import Settings
from resources.consolidator import ConsolidatorResource
from resources.embedder import EmbedderResource
from resources.settings import SettingsResource
from resources.stores import StoresResource
from resources.writer import WriterResource

__all__ = [
    "ConsolidatorResource",
    "EmbedderResource",
    "SettingsResource",
    "StoresResource",
    "WriterResource",
    "resources_for",
]


def resources_for(settings: Settings | None = None) -> dict[str, dg.ConfigurableResource]:
    """The resources that carry Settings (stores, writer, embedder); with `settings`, each carries all of them."""
    if settings is None:
        return {"stores": StoresResource(), "writer": WriterResource(), "embedder": EmbedderResource()}
    return {
        "stores": StoresResource.from_settings(settings),
        "writer": WriterResource.from_settings(settings),
        "embedder": EmbedderResource.from_settings(settings),
    }
