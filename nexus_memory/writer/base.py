"""What every writer (offline extractor, LLM tool loop) takes and returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from nexus_memory.events import Event

if TYPE_CHECKING:
    from nexus_memory.writer.tools import WriterTools


class WriterFailure(RuntimeError):
    """The writer could not process an episode; nothing of it is kept and it can be rerun."""


@dataclass(frozen=True)
class EpisodeInput:
    """The events to extract from, and earlier events of the thread for context only."""

    episode_id: str | None
    events: list[Event]
    context: list[Event] = field(default_factory=list)


@dataclass
class WriteResult:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: int = 0
    notes: str = ""


class EpisodeWriter(Protocol):
    """Reads an episode and writes facts, entities and links through the tools."""

    name: str

    def write(self, tools: WriterTools, episode: EpisodeInput) -> WriteResult: ...
