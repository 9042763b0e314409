"""What every writer (offline extractor, LLM tool loop) takes and returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from nexus_memory.events.ledger import Event

if TYPE_CHECKING:
    from nexus_memory.writer.tools import WriterTools


class WriterFailure(RuntimeError):
    """The writer could not process an episode; nothing of it is kept and it can be rerun.

    It carries what the failed work cost and, for the LLM writer, the mode that failed.
    """

    def __init__(self, message: str, *, prompt_tokens: int = 0, completion_tokens: int = 0, mode: str = "") -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.mode = mode


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
    # How the LLM writer worked: 'tools' (tool loop) or 'structured' (one JSON document); '' for others.
    mode: str = ""
    # Items validation dropped, by '<item>:<reason>' (e.g. 'fact:entity_not_in_episode': 2).
    dropped: dict[str, int] = field(default_factory=dict)
    # Facts validation kept after correcting them, by '<item>:<fix>' (e.g. 'fact:recited': 1).
    fixed: dict[str, int] = field(default_factory=dict)
    # Why auto mode left the tool loop for this episode; '' when it did not.
    fallback: str = ""


class EpisodeWriter(Protocol):
    """Reads an episode and writes facts, entities and links through the tools."""

    name: str

    def write(self, tools: WriterTools, episode: EpisodeInput) -> WriteResult: ...
