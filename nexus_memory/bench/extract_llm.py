"""Judge the LLM writer on a LoCoMo subset, next to the offline writer on the same episodes.

`nexus-memory bench extract --writer llm --data PATH` runs the configured LLM writer
(NEXUS_LLM_BASE_URL, NEXUS_LLM_MODEL(_WRITER), NEXUS_LLM_MODE; any OpenAI-compatible server) over
the first episodes of the file and reports, per episode: status, the mode that wrote it, seconds,
prompt and completion tokens, facts kept and facts dropped by validation (with reasons). Over the
subset it reports observation coverage and overlap (as `bench/extract.py` defines them) for the LLM
writer and for the offline writer on the very same episodes, and a few facts as examples.

Episodes are LoCoMo sessions, or chunks of `episode_turns` turns of them (small local models read
short episodes faster); each gets the conversation's previous turns as thread context. The LLM
writer runs through the real runner (`write_events`) on a throwaway store, so its transaction,
dedup and failure handling are the production ones.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexus_memory.bench.extract import CONTEXT_TURNS, conversation_sessions, observation_scores
from nexus_memory.core.config import Settings, load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.events import ledger
from nexus_memory.events.ledger import Event
from nexus_memory.writer.base import EpisodeInput, EpisodeWriter, WriteResult, WriterFailure
from nexus_memory.writer.extractor import extract
from nexus_memory.writer.run import write_events
from nexus_memory.writer.tools import WriterTools

MAX_EXAMPLES = 12


@dataclass(frozen=True)
class BenchEpisode:
    name: str
    events: list[Event]
    context: list[Event]


def bench_episodes(
    data: list[dict[str, Any]], *, conversations: int = 0, max_episodes: int = 30, episode_turns: int = 0
) -> list[BenchEpisode]:
    """The first `max_episodes` episodes: sessions, or `episode_turns`-turn chunks of them, in order."""
    found: list[BenchEpisode] = []
    for sample in data[: conversations or None]:
        history: list[Event] = []
        for number, session in enumerate(conversation_sessions(sample), 1):
            size = episode_turns or len(session) or 1
            for start in range(0, len(session), size):
                chunk = session[start : start + size]
                name = f"{sample['sample_id']}:s{number}" + (f":{start // size + 1}" if episode_turns else "")
                found.append(BenchEpisode(name, chunk, history[-CONTEXT_TURNS:]))
                history = history + chunk
                if len(found) >= max_episodes:
                    return found
    return found


class _Recorder:
    """Wraps a writer to keep each episode's WriteResult or failure (mode, dropped) for the report."""

    def __init__(self, writer: EpisodeWriter) -> None:
        self.writer = writer
        self.name = writer.name
        self.result: WriteResult | None = None
        self.failure: WriterFailure | None = None

    def write(self, tools: WriterTools, episode: EpisodeInput) -> WriteResult:
        self.result, self.failure = None, None
        try:
            self.result = self.writer.write(tools, episode)
        except WriterFailure as exc:
            self.failure = exc
            raise
        return self.result


def run_llm(
    path: Path,
    writer: EpisodeWriter | None = None,
    *,
    settings: Settings | None = None,
    conversations: int = 0,
    max_episodes: int = 30,
    episode_turns: int = 0,
    mode: str | None = None,
) -> dict[str, Any]:
    """Run `writer` (default: the LLM writer from settings) and the offline writer on the subset."""
    data = json.loads(Path(path).read_text())
    episodes = bench_episodes(data, conversations=conversations, max_episodes=max_episodes, episode_turns=episode_turns)
    if writer is None:
        from nexus_memory.writer.llm import LLMWriter

        writer = LLMWriter.from_settings(settings or load_settings(), **({"mode": mode} if mode else {}))
    turns = {e.id for episode in episodes for e in episode.events}
    offline = _offline(episodes)
    llm = _llm(episodes, writer)
    return {
        "episodes": len(episodes),
        "turns": len(turns),
        "llm": {**llm["summary"], **observation_scores(data, llm["facts_by_turn"], turns)},
        "offline": {**offline["summary"], **observation_scores(data, offline["facts_by_turn"], turns)},
        "examples": llm["examples"],
        "per_episode": llm["per_episode"],
    }


def _offline(episodes: list[BenchEpisode]) -> dict[str, Any]:
    facts_by_turn: dict[str, list[str]] = defaultdict(list)
    started = time.perf_counter()
    for episode in episodes:
        for fact in extract(episode.events, context=episode.context).facts:
            facts_by_turn[fact.source_event_id].append(fact.text)
    seconds = time.perf_counter() - started
    facts = sum(len(v) for v in facts_by_turn.values())
    return {"summary": {"facts": facts, "seconds": round(seconds, 2)}, "facts_by_turn": facts_by_turn}


def _llm(episodes: list[BenchEpisode], writer: EpisodeWriter) -> dict[str, Any]:
    recorder = _Recorder(writer)
    per_episode: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="nexus-bench-llm-") as tmp,
        Stores(load_settings(data_dir=Path(tmp) / "data", inbox_dir=Path(tmp) / "inbox")) as stores,
    ):
        with stores.transaction():
            for episode in episodes:
                for event in [*episode.context, *episode.events]:
                    ledger.append_event(stores, event)
        for i, episode in enumerate(episodes, 1):
            outcome = write_events(stores, episode.events, recorder, context=episode.context)
            row = _episode_row(episode, outcome, recorder)
            per_episode.append(row)
            # A slow local model takes minutes per episode: say how it goes while it runs.
            print(
                f"[{i}/{len(episodes)}] {row['episode']}: {row['status']} ({row['mode']}) {row['seconds']}s "
                f"kept {row['facts_kept']} dropped {row['facts_dropped']} {row['error'][:120]}",
                file=sys.stderr,
            )
        rows = stores.conn.execute("SELECT source_event_id, text FROM facts ORDER BY created_at").fetchall()
    facts_by_turn: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        facts_by_turn[row[0]].append(row[1])
    content = {e.id: e for episode in episodes for e in episode.events}
    examples = [
        {"turn": f"{content[r[0]].sender_name}: {content[r[0]].content[:200]}", "fact": r[1]}
        for r in rows[:MAX_EXAMPLES]
        if r[0] in content
    ]
    summary = _summary(per_episode, writer)
    return {"summary": summary, "facts_by_turn": facts_by_turn, "examples": examples, "per_episode": per_episode}


def _episode_row(episode: BenchEpisode, outcome: Any, recorder: _Recorder) -> dict[str, Any]:
    result, failure = recorder.result, recorder.failure
    dropped = result.dropped if result else {}
    return {
        "episode": episode.name,
        "turns": len(episode.events),
        "status": outcome.status,
        "mode": result.mode if result else (failure.mode if failure else ""),
        "fallback": result.fallback if result else "",
        "seconds": round(outcome.seconds, 2),
        "prompt_tokens": outcome.prompt_tokens,
        "completion_tokens": outcome.completion_tokens,
        "facts_kept": outcome.facts,
        "facts_dropped": sum(n for k, n in dropped.items() if k.startswith("fact:")),
        "dropped": dropped,
        "error": (outcome.error or "")[:300],
    }


def _summary(rows: list[dict[str, Any]], writer: EpisodeWriter) -> dict[str, Any]:
    ok = [r for r in rows if r["status"] == "ok"]
    dropped: Counter[str] = Counter()
    for row in rows:
        dropped.update(row["dropped"])
    seconds = sum(r["seconds"] for r in rows)
    return {
        "writer": writer.name,
        "mode_setting": getattr(writer, "mode", ""),
        "ok": len(ok),
        "failed": len(rows) - len(ok),
        "ok_rate": round(len(ok) / len(rows), 3) if rows else 0.0,
        "ok_by_mode": dict(Counter(r["mode"] for r in ok)),
        "switched_by_auto": sum(1 for r in rows if r["fallback"]),
        "seconds": round(seconds, 1),
        "seconds_per_episode": round(seconds / len(rows), 2) if rows else 0.0,
        "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
        "completion_tokens": sum(r["completion_tokens"] for r in rows),
        "facts": sum(r["facts_kept"] for r in rows),
        "facts_dropped": sum(r["facts_dropped"] for r in rows),
        "dropped": dict(sorted(dropped.items())),
    }
