"""The hierarchical context block within a token budget (seed 000's retrieval order): mental models, then
observations, then facts.

`build_context(stores, prompt, max_tokens=800)` recalls the higher layers and the facts separately, keeps
the relevant ones (the noise rule below), and packs them in that order:

- a mental model or an observation too large for its share of the budget is cut to its lines most
  relevant to the prompt (an observation's fact lines by their vector's similarity to the prompt),
  shown in time order under its header;
- a stale observation is checked against its facts: the newest facts of its entity that consolidation
  has not seen yet follow it ("newer, not consolidated yet");
- a fact already shown inside an observation is not repeated.
Every item keeps its provenance: the facts it rests on and their source events.

Noise rule: an item counts only when its cosine similarity to the prompt is >= `min_score` (MiniLM:
unrelated sentences sit around 0.0-0.2, paraphrases above 0.5), or it has a keyword, entity or recency
hit. The semantic strategy always returns some nearest neighbours; only they are held to the threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nexus_memory import db
from nexus_memory.consolidation.render import MemberFact, fact_line
from nexus_memory.consolidation.store import fact_rows, fact_vectors
from nexus_memory.consolidation.topics import content_words
from nexus_memory.recall.engine import default_embedder, recall
from nexus_memory.recall.results import RecallResult
from nexus_memory.stores import Stores
from nexus_memory.tokens import estimate_tokens
from nexus_memory.vector_index import index_state

MIN_SEMANTIC_SIM = 0.35
LAYERS = ("mental_model", "observation", "fact")
MODEL_SHARE = 0.34  # of the budget, at most, for one mental model
OBSERVATION_SHARE = 0.5  # of the budget, at most, for one observation
HIGHER_RESULTS = 6  # mental models and observations recalled
NEWER_FACTS = 2  # unconsolidated facts shown after a stale observation
_EVIDENCE = ("keyword", "entity", "recency")
_SCOPE_OF = {"mental_model": "mental_models", "observation": "observations", "fact": "facts"}


@dataclass
class ContextItem:
    """One packed item: its header and lines as injected, and what it rests on."""

    type: str  # 'mental_model' | 'observation' | 'fact'
    id: str
    title: str
    lines: list[str]
    result: RecallResult
    is_stale: bool = False
    fact_ids: list[str] = field(default_factory=list)  # every fact it rests on (shown or not)
    source_event_ids: list[str] = field(default_factory=list)
    shown_fact_ids: list[str] = field(default_factory=list)  # the facts whose lines it shows

    @property
    def text(self) -> str:
        return "\n".join([self.title, *self.lines]) if self.title else "\n".join(self.lines)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


def is_relevant(result: RecallResult, min_score: float = MIN_SEMANTIC_SIM) -> bool:
    """The noise rule of the module docstring."""
    if any(strategy in result.ranks for strategy in _EVIDENCE):
        return True
    similarity = result.metadata.get("scores", {}).get("semantic")
    return similarity is not None and similarity >= min_score


def build_context(
    stores: Stores,
    prompt: str,
    *,
    max_tokens: int = 800,
    layers: Sequence[str] = LAYERS,
    session_id: str | None = None,
    max_facts: int | None = None,
    reference_time: int | None = None,
    embedder: Any = None,
    min_score: float = MIN_SEMANTIC_SIM,
    tags: Sequence[str] | None = None,
) -> list[ContextItem]:
    """The items of the context block for `prompt`, in injection order (see module docstring)."""
    limit = max(max_facts * 3, 10) if max_facts else fact_limit(max_tokens)
    recalled = recall_layers(
        stores,
        prompt,
        layers=layers,
        session_id=session_id,
        fact_results=limit,
        reference_time=reference_time,
        embedder=embedder,
        tags=tags,
    )
    return pack(
        stores, prompt, recalled, max_tokens=max_tokens, max_facts=max_facts, embedder=embedder, min_score=min_score
    )


def fact_limit(max_tokens: int) -> int:
    """Facts recalled to fill `max_tokens` (a fact line is ~15-30 tokens)."""
    return max(10, max_tokens // 15)


@dataclass
class Recalled:
    """What the packer chooses from: higher-layer results (models, observations) and fact results."""

    higher: list[RecallResult]
    facts: list[RecallResult]


def recall_layers(
    stores: Stores,
    prompt: str,
    *,
    layers: Sequence[str] = LAYERS,
    session_id: str | None = None,
    fact_results: int = 50,
    reference_time: int | None = None,
    embedder: Any = None,
    tags: Sequence[str] | None = None,
) -> Recalled:
    """One recall over the higher layers in `layers`, one over facts (the facts-only list is the same)."""
    common = {"reference_time": reference_time, "embedder": embedder, "touch": False, "budget": "mid"}
    higher = [layer for layer in layers if layer != "fact"]
    out = Recalled([], [])
    if higher:
        out.higher = recall(
            stores,
            prompt,
            scope=[_SCOPE_OF[layer] for layer in higher],
            exclude_session_id=session_id,
            max_results=HIGHER_RESULTS,
            tags=tags,
            **common,
        ).results
    if "fact" in layers:
        out.facts = recall(
            stores, prompt, scope=("facts",), exclude_session_id=session_id, max_results=fact_results, **common
        ).results
    return out


def pack(
    stores: Stores,
    prompt: str,
    recalled: Recalled,
    *,
    max_tokens: int,
    max_facts: int | None = None,
    embedder: Any = None,
    min_score: float = MIN_SEMANTIC_SIM,
) -> list[ContextItem]:
    """Pack recalled items into `max_tokens`: models, then observations, then facts not shown yet."""
    packer = _Packer(stores, prompt, max_tokens, embedder)
    relevant = [r for r in recalled.higher if is_relevant(r, min_score) and r.metadata.get("subtype") != "reflection"]
    for result in sorted(relevant, key=lambda r: r.type != "mental_model"):  # models first, stable otherwise
        packer.add_higher(result)
    shown = 0
    for result in recalled.facts:
        if max_facts is not None and shown >= max_facts:
            break
        if is_relevant(result, min_score) and packer.add_fact(result):
            shown += 1
    return packer.items


class _Packer:
    """Fills the budget item by item; remembers which facts are already shown."""

    def __init__(self, stores: Stores, prompt: str, max_tokens: int, embedder: Any) -> None:
        self.stores, self.conn = stores, stores.conn
        self.max_tokens = max_tokens
        self.used = 0
        self.items: list[ContextItem] = []
        self.covered: set[str] = set()
        self.terms = set(content_words(prompt))
        self.model = index_state(self.conn)
        self.query = _query_vector(stores, prompt, embedder)

    @property
    def left(self) -> int:
        return self.max_tokens - self.used

    def _take(self, item: ContextItem) -> bool:
        if not item.lines or item.tokens > self.left:
            return False
        self.items.append(item)
        self.used += item.tokens
        self.covered.update(item.shown_fact_ids)
        return True

    def add_fact(self, result: RecallResult) -> bool:
        if result.id in self.covered:
            return False
        line = f"- {' '.join(result.text.split())}{_date_suffix(result.as_of)}"
        item = ContextItem(
            "fact", result.id, "", [line], result, False, [result.id], result.source_event_ids, [result.id]
        )
        return self._take(item)

    def add_higher(self, result: RecallResult) -> bool:
        if result.type == "observation":
            return self._take(self._observation(result))
        return self._take(self._model(result))

    def _observation(self, result: RecallResult) -> ContextItem:
        cap = min(self.left, int(self.max_tokens * OBSERVATION_SHARE))
        text_lines = result.text.splitlines()
        title = text_lines[0] if text_lines else ""
        changes = [ln for ln in text_lines[1:] if not ln.startswith("- ")]
        fact_ids = [f for f in result.metadata.get("fact_ids", []) if f not in self.covered]
        rows = fact_rows(self.conn, fact_ids)
        members = [MemberFact(f, rows[f]["text"], rows[f]["as_of"]) for f in fact_ids if f in rows]
        if not any(ln.startswith("- ") for ln in text_lines[1:]):  # free text (an LLM wrote it): keep it whole
            body, members = changes, []
        else:
            body = list(changes)
        newer: list[MemberFact] = []
        if result.is_stale:
            newer = self._newer_facts(result.id, set(fact_ids))
            title += " (stale: newer facts follow)"
        lines, chosen = self._fit(title, body, members, newer, cap)
        item = ContextItem(
            "observation", result.id, title, lines, result, result.is_stale, [*fact_ids, *(f.id for f in newer)]
        )
        item.source_event_ids = [r["source_event_id"] for r in rows.values() if r["source_event_id"]]
        item.shown_fact_ids = [f.id for f in chosen] + [
            f.id for f in newer if any(fact_line(f)[2:] in ln for ln in lines)
        ]
        return item

    def _fit(
        self, title: str, body: list[str], members: list[MemberFact], newer: list[MemberFact], cap: int
    ) -> tuple[list[str], list[MemberFact]]:
        """The body plus the most relevant fact lines that fit in `cap` tokens, in time order."""
        budget = cap - estimate_tokens(title + "\n" + "\n".join(body))
        chosen: list[MemberFact] = []
        for fact in self._ranked(members):
            cost = estimate_tokens(fact_line(fact)) + 1
            if cost <= budget:
                chosen.append(fact)
                budget -= cost
        lines = [*body, *(fact_line(f) for f in sorted(chosen, key=lambda f: (f.as_of, f.id)))]
        for fact in newer:
            line = "- newer, not consolidated yet: " + fact_line(fact)[2:]
            if estimate_tokens(line) + 1 <= budget:
                lines.append(line)
                budget -= estimate_tokens(line) + 1
        return (lines if chosen or not members else []), chosen

    def _ranked(self, facts: list[MemberFact]) -> list[MemberFact]:
        """Facts most similar to the prompt first (by vector when there is one, else shared words)."""
        if not facts:
            return []
        vectors = fact_vectors(self.conn, self.model[0], [f.id for f in facts]) if self.model else {}
        if self.query is not None and vectors:
            score = {f.id: float(np.dot(vectors[f.id], self.query)) if f.id in vectors else -1.0 for f in facts}
        else:
            score = {f.id: float(len(self.terms & set(content_words(f.text)))) for f in facts}
        return sorted(facts, key=lambda f: (-score[f.id], -f.as_of, f.id))

    def _newer_facts(self, run_id: str, members: set[str]) -> list[MemberFact]:
        """The entity's facts consolidation has not seen yet, most relevant first (at most NEWER_FACTS)."""
        rows = self.conn.execute(
            """SELECT f.id, f.text, f.as_of FROM analysis_runs r JOIN fact_entities fe ON fe.entity_id = r.entity_id
               JOIN facts f ON f.id = fe.fact_id WHERE r.id = ? AND f.is_consolidated = 0
               ORDER BY fe.as_of DESC LIMIT 50""",
            (run_id,),
        ).fetchall()
        facts = [MemberFact(r[0], r[1], r[2]) for r in rows if r[0] not in members and r[0] not in self.covered]
        return self._ranked(facts)[:NEWER_FACTS]

    def _model(self, result: RecallResult) -> ContextItem:
        """A mental model cut to its lines sharing the most words with the prompt, in report order."""
        cap = min(self.left, int(self.max_tokens * MODEL_SHARE))
        name = result.metadata.get("name") or ""
        title = f"{name} (stale)" if result.is_stale else name
        report = result.text.removeprefix(f"{name}: ")
        candidates = [ln for ln in report.splitlines() if ln.strip() and not ln.startswith(("#", "Question:"))]
        scored = sorted(range(len(candidates)), key=lambda i: (-len(self.terms & set(content_words(candidates[i]))), i))
        budget = cap - estimate_tokens(title)
        keep: list[int] = []
        for i in scored:
            if not self.terms & set(content_words(candidates[i])):
                break
            cost = estimate_tokens(candidates[i]) + 1
            if cost <= budget:
                keep.append(i)
                budget -= cost
        fact_ids = _model_facts(self.conn, result.id)
        lines = [candidates[i] for i in sorted(keep)]
        item = ContextItem("mental_model", result.id, title, lines, result, result.is_stale, fact_ids)
        rows = fact_rows(self.conn, fact_ids)
        item.source_event_ids = [r["source_event_id"] for r in rows.values() if r["source_event_id"]]
        shown = set(lines)
        item.shown_fact_ids = [f for f, r in rows.items() if fact_line(MemberFact(f, r["text"], r["as_of"])) in shown]
        return item


def _model_facts(conn: db.Connection, model_id: str) -> list[str]:
    """Facts of the observations a mental model version was built from (its provenance)."""
    return [
        r[0]
        for r in conn.execute(
            """SELECT DISTINCT o.fact_id FROM mental_model_sources s JOIN observation_facts o
               ON o.analysis_run_id = s.source_id WHERE s.mental_model_id = ? AND s.source_type = 'observation'""",
            (model_id,),
        )
    ]


def _query_vector(stores: Stores, prompt: str, embedder: Any) -> np.ndarray | None:
    """The prompt's vector under the index model (None without an index or a model)."""
    model = embedder or default_embedder(stores)
    if model is None or not prompt.strip():
        return None
    return np.asarray(model.encode_query(prompt[:2000]), dtype=np.float32)


def _date_suffix(as_of: int | None) -> str:
    from datetime import UTC, datetime

    if as_of is None:
        return ""
    return f" ({datetime.fromtimestamp(as_of / 1000, UTC).strftime('%Y-%m-%d')})"
