"""The hierarchical context block within a token budget (the retrieval order of docs/recall.md): mental models, then
observations, then facts.

`build_context(stores, prompt, max_tokens=800)` reads the prompt once (`nexus_memory.recall.prompt`), recalls
every layer at once with that reading, keeps the relevant ones (the noise rule
below, with the same reading) and packs them:

- each relevant mental model first, as its title and its report lines that share words with the prompt
  (who it is, what changed), within a small share of the budget;
- then the recalled facts in their fused rank order, each placed under the relevant observation it
  belongs to (the observation's header and its change-over-time sentences shown once, each fact as a
  dated line without the repeated subject), or on its own when it belongs to none; so the hierarchy
  packs the facts the ranking chose, in fewer tokens and with their topic and history around them;
  under a cap on facts (`max_facts`), one fact per source event: a second fact of a turn already
  shown would take the slot of another turn, which may hold the answer;
- with budget left, each relevant observation adds its members most similar to the prompt;
- a stale observation is checked against its facts: the newest facts of its entity that consolidation
  has not seen yet follow it ("newer, not consolidated yet");
- a fact on its own that repeats the block (at most NOVELTY of its content words new to it: a second fact of a
  turn already shown, a rewording) waits: it is shown after every other recalled fact, while budget is left,
  so its tokens go to a line that adds something first;
- no fact is shown twice; facts on their own are shown in the order said under one heading per day
  ("### 8 May 2023"), the heading's tokens paid once for the day;
- a fact on its own whose source message is a short chat turn (at most MESSAGE_TOKENS, and nothing around
  its sender's words: no subject, quoted reply, signature or forwarded part, as the writer reads a message) is
  shown as that message ("- Caroline: <what she said>"), once for all its facts, while the messages fit
  in the first MESSAGE_SHARE of the budget; then facts. A fact is one sentence of a turn, and the answer
  is often in the sentence beside it ("Luna and Oliver! They are so sweet…" keeps only "they are so
  sweet"); a whole turn costs about two facts, so the rest of the budget keeps the ranking's depth. A
  message any of whose facts is hidden (corrected, decayed) is not shown: it would say it again. The
  message carries the dates its facts resolved ("yesterday (on 7 May 2023)"), else the time they are about,
  and the question it answers when the writer kept one of its facts with it (ASKED: "5 years already!" says
  nothing alone);
- events of other sessions recorded moments ago, that the writer has not read yet and that hold half of
  the prompt's words (`nexus_memory.recall.fresh`), have room set aside first (at most FRESH_ITEMS, half
  the budget) and are shown last, as what was said: no fact of them exists yet.
Every item keeps its provenance: the facts it rests on and their source events.

Noise rule: an item counts only when its cosine similarity to the prompt is >= `min_score` (MiniLM:
unrelated sentences sit around 0.0-0.2, paraphrases above 0.5), or it has a keyword, entity or recency
hit. The semantic strategy always returns some nearest neighbours; only they are held to the threshold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nexus_memory.core import db
from nexus_memory.core.ids import day_month_year_of, day_of
from nexus_memory.core.stores import Stores
from nexus_memory.core.tokens import estimate_tokens
from nexus_memory.embeddings.vectors.vec0 import index_state
from nexus_memory.facts.state import hidden_sql
from nexus_memory.identity import store as identity
from nexus_memory.identity.participant import Participant
from nexus_memory.injection import relevance
from nexus_memory.observations.render import MemberFact, fact_line, with_about
from nexus_memory.observations.store import fact_rows, fact_vectors
from nexus_memory.observations.subjects import load_entities
from nexus_memory.observations.topics import content_words
from nexus_memory.recall.engine import recall
from nexus_memory.recall.filters import Filters
from nexus_memory.recall.fresh import fresh_events
from nexus_memory.recall.keyword import extract_terms
from nexus_memory.recall.prompt import Prompt, read_prompt
from nexus_memory.recall.results import RecallResult
from nexus_memory.recall.strategies import default_embedder
from nexus_memory.writer.extractor.dates import ANNOTATION_RE
from nexus_memory.writer.extractor.structure import read_message

LAYERS = ("mental_model", "observation", "fact", "event")  # event: said moments ago, no fact of it yet
MODEL_SHARE = 0.15  # of the budget, at most, for one mental model
SIBLINGS = 3  # members an observation adds beyond the recalled facts, when budget is left
HIGHER_RESULTS = 6  # mental models and observations recalled
NEWER_FACTS = 2  # unconsolidated facts shown after a stale observation
FRESH_ITEMS = 3  # events not processed yet, at most, and at most half of the budget
FRESH_CHARS = 400  # of one such event's text
# Whole source messages instead of their facts (module docstring). The share was chosen by leave-one-
# conversation-out on LoCoMo dev, one value for 400, 800 and 1,600 tokens (docs/recall.md, "Injection").
MESSAGE_SHARE = 0.6  # of the facts' budget, at most, spent on whole messages
MESSAGE_TOKENS = 100  # a longer message (an email, a document) is shown as its facts
# A fact line with at most this share of its content words new to the block waits for the end (module
# docstring); chosen by leave-one-conversation-out on LoCoMo dev (docs/recall.md, "Injection").
NOVELTY = 0.2
# The block's section headings, in block order (injection/context.py writes them). Each costs budget once,
# when its first item is placed, so the block as written fits `max_tokens`.
SECTION_HEADINGS = {
    "mental_model": "## Mental models",
    "observation": "## Observations",
    "fact": "## Relevant memory",
    "event": "## Said moments ago (no facts of it yet)",
}
_EVIDENCE = ("keyword", "entity", "recency")
_SCOPE_OF = {"mental_model": "mental_models", "observation": "observations", "fact": "facts"}


@dataclass
class ContextItem:
    """One packed item: its header and lines as injected, and what it rests on."""

    type: str  # 'mental_model' | 'observation' | 'fact' | 'event' (said moments ago, no fact of it yet)
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
        """What it costs in the block as written: each line with its newline, the title as a '### ' heading
        (an upper bound on the estimate of the joined text, so a packed block fits its budget)."""
        title = estimate_tokens(f"### {self.title}") + 1 if self.title else 0
        return title + sum(estimate_tokens(line) + 1 for line in self.lines)


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
    tags: Sequence[str] | None = None,
    participants: Sequence[Participant] = (),
) -> list[ContextItem]:
    """The items of the context block for `prompt`, in injection order (see module docstring);
    `participants` say who a name in the prompt means (`nexus_memory.recall.participants`)."""
    limit = max(max_facts * 3, 10) if max_facts else fact_limit(max_tokens)
    reading = read_prompt(stores.conn, prompt, participants=participants, reference_time=reference_time)
    fresh = fresh_items(stores, reading, session_id, max_tokens // 2) if "event" in layers else []
    recalled = recall_layers(
        stores,
        reading,
        layers=layers,
        session_id=session_id,
        fact_results=limit,
        reference_time=reference_time,
        embedder=embedder,
        tags=tags,
    )
    spent = sum(item.tokens for item in fresh) + (heading_tokens("event") if fresh else 0)
    packed = pack(stores, reading, recalled, max_tokens=max_tokens - spent, max_facts=max_facts, embedder=embedder)
    return [*packed, *fresh]


def heading_tokens(kind: str) -> int:
    """What a section's heading costs in the block, with its newline and the blank line before it."""
    return estimate_tokens(SECTION_HEADINGS[kind]) + 2


def fresh_items(stores: Stores, prompt: Prompt, session_id: str | None, max_tokens: int) -> list[ContextItem]:
    """Events of other sessions said moments ago, before the writer read them (see module docstring)."""
    items: list[ContextItem] = []
    max_tokens -= heading_tokens("event")
    for result in fresh_events(stores.conn, prompt, Filters(exclude_session_id=session_id), FRESH_ITEMS):
        who = sender_label(
            stores.conn, result.platform, result.metadata.get("sender_id"), result.metadata.get("sender_name")
        )
        text = " ".join(result.text.split())
        text = text if len(text) <= FRESH_CHARS else text[: FRESH_CHARS - 1] + "…"
        line = f"- {who}: {text} ({day_of(result.as_of)}, {result.platform})"
        item = ContextItem("event", result.id, "", [line], result, source_event_ids=[result.id])
        if sum(i.tokens for i in items) + item.tokens > max_tokens:
            break
        items.append(item)
    return items


def sender_label(conn: db.Connection, platform: str, handle: str | None, name: str | None) -> str:
    """Who a message shown in the block is from: its own sender name, else the name the identity store has for
    its handle (identity.contact_name), and only when there is none the handle itself (a phone number, an
    email address): a person reads a name where memory knows one."""
    if name and name != handle:
        return name
    if not handle:
        return ""
    known = identity.contact_name(conn, platform, handle)
    return known[1] if known else handle


def fact_limit(max_tokens: int) -> int:
    """Facts recalled to fill `max_tokens` (a fact line is ~15-30 tokens)."""
    return max(10, max_tokens // 15)


@dataclass
class Recalled:
    """What the packer chooses from: higher-layer results (models, observations) and fact results."""

    higher: list[RecallResult]
    facts: list[RecallResult]
    window: tuple[int | None, int | None] = (None, None)  # the time the prompt asked about, if any


def recall_layers(
    stores: Stores,
    prompt: str | Prompt,
    *,
    layers: Sequence[str] = LAYERS,
    session_id: str | None = None,
    fact_results: int = 50,
    reference_time: int | None = None,
    embedder: Any = None,
    tags: Sequence[str] | None = None,
) -> Recalled:
    """One recall over every layer in `layers` (higher layers skipped while the store has none), with one
    reading of the prompt (`read_prompt`, relative to `reference_time` when it is a str), split into the
    higher layers' best HIGHER_RESULTS and the best `fact_results` facts. One recall, not one per kind: the
    prompt is embedded, searched and fused once."""
    prompt = read_prompt(stores.conn, prompt, reference_time=reference_time)
    higher = [layer for layer in layers if layer in ("mental_model", "observation")]
    if higher and not _has_higher_layers(stores.conn):
        higher = []
    scope = [_SCOPE_OF[layer] for layer in (*higher, *(["fact"] if "fact" in layers else []))]
    if not scope:
        return Recalled([], [])
    response = recall(
        stores,
        prompt,
        scope=scope,
        exclude_session_id=session_id,
        max_results=(HIGHER_RESULTS if higher else 0) + (fact_results if "fact" in layers else 0),
        tags=tags,
        reference_time=reference_time,
        embedder=embedder,
        touch=False,
        budget="mid",
    )
    return Recalled(
        [r for r in response.results if r.type != "fact"][:HIGHER_RESULTS],
        [r for r in response.results if r.type == "fact"][:fact_results],
        (response.time_after, response.time_before) if "fact" in layers else (None, None),
    )


def pack(
    stores: Stores,
    prompt: str | Prompt,
    recalled: Recalled,
    *,
    max_tokens: int,
    max_facts: int | None = None,
    embedder: Any = None,
) -> list[ContextItem]:
    """Pack recalled items into `max_tokens` (see module docstring); items in injection order. A
    Prompt already read carries the participants who say what its names mean (`read_prompt`)."""
    prompt = read_prompt(stores.conn, prompt)
    # The noise gate (nexus_memory.injection.relevance) decides for every layer; reflections and the writer's own
    # notes are never injected as matches (the reflection has its own section).
    candidates = [r for r in recalled.higher if r.metadata.get("subtype") not in _NOT_INJECTED] + recalled.facts
    about = relevance.fact_about_times(stores.conn, [r.id for r in recalled.facts])
    kept = relevance.evidence(stores.conn, prompt, candidates, window=recalled.window, about_times=about)
    higher = [r for r in kept if r.type != "fact"]
    packer = _Packer(stores, prompt, max_tokens, embedder, [r for r in higher if r.type == "observation"], about)
    packer.use_messages([r for r in kept if r.type == "fact"])
    for model in (r for r in higher if r.type == "mental_model"):
        packer.add_model(model)
    shown, told = 0, set[str]()  # facts shown; their source events
    for result in (r for r in kept if r.type == "fact"):
        if max_facts is not None and shown >= max_facts:
            break
        if max_facts is not None and result.source_event_ids and told.issuperset(result.source_event_ids):
            continue  # see module docstring: the slot goes to another turn
        if packer.add_fact(result):
            shown += 1
            told.update(result.source_event_ids)
    for result in packer.waiting:  # the facts that repeated the block, while budget is left
        if max_facts is not None and shown >= max_facts:
            break
        if packer.add_fact(result, last=True):
            shown += 1
            told.update(result.source_event_ids)
    packer.add_siblings()
    return packer.finish()


_NOT_INJECTED = ("reflection", "writer_notes")
# A reply that says nothing alone is kept by the writer with the question put to it ('Asked "How long has
# Melanie been married?", Melanie answered: 5 years already!', writer.extractor.facts.answer_statement): its
# message shown alone ("5 years already!") would drop what it answers.
ASKED = re.compile(r'^Asked "(?P<question>.+)", [^"]*? answered: ')
_FACT_LINE = re.compile(r"^- \d{1,2} [A-Z][a-z]+ \d{4}: ")


@dataclass
class _Message:
    """A short source message that may stand in the block for its recalled facts."""

    event_id: str
    who: str
    text: str
    facts: list[str] = field(default_factory=list)  # the recalled facts it stands for
    about: tuple[int, int] | None = None  # the time the first of them that names one is about
    notes: list[str] = field(default_factory=list)  # their resolved dates the message does not say
    asked: str = ""  # the question it answers, when one of its facts is a kept answer (ASKED)
    line: str = ""  # as shown, once written


@dataclass
class _Group:
    """An observation being packed: its header, the facts shown under it, the facts it could add."""

    result: RecallResult
    entity_names: tuple[str, ...]
    header: list[str]  # title line, then change sentences
    members: dict[str, MemberFact]
    shown: list[MemberFact] = field(default_factory=list)
    newer: list[MemberFact] = field(default_factory=list)  # the entity's facts not consolidated yet
    newer_shown: list[MemberFact] = field(default_factory=list)
    opened: bool = False
    opened_section: bool = False  # whether opening it placed the observations' heading


class _Packer:
    """Fills the budget; remembers which facts are shown and where."""

    def __init__(
        self,
        stores: Stores,
        prompt: Prompt,
        max_tokens: int,
        embedder: Any,
        observations: list[RecallResult],
        about: dict[str, tuple[int, int]],
    ) -> None:
        self.stores, self.conn = stores, stores.conn
        self.max_tokens = max_tokens
        self.used = 0
        self.models: list[ContextItem] = []
        self.facts: list[ContextItem] = []
        self.covered: set[str] = set()
        self.about = about  # fact id -> the time its text names (facts.about_start/end)
        self.days: set[str] = set()  # the days the facts section has a heading for
        # The observations' topic words (date notes left out), as the lines it is compared with are read.
        self.terms = set(content_words(prompt.given))
        self.model = index_state(self.conn)
        self.prompt, self.embedder = prompt, embedder
        self._query: np.ndarray | bool | None = False  # computed on first use (facts alone never need it)
        self.groups = [self._group(r) for r in observations]
        self.group_of = {f: g for g in reversed(self.groups) for f in g.members}  # the most relevant wins
        self.newer_of = {f.id: g for g in reversed(self.groups) for f in g.newer}
        self.messages: dict[str, _Message] = {}  # source event id -> its message, when short enough to show
        self.message_budget = int(max_tokens * MESSAGE_SHARE)
        self.terms_shown: set[str] = set()  # the content words of every line placed so far
        self.waiting: list[RecallResult] = []  # facts that repeated the block when their turn came
        self.sections: set[str] = set()  # the kinds whose section heading is paid for

    @property
    def left(self) -> int:
        return self.max_tokens - self.used

    def _spend(self, tokens: int) -> bool:
        if tokens > self.left:
            return False
        self.used += tokens
        return True

    def _heading(self, kind: str) -> int:
        """The cost of `kind`'s section heading if no item of it is placed yet, else 0."""
        return 0 if kind in self.sections else heading_tokens(kind)

    # --- observations ---------------------------------------------------------------------------

    def _group(self, result: RecallResult) -> _Group:
        text_lines = result.text.splitlines()
        title = text_lines[0] if text_lines else ""
        if result.is_stale:
            title += " (stale: newer facts follow)"
        changes = [ln for ln in text_lines[1:] if not ln.startswith("- ")]
        fact_ids = list(result.metadata.get("fact_ids", []))
        rows = fact_rows(self.conn, fact_ids)
        members = {f: MemberFact(f, rows[f]["text"], rows[f]["as_of"]) for f in fact_ids if f in rows}
        entity = self.conn.execute("SELECT entity_id FROM analysis_runs WHERE id = ?", (result.id,)).fetchone()
        info = load_entities(self.conn, [entity[0]]).get(entity[0]) if entity and entity[0] else None
        group = _Group(result, info.names if info else (), [title, *changes], members)
        if result.is_stale and entity and entity[0]:
            group.newer = self._newer_facts(entity[0], set(members))
        return group

    def _open(self, group: _Group) -> bool:
        if group.opened:
            return True
        heading = self._heading("observation")
        if not self._spend(estimate_tokens("\n".join(group.header)) + 1 + heading):
            return False
        group.opened, group.opened_section = True, bool(heading)
        self.sections.add("observation")
        return True

    def _line(self, group: _Group, fact: MemberFact) -> str:
        """A member's line without the subject it shares with the header: '- 8 May 2023: went to ...'."""
        text = " ".join(fact.text.split())
        for name in sorted(group.entity_names, key=len, reverse=True):
            match = re.match(rf"{re.escape(name)}(?:\s+said:?)?\s+(?=[a-z])", text, flags=re.IGNORECASE)
            if match:
                text = text[match.end() :]
                break
        return fact_line(MemberFact(fact.id, text, fact.as_of))

    def _add_to_group(self, group: _Group, fact: MemberFact, *, newer: bool = False) -> bool:
        if fact.id in self.covered:
            return False
        opened_before = group.opened
        if not self._open(group):
            return False
        line = _newer_line(fact) if newer else self._line(group, fact)
        if not self._spend(estimate_tokens(line) + 1):
            if not opened_before:  # the header alone is no use: give its tokens back
                group.opened = False
                self.used -= estimate_tokens("\n".join(group.header)) + 1
                if group.opened_section:
                    self.used -= heading_tokens("observation")
                    self.sections.discard("observation")
                    group.opened_section = False
            return False
        (group.newer_shown if newer else group.shown).append(fact)
        self.covered.add(fact.id)
        self.terms_shown.update(extract_terms("\n".join([*group.header, line])))
        return True

    def add_siblings(self) -> None:
        """Budget left: each relevant observation adds its members most similar to the prompt."""
        for group in self.groups:
            rest = [m for m in group.members.values() if m.id not in self.covered]
            for fact in self._ranked(rest)[:SIBLINGS]:
                self._add_to_group(group, fact)

    # --- facts and models -----------------------------------------------------------------------

    def add_fact(self, result: RecallResult, *, last: bool = False) -> bool:
        """Place a recalled fact (in an observation, as its message, or as its line); False when it is not
        placed now. `last`: the second pass, where a fact that repeats the block is placed too."""
        if result.id in self.covered:
            return False
        group = self.group_of.get(result.id)
        if group is not None:
            return self._add_to_group(group, group.members[result.id])
        stale = self.newer_of.get(result.id)
        if stale is not None:  # a fact the stale observation has not taken in yet: shown right after it
            return self._add_to_group(stale, next(f for f in stale.newer if f.id == result.id), newer=True)
        message = self.messages.get(result.source_event_ids[0]) if result.source_event_ids else None
        if message is not None and self._add_message(result, message):
            return True
        line = f"- {with_about(result.text, self.about.get(result.id))}"
        if not last and self._repeats(line):
            self.waiting.append(result)
            return False
        item = ContextItem(
            "fact", result.id, "", [line], result, False, [result.id], result.source_event_ids, [result.id]
        )
        return self._add_dated(item, self.max_tokens)

    def _repeats(self, line: str) -> bool:
        """Whether at most NOVELTY of the line's content words are new to the block."""
        terms = set(extract_terms(line))
        return len(terms - self.terms_shown) <= NOVELTY * len(terms)

    def _add_dated(self, item: ContextItem, limit: int) -> bool:
        """A fact or message line under its day's heading, when it fits within `limit` tokens used."""
        # A day heading, written once for the facts said that day, instead of the date after each line: on
        # LoCoMo dev a fact line is ~90 characters, its date ~17 of them.
        as_of = item.result.as_of
        day = day_month_year_of(as_of) if as_of is not None else ""
        cost = item.tokens + (estimate_tokens(f"### {day}") + 1 if day and day not in self.days else 0)
        cost += self._heading("fact")
        if self.used + cost > limit or not self._spend(cost):
            return False
        self.sections.add("fact")
        self.days.add(day)
        self.terms_shown.update(extract_terms(item.text))
        self.facts.append(item)
        self.covered.update(item.shown_fact_ids)
        return True

    # --- whole messages -------------------------------------------------------------------------

    def use_messages(self, facts: list[RecallResult]) -> None:
        """The short source messages of these facts (on their own, not in an observation) that may be shown
        whole: none of their facts hidden. Each keeps the recalled facts it stands for."""
        alone = [r for r in facts if r.source_event_ids and r.id not in self.group_of and r.id not in self.newer_of]
        events = list(dict.fromkeys(r.source_event_ids[0] for r in alone))
        if not events:
            return
        rows = self.conn.execute(
            f"""SELECT e.id, e.content, e.platform, e.sender_id, e.sender_name FROM events e
                WHERE e.id IN ({db.placeholders(events)})
                  AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.source_event_id = e.id AND {hidden_sql("f")})""",
            events,
        ).fetchall()
        for event_id, content, platform, handle, name in rows:
            text = " ".join(content.split())
            if estimate_tokens(text) <= MESSAGE_TOKENS and _plain(content, text):
                self.messages[event_id] = _Message(event_id, sender_label(self.conn, platform, handle, name), text)
        for result in alone:
            message = self.messages.get(result.source_event_ids[0])
            if message is not None:
                message.facts.append(result.id)
                message.about = message.about or self.about.get(result.id)
                # The dates the writer resolved in the fact ("yesterday (on 7 May 2023)") go with the message.
                notes = (note.strip() for note in ANNOTATION_RE.findall(result.text))
                message.notes += [n for n in notes if n not in message.text and n not in message.notes]
                asked = ASKED.match(result.text)
                message.asked = message.asked or (asked.group("question") if asked else "")

    def _add_message(self, result: RecallResult, message: _Message) -> bool:
        """The fact's whole message in place of its facts, while messages fit in their share of the budget."""
        if not message.line:  # written once: most of a block's facts come after the messages' share is spent
            text = (
                " ".join([message.text, *message.notes]) if message.notes else with_about(message.text, message.about)
            )
            who = f'{message.who} (asked "{message.asked}")' if message.asked else message.who
            message.line = f"- {who}: {text}"
        if self.used + estimate_tokens(message.line) > self.message_budget:
            return False
        facts = list(message.facts)
        item = ContextItem("fact", result.id, "", [message.line], result, False, facts, [message.event_id], facts)
        return self._add_dated(item, self.message_budget)

    def add_model(self, result: RecallResult) -> None:
        """A mental model's title and the report lines (not fact lines) sharing words with the prompt."""
        name = result.metadata.get("name") or ""
        title = f"{name} (stale)" if result.is_stale else name
        report = result.text.removeprefix(f"{name}: ")
        candidates = [
            ln
            for ln in report.splitlines()
            if ln.strip() and not ln.startswith(("#", "Question:", "**")) and not _FACT_LINE.match(ln)
        ]
        heading = self._heading("mental_model")
        budget = min(self.left - heading, int(self.max_tokens * MODEL_SHARE)) - estimate_tokens(title)
        terms = self.terms - set(content_words(name))  # the name alone matches every line about it
        keep: list[str] = []
        for line in candidates:
            cost = estimate_tokens(line) + 1
            if terms & set(content_words(line)) and cost <= budget:
                keep.append(line)
                budget -= cost
        if not keep:
            return
        fact_ids = _model_facts(self.conn, result.id)
        rows = fact_rows(self.conn, fact_ids)
        item = ContextItem("mental_model", result.id, title, keep, result, result.is_stale, fact_ids)
        item.source_event_ids = [r["source_event_id"] for r in rows.values() if r["source_event_id"]]
        if self._spend(item.tokens + heading):
            self.sections.add("mental_model")
            self.models.append(item)
            self.terms_shown.update(extract_terms(item.text))

    # --- ranking and the end --------------------------------------------------------------------

    def _ranked(self, facts: list[MemberFact]) -> list[MemberFact]:
        """Facts most similar to the prompt first (by vector when there is one, else shared words)."""
        if not facts:
            return []
        vectors = fact_vectors(self.conn, self.model[0], [f.id for f in facts]) if self.model else {}
        query = self.query_vector()
        if query is not None and vectors:
            score = {f.id: float(np.dot(vectors[f.id], query)) if f.id in vectors else -1.0 for f in facts}
        else:
            score = {f.id: float(len(self.terms & set(content_words(f.text)))) for f in facts}
        return sorted(facts, key=lambda f: (-score[f.id], -f.as_of, f.id))

    def query_vector(self) -> np.ndarray | None:
        if self._query is False:
            self._query = _query_vector(self.stores, self.prompt.given, self.embedder)
        return self._query  # type: ignore[return-value]

    def _newer_facts(self, entity_id: str, members: set[str]) -> list[MemberFact]:
        """The entity's facts consolidation has not seen yet, most relevant first (at most NEWER_FACTS)."""
        rows = self.conn.execute(
            """SELECT f.id, f.text, f.as_of FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id
               WHERE fe.entity_id = ? AND f.is_consolidated = 0 ORDER BY fe.as_of DESC LIMIT 50""",
            (entity_id,),
        ).fetchall()
        facts = [MemberFact(r[0], r[1], r[2]) for r in rows if r[0] not in members]
        return self._ranked(facts)[:NEWER_FACTS]

    def finish(self) -> list[ContextItem]:
        """Models, then each opened observation (its lines in time order, newer facts last), then facts."""
        observations: list[ContextItem] = []
        for group in self.groups:
            if not group.opened or not (group.shown or group.newer_shown):
                continue
            for fact in group.newer:  # budget left: the stale observation's other newer facts
                self._add_to_group(group, fact, newer=True)
            ordered = sorted(group.shown, key=lambda f: (f.as_of, f.id))
            lines = [*group.header[1:], *(self._line(group, f) for f in ordered)]
            lines += [_newer_line(f) for f in group.newer_shown]
            shown = [f.id for f in [*group.shown, *group.newer_shown]]
            rows = fact_rows(self.conn, list(group.members))
            item = ContextItem(
                "observation",
                group.result.id,
                group.header[0],
                lines,
                group.result,
                group.result.is_stale,
                [*group.members, *(f.id for f in group.newer)],
                [r["source_event_id"] for r in rows.values() if r["source_event_id"]],
                shown,
            )
            observations.append(item)
        return [*self.models, *observations, *_by_day(self.facts)]


def _by_day(facts: list[ContextItem]) -> list[ContextItem]:
    """Facts in the order they were said, the first of each day titled with it ('### 8 May 2023')."""
    ordered = sorted(facts, key=lambda item: (item.result.as_of or 0, item.id))
    seen: set[str] = set()
    for item in ordered:
        day = day_month_year_of(item.result.as_of) if item.result.as_of is not None else ""
        item.title = day if day and day not in seen else ""
        seen.add(day)
    return ordered


def _newer_line(fact: MemberFact) -> str:
    return "- newer, not consolidated yet: " + fact_line(fact)[2:]


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


def _has_higher_layers(conn: db.Connection) -> bool:
    """Whether any observation or mental model exists (else their recall is skipped: it finds nothing)."""
    return bool(
        conn.execute("SELECT EXISTS (SELECT 1 FROM analysis_runs) OR EXISTS (SELECT 1 FROM mental_models)").fetchone()[
            0
        ]
    )


def _query_vector(stores: Stores, prompt: str, embedder: Any) -> np.ndarray | None:
    """The prompt's vector under the index model (None without an index or a model)."""
    model = embedder or default_embedder(stores)
    if model is None or not prompt.strip():
        return None
    return np.asarray(model.encode_query(prompt[:2000]), dtype=np.float32)


def _plain(content: str, text: str) -> bool:
    """Whether a message is its sender's words alone: an email's subject, quoted reply, signature or
    forwarded part is not something to show as said (the writer leaves them out of facts too)."""
    parts = read_message(content)
    return (
        not (parts.subject or parts.signer or parts.signature or parts.forwarded)
        and " ".join(parts.body.split()) == text
    )
