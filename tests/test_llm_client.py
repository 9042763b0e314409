"""The one LLM client: per-operation settings, Retry-After, JSON documents, checks, the json_object fallback, and
openai imported only at the first request."""

from __future__ import annotations

import subprocess
import sys
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

    settings = load_settings(llm_base_url="http://127.0.0.1:1/v1", llm_model="small", llm_model_consolidation="careful")
    assert LLMClient.for_operation(settings, "consolidation").model == "careful"
    assert LLMClient.for_operation(settings, "reflection").model == "small"


def test_a_check_rejects_an_answer_that_fits_the_schema_and_the_reason_goes_back() -> None:
    schema = {"type": "object", "properties": {"ref": {"type": "string"}}, "required": ["ref"]}

    def shown_only(answer: dict) -> None:
        if answer["ref"] not in ("f1", "f2"):
            raise ValueError(f"{answer['ref']} was not shown")

    with FakeOpenAI([document({"ref": "f9"}), document({"ref": "f2"})]) as fake:
        result = LLMClient(fake.base_url, "m").structured_call(
            schema, [{"role": "user", "content": "which?"}], Budget(64), Usage(), retries=1, check=shown_only
        )
    assert (result.data, result.attempts) == ({"ref": "f2"}, 2)
    assert "f9 was not shown" in fake.requests[1]["messages"][-1]["content"]


def test_the_json_object_fallback_is_not_a_failed_attempt() -> None:
    """A server that rejects json_schema is asked again in JSON mode, even by a call with no retries."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    with FakeOpenAI(
        [http_error(400, "'json_schema' is not supported"), document({"n": 1}), document({"n": 2})]
    ) as fake:
        client = LLMClient(fake.base_url, "m")
        ask = [{"role": "user", "content": "n?"}]
        first = client.structured_call(schema, ask, Budget(64), Usage(), retries=0)
        second = client.structured_call(schema, ask, Budget(64), Usage(), retries=0)
    assert (first.data, first.attempts, second.data) == ({"n": 1}, 1, {"n": 2})
    assert "json_object" in first.failures[0]
    sent = [r["response_format"] for r in fake.requests]
    assert sent[0] == {"type": "json_schema", "json_schema": {"name": "result", "schema": schema}}
    assert sent[1:] == [{"type": "json_object"}, {"type": "json_object"}]  # the client remembers


def test_strict_mode_is_asked_only_when_the_caller_says_so() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    ask = [{"role": "user", "content": "n?"}]
    with FakeOpenAI([document({"n": 1}), document({"n": 1})]) as fake:
        client = LLMClient(fake.base_url, "m")
        client.structured_call(schema, ask, Budget(64), Usage())
        client.structured_call(schema, ask, Budget(64), Usage(), strict=True)
    assert [r["response_format"]["json_schema"].get("strict") for r in fake.requests] == [None, True]


def test_the_modules_that_call_a_model_do_not_import_openai() -> None:
    """openai is imported at the first request, so a cold CLI command (recall) does not pay for it."""
    code = (
        "import sys\n"
        "import nexus_memory.lifecycle.conflicts, nexus_memory.lifecycle.reflection\n"
        "import nexus_memory.mental_models.narrative, nexus_memory.observations.llm, nexus_memory.writer.llm\n"
        "from nexus_memory.llm.client import LLMClient\n"
        "LLMClient('http://127.0.0.1:9/v1', 'm')\n"
        "print('openai' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
