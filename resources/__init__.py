"""Dagster resources: thin handles on the core library's stores, writer and embedder.

Each resource carries optional overrides of `Settings` fields (None: the environment's value) and
hands the core one `Settings` built by `load_settings(**overrides)`. `resources_for(settings)` gives
every resource the whole of one Settings, so nothing is read from the environment behind it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import dagster as dg

from nexus_memory.core.config import Settings, load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.model import Embedder, get_embedder
from nexus_memory.writer.base import EpisodeWriter

# Settings a resource may override. The API key is left out on purpose: resource config is shown
# in the UI, so it always comes from OPENAI_API_KEY.
_OVERRIDABLE = (
    "data_dir",
    "inbox_dir",
    "partition_start",
    "embedding_model",
    "torch_threads",
    "query_backend",
    "embed_precision",
    "model_cache_dir",
    "llm_base_url",
    "llm_model",
    "llm_timeout_s",
    "max_content_chars",
)


class _SettingsResource(dg.ConfigurableResource):
    """Optional overrides of Settings fields; an unset (None) field keeps the environment's value."""

    data_dir: str | None = None
    inbox_dir: str | None = None
    partition_start: str | None = None
    embedding_model: str | None = None
    torch_threads: int | None = None
    query_backend: str | None = None
    embed_precision: str | None = None
    model_cache_dir: str | None = None
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_timeout_s: float | None = None
    max_content_chars: int | None = None

    def settings(self) -> Settings:
        overrides = {name: getattr(self, name) for name in _OVERRIDABLE}
        return load_settings(**{name: value for name, value in overrides.items() if value is not None})

    @classmethod
    def from_settings(cls, settings: Settings) -> Self:
        """This resource with every overridable field taken from `settings`."""
        values: dict[str, Any] = {}
        for name in _OVERRIDABLE:
            value = getattr(settings, name)
            values[name] = str(value) if isinstance(value, Path) else value
        return cls(**values)


class StoresResource(_SettingsResource):
    """The SQLite stores (events, memory, identity, embeddings) under the settings' data_dir."""

    @contextmanager
    def open(self) -> Iterator[Stores]:
        with Stores(self.settings()) as stores:
            yield stores


class WriterResource(_SettingsResource):
    """Which writer extracts facts: the LLM when llm_base_url and llm_model are set, else the offline one."""

    def get_writer(self) -> EpisodeWriter:
        settings = self.settings()
        if settings.llm_enabled:
            from nexus_memory.writer.llm import LLMWriter

            return LLMWriter.from_settings(settings)
        from nexus_memory.writer.offline_writer import OfflineWriter

        return OfflineWriter()


class EmbedderResource(_SettingsResource):
    """The sentence-transformers model that embeds new rows (default all-MiniLM-L6-v2, offline)."""

    def get(self) -> Embedder:
        return get_embedder(settings=self.settings())


def resources_for(settings: Settings | None = None) -> dict[str, dg.ConfigurableResource]:
    """The resources of the code location; with `settings`, each carries all of them."""
    if settings is None:
        return {"stores": StoresResource(), "writer": WriterResource(), "embedder": EmbedderResource()}
    return {
        "stores": StoresResource.from_settings(settings),
        "writer": WriterResource.from_settings(settings),
        "embedder": EmbedderResource.from_settings(settings),
    }
