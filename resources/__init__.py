"""Dagster resources: thin handles on the core library's stores, writer and embedder."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from nexus_memory.config import Settings, load_settings
from nexus_memory.stores import Stores
from nexus_memory.writer.base import EpisodeWriter


class StoresResource(dg.ConfigurableResource):
    """The SQLite stores (events, memory, identity, embeddings) under NEXUS_DATA_DIR."""

    data_dir: str = ""
    inbox_dir: str = ""

    def settings(self) -> Settings:
        overrides = {"data_dir": self.data_dir, "inbox_dir": self.inbox_dir}
        return load_settings(**{k: v for k, v in overrides.items() if v})

    @contextmanager
    def open(self) -> Iterator[Stores]:
        with Stores(self.settings()) as stores:
            yield stores


class WriterResource(dg.ConfigurableResource):
    """Which writer extracts facts: the LLM when NEXUS_LLM_BASE_URL/NEXUS_LLM_MODEL are set, else offline."""

    llm_base_url: str = ""
    llm_model: str = ""

    def get_writer(self) -> EpisodeWriter:
        settings = load_settings()
        base_url = self.llm_base_url or settings.llm_base_url
        model = self.llm_model or settings.llm_model_for("writer")
        if base_url and model:
            from nexus_memory.writer.llm import LLMWriter

            return LLMWriter.from_settings(load_settings(llm_base_url=base_url, llm_model_writer=model))
        from nexus_memory.writer.offline_writer import OfflineWriter

        return OfflineWriter()


class EmbedderResource(dg.ConfigurableResource):
    """The sentence-transformers model that embeds new rows (default all-MiniLM-L6-v2, offline)."""

    model: str = ""
    threads: int = 0

    def get(self):
        from nexus_memory.embeddings import get_embedder

        return get_embedder(self.model or None, threads=self.threads or None)
