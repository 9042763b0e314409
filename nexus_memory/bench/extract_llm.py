"""Judge the LLM writer on a LoCoMo subset, next to the offline writer on the same episodes.

`nexus-memory bench extract --writer llm --data PATH` runs the configured LLM writer
(NEXUS_LLM_BASE_URL, NEXUS_LLM_MODEL(_WRITER), NEXUS_LLM_MODE; any OpenAI-compatible server) over
the first episodes of the file and reports, per episode: status, the mode that wrote it, seconds,
prompt and completion tokens, facts kept and facts dropped by validation (with reasons) and facts it
corrected. Over the subset it reports, per mode, episodes ok, facts kept, dropped by reason and the
*grounded share*: of the facts stored, those that pass the grounding rule (`facts/grounding.py`)
computed again from the stored text and its source event alone, as an outside check on validation
(the offline writer's facts are scored the same way). It also reports observation coverage and
overlap (as `bench/extract.py` defines them) for the LLM writer and for the offline writer on the very
same episodes, and a few facts as examples.

Episodes are LoCoMo sessions, or chunks of `episode_turns` turns of them (small local models read
short episodes faster); each gets the conversation's previous turns as thread context. The LLM
writer runs through the real runner (`write_events`) on a throwaway store, so its transaction,
dedup and failure handling are the production ones.
"""

from __future__ import annotations

import json
import random
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexus_memory.bench.extract import CONTEXT_TURNS, conversation_sessions, normalise_dia_ids, observation_scores
from nexus_memory.core.config import Settings, load_settings
from nexus_memory.core.db import Connection
from nexus_memory.core.stores import Stores
from nexus_memory.events import ledger
from nexus_memory.events.ledger import Event
from nexus_memory.facts.grounding import Grounding, Source, date_words, names_in
from nexus_memory.identity import store as identity
from nexus_memory.writer.base import EpisodeInput, EpisodeWriter, WriteResult, WriterFailure
from nexus_memory.writer.extractor import extract
from nexus_memory.writer.llm.episode import load_prompt
from nexus_memory.writer.llm.validation import stored_grounding
from nexus_memory.writer.run import write_events
from nexus_memory.writer.tools import WriterTools

MAX_EXAMPLES = 12
MAX_NOTE_CHARS = 1_500


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
    max_seconds: float = 0.0,
) -> dict[str, Any]:
    """Run `writer` (default: the LLM writer from settings) and the offline writer on the subset.

    `max_seconds`: start no LLM episode after this long; the report covers the episodes that ran."""
    data = json.loads(Path(path).read_text())
    episodes = bench_episodes(data, conversations=conversations, max_episodes=max_episodes, episode_turns=episode_turns)
    if writer is None:
        from nexus_memory.writer.llm import LLMWriter

        writer = LLMWriter.from_settings(settings or load_settings(), **({"mode": mode} if mode else {}))
    llm = _llm(episodes, writer, max_seconds)
    episodes = episodes[: len(llm["per_episode"])]  # a time limit may have left the last ones out
    turns = {e.id for episode in episodes for e in episode.events}
    offline = _offline(episodes)
    return {
        "episodes": len(episodes),
        "turns": len(turns),
        "llm": {**llm["summary"], **observation_scores(data, llm["facts_by_turn"], turns)},
        "offline": {**offline["summary"], **observation_scores(data, offline["facts_by_turn"], turns)},
        "examples": llm["examples"],
        "per_episode": llm["per_episode"],
    }


def _share(passed: list[bool]) -> float | None:
    return round(sum(passed) / len(passed), 4) if passed else None


def _offline(episodes: list[BenchEpisode]) -> dict[str, Any]:
    facts_by_turn: dict[str, list[str]] = defaultdict(list)
    started = time.perf_counter()
    for episode in episodes:
        for fact in extract(episode.events, context=episode.context).facts:
            facts_by_turn[fact.source_event_id].append(fact.text)
    seconds = time.perf_counter() - started
    facts = sum(len(v) for v in facts_by_turn.values())
    events, named = _episode_names(episodes)
    passed = [
        stored_grounding(text, events[turn], events[turn].sender_name or "", events[turn].peer_id, named[turn]).grounded
        for turn, texts in facts_by_turn.items()
        for text in texts
    ]
    summary = {"facts": facts, "grounded_share": _share(passed), "seconds": round(seconds, 2)}
    return {"summary": summary, "facts_by_turn": facts_by_turn}


def _llm(episodes: list[BenchEpisode], writer: EpisodeWriter, max_seconds: float = 0.0) -> dict[str, Any]:
    recorder = _Recorder(writer)
    started = time.perf_counter()
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
            if max_seconds and i > 1 and time.perf_counter() - started > max_seconds:
                print(f"time limit: {len(episodes) - i + 1} episode(s) not run", file=sys.stderr)
                episodes = episodes[: i - 1]
                break
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
        content, named = _episode_names(episodes)
        checks = [
            (turn, stored_grounding(text, content[turn], *_names(stores.conn, content[turn]), named[turn]).grounded)
            for turn, text in rows
        ]
    facts_by_turn: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        facts_by_turn[row[0]].append(row[1])
    examples = [
        {"turn": f"{content[r[0]].sender_name}: {content[r[0]].content[:200]}", "fact": r[1]}
        for r in rows[:MAX_EXAMPLES]
        if r[0] in content
    ]
    mode_of = {e.id: row["mode"] for episode, row in zip(episodes, per_episode, strict=True) for e in episode.events}
    summary = _summary(per_episode, writer, [(mode_of[turn], ok) for turn, ok in checks])
    return {"summary": summary, "facts_by_turn": facts_by_turn, "examples": examples, "per_episode": per_episode}


def _episode_names(episodes: list[BenchEpisode]) -> tuple[dict[str, Event], dict[str, list[str]]]:
    """Each new event by id, and the names its episode says (whom its "he" or "she" may mean)."""
    events: dict[str, Event] = {}
    named: dict[str, list[str]] = {}
    for episode in episodes:
        names = names_in(e.content for e in [*episode.context, *episode.events])
        for event in episode.events:
            events[event.id], named[event.id] = event, names
    return events, named


def _names(conn: Connection, event: Event) -> tuple[str, str | None]:
    """Who the stored facts call the sender and the addressee of `event` (as validation does)."""
    peer = identity.contact_name(conn, event.platform, event.peer_id) if event.peer_id else None
    return identity.speaker_name(conn, event), peer[1] if peer else event.peer_id


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
        "fixed": result.fixed if result else {},
        "notes": result.notes[:MAX_NOTE_CHARS] if result else "",  # the first drops, with what was dropped
        "error": (outcome.error or "")[:300],
    }


def _summary(rows: list[dict[str, Any]], writer: EpisodeWriter, checks: list[tuple[str, bool]]) -> dict[str, Any]:
    """The run's figures, and per mode: episodes ok, facts kept, dropped and fixed by reason, grounded share."""
    ok = [r for r in rows if r["status"] == "ok"]
    dropped: Counter[str] = Counter()
    for row in rows:
        dropped.update(row["dropped"])
    seconds = sum(r["seconds"] for r in rows)
    by_mode: dict[str, dict[str, Any]] = {}
    for mode in sorted({r["mode"] for r in rows if r["mode"]}):
        mine = [r for r in rows if r["mode"] == mode]
        by_mode[mode] = {
            "episodes": len(mine),
            "ok": sum(1 for r in mine if r["status"] == "ok"),
            "seconds": round(sum(r["seconds"] for r in mine), 1),
            "tokens": sum(r["prompt_tokens"] + r["completion_tokens"] for r in mine),
            "facts": sum(r["facts_kept"] for r in mine),
            "dropped": dict(sorted(sum((Counter(r["dropped"]) for r in mine), Counter()).items())),
            "fixed": dict(sorted(sum((Counter(r["fixed"]) for r in mine), Counter()).items())),
            "grounded_share": _share([passed for m, passed in checks if m == mode]),
        }
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
        "grounded_share": _share([passed for _mode, passed in checks]),
        "by_mode": by_mode,
    }


# -- where GROUNDED_SHARE comes from ---------------------------------------------------------------
CALIBRATION_THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
CALIBRATION_SAMPLES = 400  # per conversation and set of facts the episode did not say


def calibrate_grounding(path: Path, *, seed: int = 27) -> dict[str, Any]:
    """How often facts pass the grounding rule at each threshold, on a LoCoMo file (docs/writer.md, "Grounding").

    Said (should pass): the offline writer's facts against their turns, and LoCoMo's own observations
    (abstractive paraphrases written for the benchmark) against their evidence turns. Not said (should not):
    the structured prompt's example facts moved onto a turn's speaker, a fact of another conversation with
    its speakers' names moved onto this one's, and a fact cited against the next turn of its session.
    """
    corpus = _Corpus(json.loads(Path(path).read_text()))
    sets = {"offline writer": [corpus.judge(text, event) for text, event in corpus.all_facts()]}
    sets["LoCoMo observations"] = corpus.observations()
    sets.update(corpus.not_said(random.Random(seed)))
    return {
        name: {
            "facts": len(found),
            "median_share": sorted(g.share for g in found)[len(found) // 2],
            "name_or_number_missing": round(sum(1 for g in found if g.missing_literals) / len(found), 3),
            "passing_at": {
                str(t): round(sum(1 for g in found if not g.missing_literals and g.share >= t) / len(found), 3)
                for t in CALIBRATION_THRESHOLDS
            },
        }
        for name, found in sets.items()
        if found
    }


class _Corpus:
    """A LoCoMo file as turns, the offline writer's facts and the names each turn's episode says."""

    def __init__(self, data: list[dict[str, Any]]) -> None:
        self.data = data
        self.turns: dict[str, list[Event]] = {}
        self.facts: dict[str, list[tuple[str, Event]]] = {}
        self.named: dict[str, list[str]] = {}
        for sample in data:
            history: list[Event] = []
            said: list[tuple[str, Event]] = []
            for session in conversation_sessions(sample):
                names = names_in(e.content for e in [*history[-CONTEXT_TURNS:], *session])
                self.named.update({e.id: names for e in session})
                by_id = {e.id: e for e in session}
                said += [
                    (f.text, by_id[f.source_event_id]) for f in extract(session, context=history[-CONTEXT_TURNS:]).facts
                ]
                history += session
            self.turns[str(sample["sample_id"])], self.facts[str(sample["sample_id"])] = history, said

    def judge(self, text: str, event: Event) -> Grounding:
        return stored_grounding(text, event, event.sender_name or "", event.peer_id, self.named[event.id])

    def all_facts(self) -> list[tuple[str, Event]]:
        return [fact for said in self.facts.values() for fact in said]

    def observations(self) -> list[Grounding]:
        """LoCoMo's observations against their evidence turns (one or more) and those turns' delivery."""
        found = []
        for sample in self.data:
            events = {e.id: e for e in self.turns[str(sample["sample_id"])]}
            for session in (sample.get("observation") or {}).values():
                for text, dia in (pair for annotated in session.values() for pair in annotated):
                    ids = [f"{sample['sample_id']}:{d}" for d in normalise_dia_ids(dia)]
                    evidence = [events[i] for i in ids if i in events]
                    context = [w for e in evidence for w in (e.sender_name or "", e.peer_id or "", date_words(e.as_of))]
                    if evidence:
                        source = Source([e.content for e in evidence], [*context, *self.named[evidence[0].id]])
                        found.append(source.ground(text))
        return found

    def not_said(self, rng: random.Random) -> dict[str, list[Grounding]]:
        """Facts a turn did not say: the prompt's example, another conversation's fact, the next turn's fact."""
        shown = load_prompt("writer_structured").split("## Example", 1)[1]
        examples = re.findall(r'"text": "([^"]+)"', shown)
        example_speaker = re.findall(r"speaker=(\S+)", shown)[0]
        sets: dict[str, list[Grounding]] = defaultdict(list)
        for conversation, history in self.turns.items():
            for event in rng.sample(history, min(CALIBRATION_SAMPLES, len(history))):
                for text in examples:
                    moved = text.replace(example_speaker, event.sender_name or "")
                    sets["prompt example on the speaker"].append(self.judge(moved, event))
            others = [c for c in self.turns if c != conversation]
            for _ in range(CALIBRATION_SAMPLES if others else 0):
                event = rng.choice(history)
                text, origin = rng.choice(self.facts[rng.choice(others)])
                for old, new in ((origin.sender_name, event.sender_name), (origin.peer_id, event.peer_id)):
                    text = text.replace(old or "", new or "")
                sets["another conversation's fact"].append(self.judge(text, event))
            index = {e.id: i for i, e in enumerate(history)}
            said = self.facts[conversation]
            for text, origin in rng.sample(said, min(CALIBRATION_SAMPLES, len(said))):
                i = index[origin.id]
                sets["the next turn's fact"].append(self.judge(text, history[i + 1 if i + 1 < len(history) else i - 1]))
        return sets
