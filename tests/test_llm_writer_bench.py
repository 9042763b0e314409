"""The LLM writer's benchmarks: `bench facts --writer llm` (precision and recall on the labelled messages, beside
the offline writer on the same messages) and `bench extract --writer llm --max-seconds`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from nexus_memory.bench import facts as bench_facts
from nexus_memory.bench.extract_llm import run_llm as run_extract_llm
from nexus_memory.core.config import Settings
from nexus_memory.llm.client import LLMClient
from nexus_memory.writer.llm import LLMWriter
from tests.fake_openai import FakeOpenAI, Reply, document
from tests.test_llm_writer_quote import offered, picks


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def first_sentence(request: dict[str, Any]) -> Reply:
    return document(picks(*offered(request)[:1]))


def test_bench_facts_scores_the_llm_writer_beside_the_offline_writer_on_the_same_messages(fake: FakeOpenAI) -> None:
    fake.add(*[first_sentence] * 6)
    writer = LLMWriter(LLMClient(fake.base_url, "fake-model", timeout_s=5), mode="quote")
    report = bench_facts.run_llm(writer, None, messages=6)

    chosen = {r["id"] for r in report["per_message"]}
    assert report["messages"] == len(chosen) == 6 and report["mode"] == "quote"
    assert all(r["status"] == "ok" and r["mode"] == "quote" for r in report["per_message"])
    labels = [r for r in bench_facts.load_labels() if r["id"] in chosen]
    assert all(r["source"] == "sample" for r in labels)  # no LoCoMo file given: only the sample stream
    # Each side is scored with `score` on exactly these messages.
    llm_kept = {r["id"]: r["facts"] for r in report["per_message"]}
    expected = bench_facts.score(labels, llm_kept)
    assert (report["llm"]["precision"], report["llm"]["recall"]) == (expected["precision"], expected["recall"])
    assert report["llm"]["facts_kept"] == sum(len(f) for f in llm_kept.values()) > 0
    assert report["offline"]["messages"] == 6
    # Quoted facts are the message's own sentences: the first one offered, in the third person.
    assert len(fake.requests) == 6


def test_bench_facts_stops_starting_messages_after_max_seconds(fake: FakeOpenAI) -> None:
    fake.add(*[first_sentence] * 3)
    writer = LLMWriter(LLMClient(fake.base_url, "fake-model", timeout_s=5), mode="quote")
    report = bench_facts.run_llm(writer, None, messages=3, max_seconds=1e-9)
    assert report["messages"] == 1 and len(report["per_message"]) == 1  # the first message always runs


def test_bench_extract_stops_starting_episodes_after_max_seconds(
    tmp_path: Path, settings: Settings, fake: FakeOpenAI
) -> None:
    turns = [{"speaker": ("Ann", "Bo")[i % 2], "dia_id": f"D1:{i + 1}", "text": f"I ran {i + 3} km."} for i in range(4)]
    sample = {
        "sample_id": "conv-t",
        "conversation": {"speaker_a": "Ann", "speaker_b": "Bo", "session_1_date_time": "1:56 pm on 8 May, 2023"}
        | {"session_1": turns},
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]))
    fake.add(*[first_sentence] * 4)
    configured = replace(settings, llm_base_url=fake.base_url, llm_model="fake-model", llm_timeout_s=5)
    report = run_extract_llm(path, settings=configured, mode="quote", episode_turns=1, max_seconds=1e-9)
    assert report["episodes"] == len(report["per_episode"]) == 1 and report["turns"] == 1
    assert report["llm"]["by_mode"]["quote"]["grounded_share"] == 1.0
