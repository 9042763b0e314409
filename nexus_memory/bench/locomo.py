"""LoCoMo retrieval benchmark: recall@k through provenance back to dialogue ids, with a BM25 baseline,
and how well memory injection (`get_context`) tells evidence from noise.

For each conversation, in a fresh set of stores: ingest every turn (LoCoMo importer), group episodes,
run the offline writer, embed, then recall each question within its conversation and map the
returned facts to their source turns' `dia_id`s. recall@k = |evidence ∩ top-k turns| / |evidence|.
The baseline is SQLite FTS5 BM25 over the raw turns, with the same stopword-free query terms.

Injection, per conversation (`noise` in the output):
- own_hit_rate: the share of its questions (categories 1-4) whose `get_context` block holds at least
  one evidence turn (block facts mapped to dia_ids through provenance, as for recall@k);
- silent_on_foreign: the share of its questions for which `get_context` injects nothing from a store
  that holds only the *other* conversations (built like the others, through the whole pipeline);
  `silent_on_foreign_other_prompts` is the same without the questions that name a speaker another
  conversation also has (LoCoMo dev has two Johns).
Each question is asked as an agent hook asks it: with the conversation's speakers as `participants`
(the handles they send from), so "John" means this conversation's John, and a store that never heard
from him is not asked about the other one. `names_only` holds the same figures without participants,
where a memory that knows a John answers about him.
Answer in context (`answer_in_context`, `nexus_memory.bench.answer_context`): per question of categories
1-4, whether the `get_context` block (asked as above, with participants) holds every content word of the
gold answer, at 400, 800 and 1,600 tokens; beside it the best BM25 turns (each with its session date)
packed to the same budget, and the ceiling, the whole conversation. Overall and per category.
Those stores hold the same facts again, so vectors are computed once per text (`_VectorMemo`).

No LLM is used anywhere. Nothing here knows about LoCoMo beyond the importer and the scoring.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from nexus_memory.bench import answer_context
from nexus_memory.core import db
from nexus_memory.core.config import load_settings
from nexus_memory.core.ids import day_month_year_of
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.model import Embedder, get_embedder
from nexus_memory.events.importers import locomo, read_records
from nexus_memory.events.ledger import ingest
from nexus_memory.events.partitions import ledger_days
from nexus_memory.identity.participant import Participant
from nexus_memory.injection.context import DEFAULT_MAX_FACTS, DEFAULT_MAX_TOKENS, context_block, get_context
from nexus_memory.injection.pack import ContextItem
from nexus_memory.pipeline.layers import run_layers
from nexus_memory.recall import recall
from nexus_memory.writer.offline_writer import OfflineWriter

KS = (1, 5, 10, 20, 50)
CATEGORIES = {1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop", 5: "adversarial"}


def normalise_evidence(evidence: Iterable[str]) -> list[str]:
    """Split 'D8:6; D9:17' and repair 'D:3:5' into clean dia_ids like 'D3:5'."""
    ids: list[str] = []
    for item in evidence:
        for part in re.split(r"[;,\s]+", str(item)):
            match = re.fullmatch(r"D:?(\d+):(\d+)", part.strip())
            if match:
                ids.append(f"D{match.group(1)}:{match.group(2)}")
    return ids


def recall_at(ranked: list[str], evidence: list[str], k: int) -> float:
    gold = set(evidence)
    return len(gold & set(ranked[:k])) / len(gold) if gold else 0.0


class _VectorMemo:
    """An embedder that computes each text's vector once (the foreign stores repeat every fact).

    Same model, same text, same vector: only the time is saved. Queries go to the model each time.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.model_name = embedder.model_name
        self.dimension = embedder.dimension
        self.vectors: dict[str, np.ndarray] = {}

    @property
    def precision(self) -> str:
        return self.embedder.precision

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        if missing:
            self.vectors.update(zip(missing, self.embedder.encode(missing, batch_size=batch_size), strict=True))
        if not texts:
            return np.empty((0, self.dimension), np.float32)
        return np.stack([self.vectors[t] for t in texts])

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embedder.encode_queries(texts)


def _pipeline(stores: Stores, embedder: Embedder | _VectorMemo) -> dict[str, float]:
    """Every layer for every platform's whole history: the function the Dagster assets call."""
    writer = OfflineWriter()
    seconds: dict[str, float] = defaultdict(float)
    for platform in [r[0] for r in stores.conn.execute("SELECT DISTINCT platform FROM events ORDER BY platform")]:
        days = ledger_days(stores, platform)
        for report in run_layers(stores, platform, days, writer=writer, embedder=embedder):  # type: ignore[arg-type]
            seconds[report.layer] += report.seconds
    return {"extract_s": seconds["episodes"] + seconds["facts"], "embed_s": seconds["embeddings"]}


@contextmanager
def _built_store(
    conversations: list[dict[str, Any]], data_dir: Path, embedder: Embedder | _VectorMemo
) -> Iterator[tuple[Stores, dict[str, float]]]:
    """Fresh stores in `data_dir` holding these conversations, through the whole pipeline; and its timings."""
    data_dir.mkdir(parents=True)
    source = data_dir / "conversations.json"
    source.write_text(json.dumps(conversations))
    with Stores(load_settings(data_dir=data_dir)) as stores:
        ingest(stores, read_records(source, "locomo"))
        yield stores, _pipeline(stores, embedder)


def _fact_turns(stores: Stores, fact_ids: list[str]) -> list[str]:
    """Unique source dia_ids of facts, in result order."""
    if not fact_ids:
        return []
    rows = stores.conn.execute(
        f"""SELECT f.id, json_extract(e.metadata, '$.dia_id') FROM facts f JOIN events e ON e.id = f.source_event_id
            WHERE f.id IN ({db.placeholders(fact_ids)})""",
        fact_ids,
    ).fetchall()
    by_fact = {r[0]: r[1] for r in rows}
    seen: dict[str, None] = {}
    for fact_id in fact_ids:
        if by_fact.get(fact_id):
            seen.setdefault(by_fact[fact_id], None)
    return list(seen)


def run_conversation(
    conversation: dict[str, Any], work_dir: Path, budget: str = "mid", embedder: Embedder | _VectorMemo | None = None
) -> list[dict[str, Any]]:
    """Score every question of one conversation; returns one row per question, then one about the store."""
    rows: list[dict[str, Any]] = []
    with _built_store([conversation], work_dir / conversation["sample_id"], embedder or get_embedder()) as (
        stores,
        timings,
    ):
        events = stores.conn.execute("SELECT metadata, content, sender_name, as_of FROM events ORDER BY rowid")
        events = events.fetchall()
        turns = [(json.loads(r[0])["dia_id"], r[1]) for r in events]
        bm25 = answer_context.TurnIndex(turns)  # recall@k's baseline: the turns' text alone
        # Answer in context's BM25 and ceiling: each turn as a transcript shows it, with its session date.
        transcript = answer_context.TurnIndex(
            [(json.loads(r[0])["dia_id"], f"{day_month_year_of(r[3])}, {r[2]}: {r[1]}") for r in events]
        )
        latest = stores.conn.execute("SELECT max(as_of) FROM events").fetchone()[0]
        speakers = locomo.participants(conversation)
        for qa in conversation["qa"]:
            evidence = normalise_evidence(qa.get("evidence", []))
            if not evidence:
                continue
            q_started = time.perf_counter()
            response = recall(
                stores,
                qa["question"],
                max_results=max(KS),
                budget=budget,
                touch=False,
                reference_time=latest,
                scope=("facts",),
            )
            latency = (time.perf_counter() - q_started) * 1000
            ranked = _fact_turns(stores, [r.id for r in response.results if r.type == "fact"])
            baseline = bm25.ranked(qa["question"])[: max(KS)]
            blocks = {b: _context(stores, qa["question"], latest, speakers, b) for b in answer_context.BUDGETS}
            hits = {
                "context_hit": bool(set(_items_turns(stores, blocks[DEFAULT_MAX_TOKENS][0])) & set(evidence)),
                "context_hit_names_only": bool(
                    set(_injected_turns(stores, qa["question"], latest, ())) & set(evidence)
                ),
            }
            in_context = answer_context.score_question(
                qa.get("answer"), {b: block for b, (_, block) in blocks.items()}, transcript, qa["question"]
            )
            rows.append(
                {
                    "category": qa["category"],
                    "latency_ms": latency,
                    **{f"r@{k}": recall_at(ranked, evidence, k) for k in KS},
                    **{f"bm25_r@{k}": recall_at(baseline, evidence, k) for k in KS},
                    **hits,
                    **(in_context or {}),
                }
            )
        rows.append({"timings": timings, "facts": stores.counts()["facts"], "turns": len(turns), "latest": latest})
    return rows


def _injected_turns(
    stores: Stores, question: str, reference_time: int | None, participants: Sequence[Participant]
) -> list[str]:
    """The dia_ids of the turns behind the facts `get_context` would inject."""
    return _items_turns(stores, _context(stores, question, reference_time, participants, DEFAULT_MAX_TOKENS)[0])


def _items_turns(stores: Stores, items: Sequence[ContextItem]) -> list[str]:
    """The dia_ids of the turns behind the facts the packed items show."""
    return _fact_turns(stores, [fid for item in items for fid in (item.shown_fact_ids or [item.result.id])])


def _context(
    stores: Stores, question: str, reference_time: int | None, participants: Sequence[Participant], max_tokens: int
) -> tuple[list[ContextItem], str]:
    """The items and the block `get_context` injects at `max_tokens` (with its defaults, as an agent hook
    asks), without counting them as accessed, so later questions see the same store."""
    return context_block(
        stores,
        question,
        max_tokens=max_tokens,
        max_facts=DEFAULT_MAX_FACTS,
        reference_time=reference_time,
        participants=participants,
    )


def silence_on_foreign(
    conversation: dict[str, Any],
    others: list[dict[str, Any]],
    work_dir: Path,
    embedder: Embedder | _VectorMemo,
    reference_time: int | None,
) -> dict[str, list[tuple[str, bool]]]:
    """(question, get_context injected nothing) for each question of `conversation`, put to a store
    that holds only `others`: asked with the conversation's speakers as participants, and by names only."""
    data_dir = work_dir / f"without-{conversation['sample_id']}"
    speakers = locomo.participants(conversation)
    questions = [qa["question"] for qa in conversation["qa"] if isinstance(qa.get("question"), str)]

    def silent(question: str, people: Sequence[Participant]) -> bool:
        return get_context(stores, question, reference_time=reference_time, strict=True, participants=people) == ""

    with _built_store(others, data_dir, embedder) as (stores, _timings):
        return {
            "participants": [(q, silent(q, speakers)) for q in questions],
            "names_only": [(q, silent(q, ())) for q in questions],
        }


def shared_speakers(conversations: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Per conversation, its speakers' names that a speaker of another conversation also has.

    A store of the other conversations knows someone by that name (as far as any memory can tell, the
    same person), so a question naming them is not about a stranger there; the figures say how many.
    """

    def speakers(conversation: dict[str, Any]) -> set[str]:
        dialogue = conversation.get("conversation") or {}
        return {n for n in (dialogue.get("speaker_a"), dialogue.get("speaker_b")) if isinstance(n, str)}

    return {
        c["sample_id"]: sorted(speakers(c) & {n for o in conversations if o is not c for n in speakers(o)})
        for c in conversations
    }


def noise_figures(
    own: dict[str, list[dict[str, Any]]],
    silent: dict[str, list[tuple[str, bool]]],
    shared: dict[str, list[str]] | None = None,
    hit_key: str = "context_hit",
) -> dict[str, Any]:
    """own_hit_rate (categories 1-4, from each row's `hit_key`) and silent_on_foreign per conversation
    and over all prompts.

    `silent_on_foreign_other_prompts` leaves out the prompts that name a speaker another conversation
    shares (`shared_speakers`): those are the collisions, the rest is noise proper.
    """

    def share(flags: list[bool]) -> float | None:
        return round(sum(flags) / len(flags), 4) if flags else None

    def names_any(question: str, names: list[str]) -> bool:
        return any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", question) for n in names)

    shared = shared or {}
    hits = {sid: [r[hit_key] for r in rows if r.get("category") in (1, 2, 3, 4)] for sid, rows in own.items()}
    other = {sid: [ok for q, ok in silent.get(sid, []) if not names_any(q, shared.get(sid, []))] for sid in own}
    per = {
        sid: {
            "own_hit_rate": share(hits[sid]),
            "own_questions": len(hits[sid]),
            "silent_on_foreign": share([ok for _, ok in silent.get(sid, [])]),
            "foreign_prompts": len(silent.get(sid, [])),
            "shared_speaker_names": shared.get(sid, []),
            "silent_on_foreign_other_prompts": share(other[sid]),
            "other_prompts": len(other[sid]),
        }
        for sid in own
    }
    return {
        "own_hit_rate": share([h for flags in hits.values() for h in flags]),
        "silent_on_foreign": share([ok for pairs in silent.values() for _, ok in pairs]),
        "silent_on_foreign_other_prompts": share([ok for flags in other.values() for ok in flags]),
        "per_conversation": per,
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in rows if "category" in r]
    by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in scored:
        by_cat[CATEGORIES.get(r["category"], str(r["category"]))].append(r)
    core = [r for r in scored if r["category"] in (1, 2, 3, 4)]

    def means(group: list[dict[str, Any]], prefix: str = "") -> dict[str, float]:
        return {f"r@{k}": round(statistics.fmean(r[f"{prefix}r@{k}"] for r in group), 4) for k in KS} if group else {}

    latencies = sorted(r["latency_ms"] for r in scored)
    return {
        "questions": len(scored),
        "recall_at_10": means(core)["r@10"],
        "bm25_recall_at_10": means(core, "bm25_")["r@10"],
        "categories_1_4": means(core),
        "bm25_categories_1_4": means(core, "bm25_"),
        "per_category": {name: {**means(group), "n": len(group)} for name, group in sorted(by_cat.items())},
        "bm25_per_category": {name: means(group, "bm25_") for name, group in sorted(by_cat.items())},
        "recall_latency_ms": {
            "p50": round(latencies[len(latencies) // 2], 1),
            "p95": round(latencies[int(len(latencies) * 0.95)], 1),
        }
        if latencies
        else {},
    }


def run(path: Path, *, conversations: int = 0, budget: str = "mid") -> dict[str, Any]:
    """The whole benchmark: every conversation (or the first N) of a LoCoMo-format file."""
    data = json.loads(Path(path).read_text())
    data = data if isinstance(data, list) else [data]
    if conversations:
        data = data[:conversations]
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    own: dict[str, list[dict[str, Any]]] = {}
    latest: dict[str, int | None] = {}
    info: list[dict[str, Any]] = []
    silent: dict[str, dict[str, list[tuple[str, bool]]]] = {}
    embedder = _VectorMemo(get_embedder())
    with tempfile.TemporaryDirectory(prefix="nexus-locomo-") as tmp:
        for conversation in data:
            sample_id = conversation["sample_id"]
            print(f"locomo: {sample_id} ...", file=sys.stderr)
            result = run_conversation(conversation, Path(tmp), budget=budget, embedder=embedder)
            own[sample_id] = result[:-1]
            rows += result[:-1]
            latest[sample_id] = result[-1].pop("latest")  # its questions are asked after its last turn
            info.append({"conversation": sample_id, **result[-1]})
        for conversation in data if len(data) > 1 else []:  # a store of the others needs one other
            sample_id = conversation["sample_id"]
            print(f"locomo: {sample_id} against a store of the other conversations ...", file=sys.stderr)
            others = [c for c in data if c is not conversation]
            silent[sample_id] = silence_on_foreign(conversation, others, Path(tmp), embedder, latest[sample_id])
    summary = summarise(rows)
    shared = shared_speakers(data)
    asked = {mode: {sid: by_mode[mode] for sid, by_mode in silent.items()} for mode in ("participants", "names_only")}
    in_context = answer_context.summarise(rows, CATEGORIES)
    print(f"locomo: {answer_context.line(in_context)}", file=sys.stderr)
    summary.update(
        budget=budget,
        answer_in_context=in_context,
        noise={
            **noise_figures(own, asked["participants"], shared),
            "names_only": noise_figures(own, asked["names_only"], shared, hit_key="context_hit_names_only"),
        },
        conversations=info,
        seconds=round(time.perf_counter() - started, 1),
        writer="offline",
        model=embedder.model_name,
    )
    return summary


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]), conversations=int(sys.argv[2]) if len(sys.argv) > 2 else 0), indent=1))
