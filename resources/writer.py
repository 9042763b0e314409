"""The writer resource: which writer extracts facts from an episode."""

from __future__ import annotations

from nexus_memory.writer.base import EpisodeWriter
from resources.settings import SettingsResource


class WriterResource(SettingsResource):
    """Which writer extracts facts: the LLM when llm_base_url and llm_model are set, else the offline one."""

    def get_writer(self) -> EpisodeWriter:
        settings = self.settings()
        if settings.llm_enabled:
            from nexus_memory.writer.llm import LLMWriter

            return LLMWriter.from_settings(settings)
        from nexus_memory.writer.offline_writer import OfflineWriter

        return OfflineWriter()
