"""The stores resource: the SQLite stores (events, memory, identity, embeddings) under the settings' data_dir."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from nexus_memory.core.stores import Stores
from resources.settings import SettingsResource


class StoresResource(SettingsResource):
    """The SQLite stores (events, memory, identity, embeddings) under the settings' data_dir."""

    @contextmanager
    def open(self) -> Iterator[Stores]:
        with Stores(self.settings()) as stores:
            yield stores
