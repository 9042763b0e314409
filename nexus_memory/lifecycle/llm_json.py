"""One JSON-schema call to the configured OpenAI-compatible server, for the lifecycle's LLM questions
(conflicts, reflection). Errors are raised as LLMAnswerError with one line saying what went wrong; the
caller keeps what it had and reruns the failed part later.

The project's shared structured-call client (nexus_memory/llm/, with retries and token budgets) is meant
to replace this function; it is the only place that would change.
"""

from __future__ import annotations

import json
from typing import Any

from nexus_memory.config import Settings


class LLMAnswerError(RuntimeError):
    """The model could not be asked, or its answer was not the JSON the schema asked for."""


def ask_json(settings: Settings, name: str, schema: dict[str, Any], system: str, user: str) -> dict[str, Any]:
    """Ask once with response_format json_schema; the parsed object (the caller checks its values)."""
    import openai

    client = openai.OpenAI(
        base_url=settings.llm_base_url, api_key=settings.llm_api_key, timeout=settings.llm_timeout_s, max_retries=1
    )
    try:
        response = client.chat.completions.create(
            model=settings.llm_model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            response_format={"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}},
            temperature=0,
        )
        text = response.choices[0].message.content or ""
    except (openai.OpenAIError, IndexError, AttributeError) as exc:
        raise LLMAnswerError(f"{name}: the model could not be asked: {type(exc).__name__}: {exc}") from exc
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise LLMAnswerError(f"{name}: the answer is not JSON: {text[:200]!r}") from exc
    if not isinstance(value, dict):
        raise LLMAnswerError(f"{name}: the answer is not a JSON object: {text[:200]!r}")
    return value
