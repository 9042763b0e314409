"""The LLM writer's tool loop: a bounded conversation in which the model calls the writer tools.

The model reads an episode (its events with their deliveryContext, plus earlier thread events as
context only) and calls the six writer tools plus `finish`. Everything it writes goes through
`ModelTools` and so `WriterTools`, the same as the structured mode and the offline writer.

Robustness, because small local models are the common case:
- a tool call with bad JSON or bad arguments gets `{"error": ...}` back so the model can fix it,
  within a per-episode error budget;
- garbage output, API errors, timeouts and refusals end the attempt: its writes are rolled back
  (a nested `db.transaction`) and the loop starts again, up to `max_retries` times;
- a tool call written as JSON in the message content (not in `tool_calls`) is accepted.

Every `insert_fact` is judged by validation (`EpisodeView.check`, as in structured mode) before it is
stored: a fact the episode does not say is answered `{"status": "dropped", "reason": ...}` and counted.

An attempt that fails because tool calling itself does not work (the server cannot parse the
model's calls, the model writes no calls or calls with malformed arguments, or never finishes)
is marked `tools_broken`, so the writer's `auto` mode can switch the episode to structured mode.
In `auto` mode (`stop_when_broken`) an attempt also stops, marked so, once the episode has spent
`switch_at_tokens` (half its token budget), and after the first request of the run when that request
took longer than `max_request_s` (`too_slow`: a whole tool-loop episode would take too long).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from nexus_memory.core.tooling import ToolError, parse_arguments
from nexus_memory.llm.client import RETRY_TEMPERATURE, Budget, LLMClient, LLMError, Usage, clip
from nexus_memory.writer.base import EpisodeInput
from nexus_memory.writer.llm.episode import render_episode, system_prompt
from nexus_memory.writer.llm.model_tools import OPENAI_TOOLS, TOOL_NAMES, ModelTools, undone_on_error
from nexus_memory.writer.llm.validation import EpisodeView
from nexus_memory.writer.tools import WriterTools

log = logging.getLogger(__name__)

MAX_TOOL_ERRORS = 8  # per episode, across attempts
MAX_RESULT_CHARS = 4_000  # one tool result sent back to the model
# What servers answer when they cannot turn a model's output into tool calls (llama.cpp, vLLM, Ollama).
TOOL_PARSE_ERROR = re.compile(
    r"failed to parse tool call|does not match the expected .{0,80}format|error in extracting tool call|"
    r"tool call.{0,40}(?:invalid|malformed|could not be parsed)|does not support tools",
    re.IGNORECASE | re.DOTALL,
)


class AttemptFailed(Exception):
    """One attempt of the loop cannot go on.

    `fatal`: another attempt cannot help either. `tools_broken`: tool calling itself failed (see
    the module docstring), which `auto` mode answers by switching to structured mode.
    """

    def __init__(self, reason: str, *, fatal: bool = False, tools_broken: bool = False, too_slow: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fatal = fatal
        self.tools_broken = tools_broken or too_slow
        self.too_slow = too_slow


class ToolLoopFailed(Exception):
    """Every attempt failed; `failures` says why, `tools_broken` whether tool calling itself failed."""

    def __init__(self, failures: list[str], *, tools_broken: bool, fatal: bool = False, too_slow: bool = False) -> None:
        super().__init__(" | ".join(failures))
        self.failures = failures
        self.tools_broken = tools_broken
        self.fatal = fatal  # the last attempt failed in a way no other mode can help with either
        self.too_slow = too_slow  # the server is too slow for tool-loop episodes at all


@dataclass
class ToolStats:
    """Tool calls and errors of one episode, across attempts."""

    tool_calls: int = 0
    tool_errors: int = 0
    bad_json: int = 0
    last_error: str = ""
    failures: list[str] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)  # facts validation refused, in the attempt that finished
    fixed: Counter[str] = field(default_factory=Counter)  # facts validation corrected, in that attempt


@dataclass
class _Call:
    """One tool call as the model made it: arguments still raw (a JSON string) or parsed."""

    name: str
    arguments: str | dict[str, Any] | None
    call_id: str = ""


# -- parsing tool calls --------------------------------------------------------------------------
def calls_in_content(text: str) -> list[_Call]:
    """Tool calls a model wrote as JSON in its message text ({"name": ..., "arguments": {...}})."""
    decoder = json.JSONDecoder()
    calls: list[_Call] = []
    pos = 0
    while (start := text.find("{", pos)) != -1:
        try:
            obj, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        calls += _calls_in_object(obj)
        pos = end
    return calls


def _calls_in_object(obj: Any) -> list[_Call]:
    """Recognise the usual wrappings: bare call, {"tool_call": ...}, {"tool_calls": [...]}, {"function": ...}."""
    if isinstance(obj, list):
        return [c for item in obj for c in _calls_in_object(item)]
    if not isinstance(obj, dict):
        return []
    for key in ("tool_calls", "tool_call", "function"):
        if key in obj and isinstance(obj[key], dict | list):
            return _calls_in_object(obj[key])
    name = obj.get("name")
    # A bare {"name": "Alice"} is data, not a call: require arguments or a known tool name.
    if isinstance(name, str) and ("arguments" in obj or "parameters" in obj or name in TOOL_NAMES):
        args = obj.get("arguments", obj.get("parameters"))
        return [_Call(name, args if isinstance(args, str | dict) or args is None else json.dumps(args))]
    return []


# -- the loop ------------------------------------------------------------------------------------
class ToolLoop:
    """Runs attempts of the tool conversation for one episode at a time."""

    def __init__(
        self,
        client: LLMClient,
        budget: Budget,
        role_prompt: str,
        *,
        max_steps: int = 12,
        max_retries: int = 2,
        max_tool_errors: int = MAX_TOOL_ERRORS,
        temperature: float = 0.0,
        stop_when_broken: bool = False,
        switch_at_tokens: int = 0,
        max_request_s: float = 0.0,
    ) -> None:
        self.client = client
        self.budget = budget
        self.role_prompt = role_prompt
        self.max_steps = max_steps
        self.max_retries = max_retries
        self.max_tool_errors = max_tool_errors
        self.temperature = temperature
        self.stop_when_broken = stop_when_broken  # auto mode: no retries once tool calling is seen to fail
        self.switch_at_tokens = switch_at_tokens  # auto mode: tokens an episode may spend here (0: no bound)
        self.max_request_s = max_request_s  # auto mode: the slowest first request that leaves the loop on (0: any)
        self.first_request_s: float | None = None  # the run's first request, timed

    def run(self, tools: WriterTools, episode: EpisodeInput, usage: Usage, stats: ToolStats) -> str:
        """Run attempts until one finishes (returns its summary); each failed one is rolled back."""
        user_message = render_episode(tools, episode)
        broken = fatal = slow = False
        for attempt in range(self.max_retries + 1):
            try:
                with undone_on_error(tools):
                    return self._attempt(tools, episode, user_message, usage, stats, attempt)
            except AttemptFailed as exc:
                stats.failures.append(f"attempt {attempt + 1}: {exc.reason}")
                log.info("tool loop, episode %s: %s", episode.episode_id, stats.failures[-1])
                broken, fatal = broken or exc.tools_broken, exc.fatal and not exc.tools_broken
                slow = slow or exc.too_slow
                if exc.fatal or (broken and self.stop_when_broken):
                    break
        raise ToolLoopFailed(stats.failures, tools_broken=broken, fatal=fatal, too_slow=slow)

    def _attempt(
        self, tools: WriterTools, episode: EpisodeInput, user_message: str, usage: Usage, stats: ToolStats, attempt: int
    ) -> str:
        """One pass of the tool loop; returns finish's summary or raises AttemptFailed."""
        model_tools = ModelTools(tools, episode)
        model_tools.check = EpisodeView(model_tools, episode, self.role_prompt).check
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(self.role_prompt, tools)},
            {"role": "user", "content": user_message},
        ]
        temperature = self.temperature if attempt == 0 else max(self.temperature, RETRY_TEMPERATURE)
        bad_json_before = stats.bad_json
        for _step in range(self.max_steps):
            message = self._complete(messages, usage, temperature)
            if message.tool_calls:
                self._run_tool_calls(message, messages, model_tools, stats)
            else:
                self._run_content_calls(message.content or "", messages, model_tools, stats)
            if model_tools.finished:
                stats.dropped.update(model_tools.dropped)
                stats.fixed.update(model_tools.fixed)
                return model_tools.summary
        # A model that keeps calling tools with broken arguments, or in auto mode any model that does not
        # finish, cannot do the tool loop: another attempt would spend as much again.
        broken = self.stop_when_broken or stats.bad_json > bad_json_before
        raise AttemptFailed(f"no finish within max_steps={self.max_steps}", tools_broken=broken)

    def _complete(self, messages: list[dict[str, Any]], usage: Usage, temperature: float) -> Any:
        """One chat completion with the tools; any trouble ends the attempt."""
        if self.switch_at_tokens and usage.total >= self.switch_at_tokens:
            spent = f"{usage.total} of the {self.switch_at_tokens} tokens the tool loop may spend (half the budget)"
            raise AttemptFailed(f"token budget half spent: {spent}", tools_broken=True)
        started = time.perf_counter()
        try:
            self.budget.check(usage)
            choice = self.client.complete(
                messages,
                usage,
                max_tokens=self.budget.max_tokens,
                temperature=temperature,
                tools=OPENAI_TOOLS,
                tool_choice="auto",
            )
        except LLMError as exc:
            self._time_first_request(started)  # a first request that timed out was slow too
            broken = bool(TOOL_PARSE_ERROR.search(exc.reason))
            raise AttemptFailed(exc.reason, fatal=exc.fatal and not broken, tools_broken=broken) from exc
        self._time_first_request(started)
        return choice.message

    def _time_first_request(self, started: float) -> None:
        """Time the run's first request; in auto mode, AttemptFailed (`too_slow`) when it took too long."""
        if self.first_request_s is not None:
            return
        self.first_request_s = seconds = time.perf_counter() - started
        if self.stop_when_broken and self.max_request_s and seconds > self.max_request_s:
            raise AttemptFailed(
                f"too slow for the tool loop: the first request took {seconds:.1f}s "
                f"(at most {self.max_request_s:.1f}s per request)",
                too_slow=True,
            )

    def _run_tool_calls(
        self, message: Any, messages: list[dict[str, Any]], model_tools: ModelTools, stats: ToolStats
    ) -> None:
        """Native tool calls: echo them, answer each with a `tool` message."""
        calls = [
            _Call(c.function.name, c.function.arguments, c.id or f"call_{len(messages)}_{i}")
            for i, c in enumerate(message.tool_calls)
        ]
        messages.append(
            {
                "role": "assistant",
                "content": message.content or None,
                "tool_calls": [
                    {
                        "id": c.call_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments or "{}"},
                    }
                    for c in calls
                ],
            }
        )
        for call in calls:
            result = self._execute(call, model_tools, stats)
            messages.append({"role": "tool", "tool_call_id": call.call_id, "content": result})

    def _run_content_calls(
        self, content: str, messages: list[dict[str, Any]], model_tools: ModelTools, stats: ToolStats
    ) -> None:
        """Fallback: tool calls written as JSON in the text; results go back as a user message."""
        calls = calls_in_content(content)
        if not calls:
            raise AttemptFailed(f"malformed output: no tool call in {clip(content.strip(), 200)!r}", tools_broken=True)
        messages.append({"role": "assistant", "content": content})
        # A server that did not parse tool calls may not render `tool` messages either: plain text is safe.
        results = [f"{c.name} -> {self._execute(c, model_tools, stats)}" for c in calls]
        messages.append({"role": "user", "content": "Tool results:\n" + "\n".join(results)})

    def _execute(self, call: _Call, model_tools: ModelTools, stats: ToolStats) -> str:
        """Run one call and return its result as JSON text; errors go back to the model."""
        stats.tool_calls += 1
        try:
            args = parse_arguments(call.arguments)
        except ToolError as exc:
            stats.bad_json += 1
            return self._tool_error(call, str(exc), stats)
        try:
            result = model_tools.call(call.name, args)
        except (ToolError, TypeError, ValueError) as exc:
            return self._tool_error(call, str(exc) or type(exc).__name__, stats)
        return clip(json.dumps(result, ensure_ascii=False, default=str), MAX_RESULT_CHARS)

    def _tool_error(self, call: _Call, message: str, stats: ToolStats) -> str:
        stats.tool_errors += 1
        stats.last_error = f"{call.name}: {message}"
        log.debug("tool error %d: %s", stats.tool_errors, stats.last_error)
        if stats.tool_errors > self.max_tool_errors:
            raise AttemptFailed(
                f"too many tool errors ({stats.tool_errors}); last: {clip(stats.last_error)}",
                fatal=True,
                tools_broken=stats.bad_json > 0,
            )
        return json.dumps({"error": message}, ensure_ascii=False)
