"""The LLM writer: an `EpisodeWriter` over any OpenAI-compatible server, in one of three modes.

- `tools`: the tool loop (`tool_loop`), for models that call tools well.
- `structured`: one JSON-schema call per episode (`structured`), for every model a server can
  constrain to a schema, small local ones included.
- `quote`: one JSON-schema call per episode in which the model only picks sentences of the new events
  (`structured.QuoteExtractor`), for models too small to write a fact without making one up.
- `auto` (default): the tool loop, switching an episode to structured mode when tool calling
  itself fails (the server cannot parse the calls, or the model writes no or malformed calls: at
  once, without retries), when the loop reaches its step limit or half the episode's token budget
  (the other half is structured mode's), or when every attempt of the loop failed otherwise
  (timeouts, server errors), unless retrying cannot help (authentication).
  The tool loop is then off for the rest of the run once it failed to finish `AUTO_TOOL_FAILURES`
  episodes, or at once when the run's first request shows the server too slow for it: about
  `TOOL_EPISODE_REQUESTS` requests at that speed would take longer than `tool_episode_s`
  (NEXUS_LLM_TOOL_EPISODE_S). Each failed tool loop costs a conversation that the next one repeats.
  Structured mode in its turn hands an episode to quote mode when it keeps no fact and drops some as
  not said, or gives no valid document (a model too small to write facts); after `AUTO_UNSAID` such
  episodes the run quotes.

Every episode's `WriteResult` says which mode wrote it (`mode`), why auto left the tool loop
(`fallback`), which items validation dropped, by reason (`dropped`), and which facts it corrected
(`fixed`: re-cited to the event that says them, the sender given back as their subject).
"""

from __future__ import annotations

import logging
from typing import Any

from nexus_memory.core.config import Settings
from nexus_memory.llm.client import FATAL_STATUS, Budget, LLMClient, LLMError, Usage
from nexus_memory.writer.base import EpisodeInput, WriteResult, WriterFailure
from nexus_memory.writer.llm.episode import load_prompt, load_role_prompt
from nexus_memory.writer.llm.model_tools import undone_on_error
from nexus_memory.writer.llm.structured import QuoteExtractor, StructuredExtractor, StructuredOutcome
from nexus_memory.writer.llm.tool_loop import MAX_TOOL_ERRORS, ToolLoop, ToolLoopFailed, ToolStats
from nexus_memory.writer.tools import WriterTools

log = logging.getLogger(__name__)

MODES = ("auto", "structured", "tools", "quote")
AUTO_TOOL_FAILURES = 2  # tool-loop episodes that did not finish before auto stops trying it for the run
AUTO_UNSAID = 2  # structured episodes that wrote only what was not said before auto quotes for the run
# Drops that mean the model wrote what the episode does not say (not a question or a greeting it kept).
UNSAID = frozenset(
    f"fact:{reason}"
    for reason in (
        "prompt_example",
        "prompt_text",
        "not_in_source",
        "name_not_in_episode",
        "entity_not_in_episode",
        "wrong_speaker",
        "repetitive",
    )
)
TOOL_EPISODE_REQUESTS = 6  # requests of a typical tool-loop episode (recall, insert, link, ..., finish)
STRUCTURED_MAX_TOKENS = 1536  # one whole document per episode


class LLMWriter:
    """Extraction by a chat model: tool loop, structured document, or auto (see the module docstring)."""

    def __init__(
        self,
        client: LLMClient,
        *,
        mode: str = "auto",
        max_steps: int = 12,
        max_retries: int = 2,
        max_tool_errors: int = MAX_TOOL_ERRORS,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        structured_max_tokens: int = STRUCTURED_MAX_TOKENS,
        token_budget: int = 0,
        tool_episode_s: float = 0.0,
        role_prompt: str | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"NEXUS_LLM_MODE must be one of {', '.join(MODES)}, not {mode!r}")
        if max_steps < 1 or max_retries < 0:
            raise ValueError("max_steps must be >= 1 and max_retries >= 0")
        self.client = client
        self.mode = mode
        self.name = f"llm:{client.model}"
        self.tool_loop = ToolLoop(
            client,
            Budget(max_tokens, token_budget),
            role_prompt or load_role_prompt(),
            max_steps=max_steps,
            max_retries=max_retries,
            max_tool_errors=max_tool_errors,
            temperature=temperature,
            stop_when_broken=mode == "auto",
            switch_at_tokens=token_budget // 2 if mode == "auto" else 0,
            max_request_s=tool_episode_s / TOOL_EPISODE_REQUESTS,
        )
        extractors = [
            extractor(
                client,
                Budget(structured_max_tokens, token_budget),
                load_prompt(f"writer_{extractor.mode}"),
                retries=max_retries,
                temperature=temperature,
            )
            for extractor in (StructuredExtractor, QuoteExtractor)
        ]
        self.structured, self.quote = (extractors[1], extractors[1]) if mode == "quote" else extractors
        self.tool_failures = 0  # auto: episodes of this run whose tool loop did not finish
        self.tools_off = ""  # auto: why the tool loop is no longer tried in this run
        self.unsaid = 0  # auto: structured episodes whose every fact was dropped as not said
        self.structured_off = ""  # auto: why structured mode is no longer tried in this run (quote instead)

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> LLMWriter:
        """The writer on the writer's LLM client (`LLMClient.for_operation`), in NEXUS_LLM_MODE, within
        NEXUS_LLM_BUDGET_WRITER and NEXUS_LLM_TOOL_EPISODE_S."""
        kwargs.setdefault("mode", settings.llm_mode)
        kwargs.setdefault("token_budget", settings.llm_budget_for("writer"))
        kwargs.setdefault("tool_episode_s", settings.llm_tool_episode_s)
        return cls(LLMClient.for_operation(settings, "writer"), **kwargs)

    def write(self, tools: WriterTools, episode: EpisodeInput) -> WriteResult:
        """Write one episode in this writer's mode; WriterFailure (with its cost and mode) when none worked."""
        usage = Usage()
        fallback = ""
        if self.mode == "tools" or (self.mode == "auto" and not self.tools_off):
            stats = ToolStats()
            try:
                summary = self.tool_loop.run(tools, episode, usage, stats)
            except ToolLoopFailed as exc:
                if self.mode == "tools" or exc.fatal:
                    raise self._failure(f"gave up after {len(exc.failures)} attempt(s): {exc}", usage, "tools") from exc
                fallback = self._tool_loop_failed(exc)
                log.info("%s episode %s: switching to structured mode: %s", self.name, episode.episode_id, fallback)
            else:
                notes = summary + (f" (after {'; '.join(stats.failures)})" if stats.failures else "")
                return WriteResult(
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    stats.tool_calls,
                    notes,
                    mode="tools",
                    dropped=dict(stats.dropped),
                    fixed=dict(stats.fixed),
                )
        elif self.mode == "auto":
            fallback = f"the tool loop is off for this run: {self.tools_off}"
        return self._structured(tools, episode, usage, fallback)

    def _tool_loop_failed(self, exc: ToolLoopFailed) -> str:
        """Count a tool loop auto leaves, turn the loop off for the run when it will not work; the fallback note."""
        self.tool_failures += 1
        if exc.too_slow:
            self.tools_off = exc.failures[-1].split(": ", 1)[-1]
        elif self.tool_failures >= AUTO_TOOL_FAILURES:
            self.tools_off = f"it did not finish {self.tool_failures} episodes"
        what = "tool calls failed" if exc.tools_broken else "the tool loop gave up"
        return f"{what} ({' | '.join(exc.failures)})"

    def _structured(self, tools: WriterTools, episode: EpisodeInput, usage: Usage, fallback: str) -> WriteResult:
        extractor = self.quote if self.structured_off else self.structured
        if self.structured_off:
            fallback = "; ".join([*([fallback] if fallback else []), f"structured mode is off: {self.structured_off}"])
        try:
            try:
                # A failure half-way through the writes must not leave the first ones.
                with undone_on_error(tools):
                    outcome = extractor.run(tools, episode, usage)
                    if self.mode == "auto" and extractor is self.structured and nothing_said(outcome):
                        raise _NothingSaid(outcome)  # undone: the quote below writes the episode
            except (_NothingSaid, LLMError) as exc:
                # Any failure of structured mode but a refused key (no valid document, timeouts): quoting asks less.
                refused = isinstance(exc, LLMError) and exc.status in FATAL_STATUS
                if refused or self.mode != "auto" or extractor is not self.structured:
                    raise
                extractor, fallback = self.quote, self._unsaid(exc, fallback)
                with undone_on_error(tools):
                    outcome = extractor.run(tools, episode, usage)
        except LLMError as exc:
            raise self._failure(exc.reason, usage, extractor.mode, fallback) from exc
        notes = [f"{outcome.facts_kept} fact(s) kept"] + ([f"auto: {fallback}"] if fallback else [])
        return WriteResult(
            usage.prompt_tokens,
            usage.completion_tokens,
            outcome.tool_calls,
            "; ".join(notes + outcome.notes),
            mode=extractor.mode,
            dropped=dict(outcome.dropped),
            fixed=dict(outcome.fixed),
            fallback=fallback,
        )

    def _unsaid(self, exc: Exception, fallback: str) -> str:
        """Count a structured episode that said nothing or gave no valid document (a model too small for it),
        turn structured mode off for the run after AUTO_UNSAID of them; the fallback note."""
        self.unsaid += 1
        if self.unsaid >= AUTO_UNSAID:
            self.structured_off = f"it wrote nothing said in {self.unsaid} episodes"
        if isinstance(exc, _NothingSaid):
            dropped = ", ".join(f"{k} {n}" for k, n in sorted(exc.outcome.dropped.items()) if k in UNSAID)
            note = f"structured mode wrote only what was not said ({dropped})"
        else:
            note = f"structured mode failed ({exc})"
        return "; ".join([*([fallback] if fallback else []), note])

    def _failure(self, reason: str, usage: Usage, mode: str, fallback: str = "") -> WriterFailure:
        where = f"{mode} mode" + (f" (auto, after {fallback})" if fallback else "")
        return WriterFailure(
            f"{self.name}, {where}: {reason}",
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            mode=mode,
        )


class _NothingSaid(Exception):
    """Auto: structured mode kept no fact and dropped some as not said; its writes are undone."""

    def __init__(self, outcome: StructuredOutcome) -> None:
        super().__init__("structured mode wrote only what was not said")
        self.outcome = outcome


def nothing_said(outcome: StructuredOutcome) -> bool:
    """No fact kept, and at least one dropped because the episode does not say it: a model too small to write."""
    return outcome.facts_kept == 0 and any(outcome.dropped[reason] for reason in UNSAID)
