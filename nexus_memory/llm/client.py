"""The one LLM client, for every operation: chat completions and validated JSON-schema calls.

The writer, consolidation, mental-model narratives, conflicts and reflection all talk to their
OpenAI-compatible server through `LLMClient`; `LLMClient.for_operation(settings, operation)` is where
an operation's endpoint comes from: NEXUS_LLM_BASE_URL, the operation's model
(NEXUS_LLM_MODEL_<OPERATION>, else NEXUS_LLM_MODEL), OPENAI_API_KEY and NEXUS_LLM_TIMEOUT_S.
Two ways to call:

- `complete`: one chat completion. A 429 or 503 (and 502/504 or a dropped connection) is waited out
  and retried, honouring Retry-After; other errors raise `LLMError` at once, so the caller decides
  (the writer's tool loop rolls its attempt back and starts again).
- `structured_call`: one request with `response_format = json_schema`, so servers that turn the
  schema into a grammar (llama.cpp, Ollama, vLLM, OpenAI strict mode) cannot return malformed output.
  A server that rejects json_schema gets `json_object` from then on (the prompt describes the
  document). The answer is still parsed, checked against the schema and by the caller's `check`,
  because other servers only try; a bad answer is retried with the reason, then `LLMError` says
  what was wrong.

Tokens are counted into a `Usage` the caller owns, so a failure still reports what it cost. `openai`
is imported at the first request: a CLI command that only might call a model does not pay for it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from nexus_memory.core.config import Settings
from nexus_memory.core.json_schema import validate

if TYPE_CHECKING:  # imported at the first request (module docstring)
    import openai

log = logging.getLogger(__name__)

WAIT_STATUS = (429, 502, 503, 504)  # the server is busy or restarting: wait, then ask again
FATAL_STATUS = (400, 401, 403, 404, 422)  # asking again with the same request cannot help
RETRY_TEMPERATURE = 0.7  # a retry at temperature 0 would repeat the same bad answer
MAX_ERROR_CHARS = 300
MAX_SCHEMA_ERRORS = 5  # enough to fix a document; more only makes the retry prompt longer


class LLMError(Exception):
    """An LLM call that did not give a usable answer; `fatal` means asking again cannot help."""

    def __init__(self, reason: str, *, status: int | None = None, fatal: bool = False, answer: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.fatal = fatal
        self.answer = answer  # the rejected answer's text, when there was one


@dataclass
class Usage:
    """Tokens and requests one operation has spent so far."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, response: Any) -> None:
        self.requests += 1
        usage = getattr(response, "usage", None)
        if usage is not None:
            self.prompt_tokens += usage.prompt_tokens or 0
            self.completion_tokens += usage.completion_tokens or 0


@dataclass(frozen=True)
class Budget:
    """What one operation may spend: completion tokens per request, prompt + completion in all (0: no cap)."""

    max_tokens: int = 1024
    total_tokens: int = 0

    def check(self, usage: Usage) -> None:
        """Raise a fatal LLMError once the operation has spent its total."""
        if self.total_tokens and usage.total >= self.total_tokens:
            raise LLMError(f"token budget spent: {usage.total} of {self.total_tokens} tokens", fatal=True)


@dataclass
class StructuredResult:
    """A document that passed the schema, and what getting it took."""

    data: dict[str, Any]
    attempts: int
    failures: list[str] = field(default_factory=list)


def clip(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more characters]"


def retry_after_s(response: Any) -> float | None:
    """Seconds a server asks us to wait (Retry-After as seconds or an HTTP date, or retry-after-ms)."""
    headers = getattr(response, "headers", None) or {}
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def parse_json_document(text: str) -> Any:
    """The JSON document in a model's answer: bare, in a ``` fence, or after some words; ValueError if none."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as exc:
        start = stripped.find("{")
        if start > 0:
            try:
                return json.JSONDecoder().raw_decode(stripped, start)[0]
            except json.JSONDecodeError:
                pass
        raise ValueError(f"not valid JSON ({exc.msg} at character {exc.pos})") from None


class LLMClient:
    """An OpenAI-compatible endpoint and model, with waiting retries for busy servers."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "not-needed",
        *,
        timeout_s: float = 60,
        wait_retries: int = 4,
        backoff_s: float = 1.0,
        max_wait_s: float = 60.0,
        client: openai.OpenAI | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.api_key = api_key or "not-needed"
        self.timeout_s = timeout_s
        self.wait_retries = wait_retries
        self.backoff_s = backoff_s
        self.max_wait_s = max_wait_s
        self.sleep = sleep
        self._openai = client
        self.response_format = "json_schema"  # falls back to json_object once for servers without it

    @classmethod
    def for_operation(cls, settings: Settings, operation: str, **kwargs: Any) -> LLMClient:
        """The client of one operation ('writer' | 'consolidation' | 'reflection'): NEXUS_LLM_BASE_URL, the
        operation's model (NEXUS_LLM_MODEL_<OPERATION>, else NEXUS_LLM_MODEL), OPENAI_API_KEY, NEXUS_LLM_TIMEOUT_S."""
        model = settings.llm_model_for(operation)
        if not (settings.llm_base_url and model):
            raise ValueError(f"the LLM {operation} needs NEXUS_LLM_BASE_URL and NEXUS_LLM_MODEL")
        kwargs.setdefault("timeout_s", settings.llm_timeout_s)
        return cls(settings.llm_base_url, model, settings.llm_api_key, **kwargs)

    @property
    def openai(self) -> openai.OpenAI:
        """The openai client, made at the first request."""
        if self._openai is None:
            import openai

            # Retries are ours (the writer rolls back in between): the client never retries on its own.
            self._openai = openai.OpenAI(
                base_url=self.base_url, api_key=self.api_key, timeout=self.timeout_s, max_retries=0
            )
        return self._openai

    # -- one completion ----------------------------------------------------------------------
    def complete(
        self,
        messages: list[dict[str, Any]],
        usage: Usage,
        *,
        max_tokens: int,
        temperature: float = 0.0,
        **extra: Any,
    ) -> Any:
        """One chat completion's first choice; busy servers are waited for, other trouble raises LLMError."""
        import openai

        for attempt in range(self.wait_retries + 1):
            try:
                response = self.openai.chat.completions.create(
                    model=self.model,
                    messages=messages,  # type: ignore[arg-type]
                    temperature=temperature,
                    max_tokens=max_tokens,
                    timeout=self.timeout_s,
                    **extra,
                )
            except openai.APITimeoutError as exc:
                raise LLMError(f"timeout: no answer within {self.timeout_s}s") from exc
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status in WAIT_STATUS and attempt < self.wait_retries:
                    self._wait(attempt, retry_after_s(exc.response), f"HTTP {status}")
                    continue
                raise LLMError(
                    f"API error {status}: {clip(str(exc.message))}", status=status, fatal=status in FATAL_STATUS
                ) from exc
            except openai.APIConnectionError as exc:
                if attempt < self.wait_retries:
                    self._wait(attempt, None, "connection error")
                    continue
                raise LLMError(f"API error: {clip(str(exc))}") from exc
            except openai.APIError as exc:
                raise LLMError(f"API error: {clip(str(exc))}") from exc
            usage.add(response)
            return _first_choice(response)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _wait(self, attempt: int, asked_s: float | None, why: str) -> None:
        wait = min(self.max_wait_s, asked_s if asked_s is not None else self.backoff_s * 2**attempt)
        log.info("%s: %s, waiting %.1fs before asking again", self.model, why, wait)
        self.sleep(wait)

    # -- one validated JSON document ---------------------------------------------------------
    def structured_call(
        self,
        schema: dict[str, Any],
        messages: list[dict[str, Any]],
        budget: Budget,
        usage: Usage,
        *,
        name: str = "result",
        retries: int = 2,
        temperature: float = 0.0,
        check_schema: dict[str, Any] | None = None,
        check: Callable[[dict[str, Any]], object] | None = None,
        strict: bool = False,
    ) -> StructuredResult:
        """Ask for one JSON document under `schema`; retry bad answers, then raise LLMError with the reasons.

        `check_schema` (default: `schema`) is what the answer is checked against; a caller may send a
        tighter schema (an enum of valid references, to steer grammar-constrained decoding) and check
        against a looser one, so that a wrong reference is the caller's to judge, not a failed call.
        `check` judges a document that fits the schema (ids it was shown, ...): a ValueError rejects
        the answer like a malformed one. `strict` asks OpenAI's strict mode, which needs a schema
        whose objects list every property as required and allow no others.
        """
        failures: list[str] = []
        asked = list(messages)
        attempt = 0
        while attempt <= retries:
            budget.check(usage)
            try:
                choice = self.complete(
                    asked,
                    usage,
                    max_tokens=budget.max_tokens,
                    temperature=temperature if attempt == 0 else max(temperature, RETRY_TEMPERATURE),
                    response_format=self._response_format(schema, name, strict),
                )
                data = self._document(choice, check_schema or schema, budget, check)
            except LLMError as exc:
                if exc.status == 400 and self.response_format == "json_schema" and _about_format(exc.reason):
                    # An older server that knows only JSON mode: this attempt again; the prompt describes the document.
                    self.response_format = "json_object"
                    failures.append(f"attempt {attempt + 1}: {exc.reason}; using json_object from now on")
                    continue
                attempt += 1
                failures.append(f"attempt {attempt}: {exc.reason}")
                if exc.fatal:
                    break
                if exc.answer:
                    # Show the model its answer and what was wrong with it: the cheapest way to a fix.
                    asked = [
                        *messages,
                        {"role": "assistant", "content": clip(exc.answer, 2000)},
                        {
                            "role": "user",
                            "content": f"That answer was rejected: {exc.reason}. Reply with only the "
                            "corrected JSON document.",
                        },
                    ]
                continue
            return StructuredResult(data, attempt + 1, failures)
        raise LLMError(f"no valid {name} after {attempt} attempt(s): {' | '.join(failures)}", fatal=True)

    def _response_format(self, schema: dict[str, Any], name: str, strict: bool) -> dict[str, Any]:
        if self.response_format == "json_object":
            return {"type": "json_object"}
        json_schema = {"name": name, "schema": schema} | ({"strict": True} if strict else {})
        return {"type": "json_schema", "json_schema": json_schema}

    @staticmethod
    def _document(
        choice: Any, schema: dict[str, Any], budget: Budget, check: Callable[[dict[str, Any]], object] | None
    ) -> dict[str, Any]:
        """The answer's JSON document if it fits the schema and `check`; LLMError (carrying the answer) otherwise."""
        text = choice.message.content or ""
        try:
            data = parse_json_document(text)
        except ValueError as exc:
            cut = f" (cut off at max_tokens={budget.max_tokens})" if choice.finish_reason == "length" else ""
            raise LLMError(f"{exc}{cut}: {clip(text.strip(), 200)!r}", answer=text) from None
        errors = validate(schema, data, "$")[:MAX_SCHEMA_ERRORS]
        if errors:
            raise LLMError("does not fit the schema: " + "; ".join(errors), answer=text)
        if check is not None:
            try:
                check(data)
            except ValueError as exc:
                raise LLMError(str(exc), answer=text) from None
        return data


def _about_format(reason: str) -> bool:
    """True for a 400 that rejects response_format itself (not, say, a prompt over the context size)."""
    low = reason.lower()
    return "response_format" in low or "json_schema" in low or "schema" in low or "grammar" in low


def _first_choice(response: Any) -> Any:
    """The first choice of a response; refusals and empty responses raise LLMError."""
    choices = getattr(response, "choices", None)
    if not choices or choices[0].message is None:
        raise LLMError("malformed response: no choices")
    choice = choices[0]
    refusal = getattr(choice.message, "refusal", None)
    if refusal or choice.finish_reason == "content_filter":
        raise LLMError(f"refused: {clip(str(refusal or choice.finish_reason))}")
    return choice
