"""Answer in context: does a block of text hold every content word of a question's gold answer?

The question an injected context must pass before any model reads it: with this block in front of it,
could an assistant answer at all? A block *holds* an answer when every content word of the answer
(lower-cased, punctuation and the project's stopwords dropped; numbers and month names kept) occurs in
it as a word. Answers with no content word (all stopwords) are not scored.

Three blocks are compared at the same token budget (`estimate_tokens`, the project's one counter):
- memory: what `get_context` injects (the caller builds it);
- BM25: the raw turns best ranked by SQLite FTS5 BM25 for the question, each as "date, speaker: text",
  packed in rank order while they fit;
- ceiling: the whole conversation, every turn the same way (no budget): an answer whose words are not
  there at all (an inference, a paraphrase) no block can hold.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.tokens import estimate_tokens
from nexus_memory.core.words import STOPWORDS
from nexus_memory.recall.keyword import extract_terms, match_expression

BUDGETS = (400, 800, 1600)
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """The lower-cased words of `text` (letters and digits; punctuation splits)."""
    return _WORD.findall(text.lower())


def answer_words(answer: Any) -> frozenset[str]:
    """The content words of a gold answer: its words without stopwords ("7 May 2023" -> 7, may, 2023)."""
    return frozenset(w for w in words(str(answer)) if w not in STOPWORDS)


def holds(answer: Any, block: str) -> bool | None:
    """Whether `block` holds every content word of `answer`; None when the answer has none."""
    wanted = answer_words(answer)
    return wanted <= set(words(block)) if wanted else None


class TurnIndex:
    """BM25 over raw turns, each kept as the line a transcript shows ("8 May 2023, Caroline: ...")."""

    def __init__(self, lines: Sequence[tuple[str, str]]) -> None:
        """`lines`: (id, line) per turn, in conversation order."""
        self.lines = dict(lines)
        self.conn = db.sqlite.connect(":memory:")
        self.conn.execute("CREATE VIRTUAL TABLE turns USING fts5(id UNINDEXED, text, tokenize='porter unicode61')")
        self.conn.executemany("INSERT INTO turns (id, text) VALUES (?, ?)", lines)

    def ranked(self, question: str) -> list[str]:
        """Every turn matching a query term of `question`, best BM25 first (the same terms recall uses)."""
        expression = match_expression(extract_terms(question))
        if not expression:
            return []
        rows = self.conn.execute("SELECT id FROM turns WHERE turns MATCH ? ORDER BY rank", (expression,))
        return [r[0] for r in rows]

    def packed(self, question: str, max_tokens: int) -> str:
        """The best-ranked turns that fit in `max_tokens`, in rank order (a turn too long is skipped)."""
        chosen: list[str] = []
        used = 0
        for turn_id in self.ranked(question):
            cost = estimate_tokens(self.lines[turn_id]) + 1
            if used + cost <= max_tokens:
                chosen.append(self.lines[turn_id])
                used += cost
        return "\n".join(chosen)

    def whole(self) -> str:
        """The ceiling: every turn."""
        return "\n".join(self.lines.values())


def score_question(answer: Any, memory: dict[int, str], index: TurnIndex, question: str) -> dict[str, bool] | None:
    """{"memory@B", "bm25@B" per budget B of `memory`, "ceiling"}: whether each block holds the answer;
    None when the answer has no content word."""
    if not answer_words(answer):
        return None
    row = {f"memory@{b}": bool(holds(answer, block)) for b, block in memory.items()}
    row |= {f"bm25@{b}": bool(holds(answer, index.packed(question, b))) for b in memory}
    row["ceiling"] = bool(holds(answer, index.whole()))
    return row


def summarise(rows: Iterable[dict[str, Any]], categories: dict[int, str]) -> dict[str, Any]:
    """Shares per block, overall (categories 1-4) and per category; rows carry `category` and the flags."""
    scored = [r for r in rows if r.get("category") in (1, 2, 3, 4) and "ceiling" in r]

    def shares(group: list[dict[str, Any]]) -> dict[str, Any]:
        keys = [k for k in group[0] if k.startswith(("memory@", "bm25@")) or k == "ceiling"] if group else []
        return {**{k: round(statistics.fmean(r[k] for r in group), 4) for k in keys}, "n": len(group)}

    per = {
        categories.get(c, str(c)): shares([r for r in scored if r["category"] == c])
        for c in sorted({r["category"] for r in scored})
    }
    return {"overall": shares(scored), "per_category": per}


def line(summary: dict[str, Any], budget: int = 800) -> str:
    """One human line: memory / BM25 / ceiling at `budget`, overall and per category."""

    def part(name: str, s: dict[str, Any]) -> str:
        return f"{name} {s.get(f'memory@{budget}', 0):.2f}/{s.get(f'bm25@{budget}', 0):.2f}/{s.get('ceiling', 0):.2f}"

    parts = [part("overall", summary["overall"])] + [part(n, s) for n, s in summary["per_category"].items()]
    return f"answer in context @{budget} (memory/bm25/ceiling): " + "; ".join(parts)
