"""The embedder resource: the sentence-transformers model that embeds new rows."""

from __future__ import annotations

from nexus_memory.embeddings.model import Embedder, get_embedder
from resources.settings import SettingsResource


class EmbedderResource(SettingsResource):
    """The sentence-transformers model that embeds new rows (default all-MiniLM-L6-v2, offline)."""

    def get(self) -> Embedder:
        return get_embedder(settings=self.settings())
