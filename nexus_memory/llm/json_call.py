"""One chat completion that must answer with JSON matching a schema (OpenAI `response_format` json_schema).

`json_call(client, model, messages, name, schema)` returns the parsed object and the tokens it used, or
raises `JsonCallError` saying what went wrong: timeout, API error (`fatal` when a retry cannot help),
refusal, no answer, text that is not JSON, JSON that breaks the schema. Retrying is the caller's choice
(it may want to tell the model what was wrong); this function never retries and never writes anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from nexus_memory.core.config import Settings
from nexus_memory.core.json_schema import validate

if TYPE_CHECKING:  # imported where a call is made: agent tools and CLI writes must not pay ~0.4 s for it
    import openai

FATAL_STATUS = (400, 401, 403, 404, 422)  # the same request cannot succeed on a retry


class JsonCallError(Exception):
    """A structured call that gave no usable answer; tokens it still used are kept."""

    def __init__(self, reason: str, *, fatal: bool = False, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fatal = fatal
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens


def openai_client(base_url: str, api_key: str, timeout_s: float) -> openai.OpenAI:
    """A client that never retries by itself: callers retry, rolling back and telling the model between tries."""
    import openai

    return openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0)


def llm_settings(settings: Settings, who: str, operation: str) -> tuple[str, str, str, float]:
    """(base url, model, api key, timeout) of the LLM for `operation` ('writer' | 'consolidation' |
    'reflection': NEXUS_LLM_MODEL_<OPERATION>, else NEXUS_LLM_MODEL), or ValueError naming what `who` needs."""
    if not settings.llm_enabled:
        raise ValueError(f"{who} needs NEXUS_LLM_BASE_URL and NEXUS_LLM_MODEL")
    return settings.llm_base_url, settings.llm_model_for(operation), settings.llm_api_key, settings.llm_timeout_s


class JsonCaller:
    """One model behind an OpenAI-compatible endpoint, asked for schema-valid JSON (`json_call`) with a
    few retries. Subclasses name who they are and which operation's model they use (`llm_settings`)."""

    role = "an LLM caller"  # for the error when no LLM is configured: "<role> needs NEXUS_LLM_BASE_URL ..."
    operation = "writer"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "not-needed",
        *,
        timeout_s: float = 60,
        max_retries: int = 1,
        client: openai.OpenAI | None = None,
    ) -> None:
        self.model = model
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.client = client or openai_client(base_url, api_key, timeout_s)

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> Self:
        """The caller on the configured LLM (NEXUS_LLM_BASE_URL, the operation's model, OPENAI_API_KEY)."""
        base_url, model, api_key, timeout_s = llm_settings(settings, cls.role, cls.operation)
        return cls(base_url, model, api_key, timeout_s=timeout_s, **kwargs)


@dataclass
class JsonAnswer:
    """A schema-valid answer and its token use."""

    value: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int


def json_call(
    client: openai.OpenAI,
    model: str,
    messages: list[dict[str, Any]],
    name: str,
    schema: dict[str, Any],
    *,
    temperature: float = 0.0,
    max_tokens: int = 1024,
    timeout_s: float = 60,
) -> JsonAnswer:
    """One completion constrained to `schema`, validated again here (servers do not all enforce it)."""
    import openai

    try:
        response = client.chat.completions.create(
            model=model,
            messages=messages,  # type: ignore[arg-type]
            response_format={"type": "json_schema", "json_schema": {"name": name, "schema": schema}},  # type: ignore[arg-type]
            temperature=temperature,
            max_tokens=max_tokens,
            timeout=timeout_s,
        )
    except openai.APITimeoutError as exc:
        raise JsonCallError(f"timeout: no answer within {timeout_s}s") from exc
    except openai.APIStatusError as exc:
        raise JsonCallError(
            f"API error {exc.status_code}: {_clip(str(exc.message))}", fatal=exc.status_code in FATAL_STATUS
        ) from exc
    except openai.APIError as exc:
        raise JsonCallError(f"API error: {_clip(str(exc))}") from exc
    usage = getattr(response, "usage", None)
    tokens = {
        "prompt_tokens": (usage.prompt_tokens or 0) if usage else 0,
        "completion_tokens": (usage.completion_tokens or 0) if usage else 0,
    }
    choices = getattr(response, "choices", None)
    if not choices or choices[0].message is None:
        raise JsonCallError("malformed response: no choices", **tokens)
    message = choices[0].message
    refusal = getattr(message, "refusal", None)
    if refusal or choices[0].finish_reason == "content_filter":
        raise JsonCallError(f"refused: {_clip(str(refusal or choices[0].finish_reason))}", **tokens)
    text = (message.content or "").strip()
    try:
        value = json.loads(_strip_fence(text))
    except ValueError:
        raise JsonCallError(f"malformed output: not JSON: {_clip(text)!r}", **tokens) from None
    errors = validate(schema, value, "answer")
    if errors:
        raise JsonCallError("malformed output: " + "; ".join(errors[:5]), **tokens)
    return JsonAnswer(value, **tokens)


def _strip_fence(text: str) -> str:
    """Models often wrap JSON in a ```json fence even when asked not to."""
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text.strip()


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def ask_json(
    settings: Settings,
    name: str,
    schema: dict[str, Any],
    system: str,
    user: str,
    *,
    operation: str,
    max_tokens: int = 1024,
) -> dict[str, Any]:
    """One `json_call` to the configured LLM with a system and a user message; the schema-valid object.

    Raises ValueError when no LLM is configured and JsonCallError (one line) when the call fails.
    """
    base_url, model, api_key, timeout_s = llm_settings(settings, name, operation)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    client = openai_client(base_url, api_key, timeout_s)
    return json_call(client, model, messages, name, schema, max_tokens=max_tokens, timeout_s=timeout_s).value
