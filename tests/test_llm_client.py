"""The shared LLM client: per-operation settings, Retry-After, JSON documents and the schema checker."""

from __future__ import annotations

from dataclasses import replace
from email.utils import formatdate
from time import time

import pytest

from nexus_memory.core.config import Settings
from nexus_memory.llm.client import Budget, LLMClient, LLMError, Usage, parse_json_document, retry_after_s
from tests.fake_openai import FakeOpenAI, document, http_error


class Headers:
    def __init__(self, **values: str) -> None:
        self.headers = {k.replace("_", "-"): v for k, v in values.items()}


def test_per_operation_models_and_budgets_fall_back_to_the_shared_model(settings: Settings) -> None:
    configured = replace(
        settings,
        llm_base_url="http://127.0.0.1:9/v1",
        llm_model="base",
        llm_model_writer="small",
        llm_budget_reflection=7,
    )
    assert LLMClient.for_operation(configured, "writer").model == "small"
    assert LLMClient.for_operation(configured, "consolidation").model == "base"
    assert configured.llm_model_for("reflection") == "base" and configured.llm_budget_for("reflection") == 7
    with pytest.raises(ValueError, match="NEXUS_LLM_BASE_URL"):
        LLMClient.for_operation(replace(configured, llm_base_url=""), "writer")


def test_retry_after_in_seconds_milliseconds_and_dates() -> None:
    assert retry_after_s(Headers(retry_after="7")) == 7.0
    assert retry_after_s(Headers(retry_after_ms="1500", retry_after="9")) == 1.5
    assert 25 <= (retry_after_s(Headers(retry_after=formatdate(time() + 30, usegmt=True))) or 0) <= 30
    assert retry_after_s(Headers(retry_after="soon")) is None
    assert retry_after_s(Headers()) is None


def test_waits_are_capped_and_a_server_that_stays_busy_is_an_error() -> None:
    waits: list[float] = []
    with FakeOpenAI([http_error(503, "busy", {"Retry-After": "3600"}) for _ in range(3)]) as fake:
        client = LLMClient(fake.base_url, "m", wait_retries=2, max_wait_s=5, sleep=waits.append)
        with pytest.raises(LLMError, match="API error 503") as error:
            client.complete([{"role": "user", "content": "hi"}], Usage(), max_tokens=8)
    assert waits == [5, 5] and not error.value.fatal


def test_structured_call_returns_the_document_and_counts_tokens() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    usage = Usage()
    with FakeOpenAI([document({"n": "one"}, usage=(10, 2)), document('```json\n{"n": 1}\n```', usage=(12, 3))]) as fake:
        result = LLMClient(fake.base_url, "m").structured_call(
            schema, [{"role": "user", "content": "n?"}], Budget(64), usage
        )
    assert (result.data, result.attempts) == ({"n": 1}, 2)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.requests) == (22, 5, 2)
    assert "must be an integer" in result.failures[0]


def test_parse_json_document_forms() -> None:
    assert parse_json_document('{"a": 1}') == {"a": 1}
    assert parse_json_document('Here it is: {"a": 1} hope that helps') == {"a": 1}
    for bad in ("", "{", "no json"):
        with pytest.raises(ValueError, match="not valid JSON"):
            parse_json_document(bad)


def test_each_llm_operation_takes_its_own_model() -> None:
    """NEXUS_LLM_MODEL_<OPERATION> picks the model of consolidation / reflection calls; NEXUS_LLM_MODEL otherwise."""
    from nexus_memory.core.config import load_settings
    from nexus_memory.llm.json_call import llm_settings

    settings = load_settings(llm_base_url="http://127.0.0.1:1/v1", llm_model="small", llm_model_consolidation="careful")
    assert llm_settings(settings, "the consolidator", "consolidation")[1] == "careful"
    assert llm_settings(settings, "the narrator", "reflection")[1] == "small"
