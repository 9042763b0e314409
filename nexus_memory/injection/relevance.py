"""The noise gate of memory injection: is a recalled fact evidence for the prompt, or noise?

Recall always returns *something* (the nearest neighbours of any text); injection must return
nothing when that something is noise (docs/recall.md, "Injection"). A fact is evidence when the
prompt and the fact agree on more than a vague topic. What counts is read off the store itself:

- `sim`, the cosine similarity of prompt and fact (MiniLM: unrelated text ~0.0-0.25, the same kind
  of thing about other people ~0.3-0.5, the answer to the prompt mostly above 0.45);
- `about`: the fact is linked to an entity the prompt names (written as a name, or any way when it
  is not a common noun or a date: "dance" or "2023" name nobody);
- `rare`: the fact holds a prompt term that few facts of this store hold (RARE_SHARE), so it says
  something specific the prompt asks about ("poetry", not "go" or "like");
- `dated`: the prompt named a time ("in May 2023", "yesterday") and the fact is about then: the time its
  text names (facts.about_start/about_end) overlaps the window, or, when it names none, it was said then
  (a fact said in May about a trip in June answers "what happened in June?", as recall's filters read it);
- `held`: the share of the prompt's words, its names left out, that the fact holds (a name says
  WHO the prompt is about, these words WHAT it asks).

The rule (`is_evidence`):

1. A prompt that names someone or something the store has never heard of (a capitalised word, not
   opening a sentence, that is no entity, no short form of one and in no fact: a *stranger*) and no
   name the store knows is about what this memory does not hold: only a near-paraphrase counts,
   sim >= STRANGER_SIM ("When did Caroline go to the support group?" put to a memory of other people
   matches their support groups at ~0.4-0.55).
2. Otherwise sim >= TOPIC_SIM is evidence;
3. sim >= AGREE_SIM with one of `about`, `rare`, `dated` agreeing (the model sees a relation, and a
   name, a rare word or the time confirms it) is evidence;
4. sim >= FLOOR_SIM with two of them agreeing ("what did Nate do in April 2022?": a fact about Nate
   from that month) is evidence.

Two rules keep a known name from carrying the match alone (a memory that knows *a* John holds
facts about John's family, team and trips; "What soup did John make?" matches them at 0.4-0.5):

- who: a prompt that names entities the store knows (or a participant it never heard from) asks
  about them; a fact linked to none of them but to others (a person, a handle, a place) is about
  someone else and counts only from OTHER_SUBJECT_SIM on (Maria's surfing is no answer to "How long
  has John been surfing?"; a fact about the user, linked to no person, still answers "Sarah's
  birthday: anything about peanuts?");
- lead: a prompt that names something the store knows (an entity, or a capitalised word its facts
  hold: "Tim" said in passing) injects only when one item is strong on the prompt's topic: sim plus
  WORD_WEIGHT times its `held` share reaches LEAD_SIM. The answer to a question mostly sits at
  sim 0.55-0.7 or repeats its words; a memory that only knows the name offers 0.4-0.5 and few words.
  Once one item leads, the others are kept by rules 1-4 (a weak fact beside a strong one is context).
  A prompt naming nothing is spared: "Can I offer nut snacks to my guest?" meets "The user is
  allergic to peanuts" at ~0.4, with no word in common.

With participants (the people in the conversation, `nexus_memory.recall.participants`), a name one of them
goes by means them: a fact linked to someone else of that name, and to nobody the prompt means, is
never evidence, and a participant this memory never heard from is a stranger.

A fact recall found only because the prompt was nothing but a time window ("what happened
yesterday?": the window's latest facts) is evidence. Without vectors (no embedding model) the
lexical signals decide alone: one of `about`, `rare`, `dated`, still never for a prompt about strangers.
The thresholds were read off LoCoMo dev (see README, "Benchmarks"): kept round, so the rule is not
fitted to it beyond the first decimal (OTHER_SUBJECT_SIM, LEAD_SIM and WORD_WEIGHT too).

What the prompt says (its terms, the entities it names, who they mean through the participants) is
read once, for recall and this gate alike (`nexus_memory.recall.prompt.read_prompt`); `store_reading`
adds what only the gate asks of the store: which terms are rare, which capitalised words it never saw.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nexus_memory.core import db
from nexus_memory.core.calendar_words import MONTHS, WEEKDAYS
from nexus_memory.observations.render import about_of
from nexus_memory.observations.store import fact_rows
from nexus_memory.recall import keyword
from nexus_memory.recall.participants import MeantNames
from nexus_memory.recall.prompt import Prompt
from nexus_memory.recall.results import RecallResult

STRANGER_SIM = 0.6
TOPIC_SIM = 0.4
AGREE_SIM = 0.3
FLOOR_SIM = 0.2
OTHER_SUBJECT_SIM = 0.5
LEAD_SIM = 0.45
WORD_WEIGHT = 0.2
RARE_SHARE = 0.02  # a term in at most this share of facts (at least RARE_MIN, at most PROBE_CAP) is rare
RARE_MIN = 3
MAX_STRANGERS = 8  # unknown capitalised words collected from one prompt (more change nothing)

# A capitalised word, possibly with a possessive; a run of them ("Sarah Connor", "New York").
_CAPITALISED = re.compile(r"(?<![\w'’])([A-Z][\w'’.-]*[\w])")
_SENTENCE_END = re.compile(r"[.!?:;\"“(\n]\s*$")
_CALENDAR = frozenset(MONTHS) | frozenset(WEEKDAYS)
# Titles before a name: not names themselves, and their period does not end a sentence.
_TITLES = frozenset(["mr", "mrs", "ms", "dr", "prof", "sir", "st"])


@dataclass(frozen=True)
class Thresholds:
    """The similarity bars of the rule (module docstring); the defaults are the module's constants."""

    topic: float = TOPIC_SIM
    agree: float = AGREE_SIM
    stranger: float = STRANGER_SIM
    floor: float = FLOOR_SIM
    other_subject: float = OTHER_SUBJECT_SIM
    lead: float = LEAD_SIM
    word_weight: float = WORD_WEIGHT


@dataclass(frozen=True)
class PromptReading:
    """What the store knows of a prompt: the entities it names, its rare terms, the names it never saw."""

    named: frozenset[str]  # live entity ids the prompt names (`Prompt.named`)
    strangers: tuple[str, ...]  # capitalised words of the prompt that no entity or fact holds
    rare_terms: tuple[str, ...]  # prompt terms in few facts (but some)
    knows_a_name: bool = False  # some capitalised word of the prompt is an entity or in a fact
    words: tuple[str, ...] = ()  # the prompt's search terms, the words of the names it names left out
    others: frozenset[str] = frozenset()  # entities of a name that means a participant, who are someone else
    newcomers: tuple[str, ...] = ()  # names of participants this memory never heard from

    @property
    def about_strangers(self) -> bool:
        """The prompt names someone or something unknown, and no name the store knows."""
        return bool(self.strangers) and not self.named and not self.knows_a_name


def store_reading(conn: db.Connection, prompt: Prompt) -> PromptReading:
    """What the store knows of a prompt read once (`read_prompt`: its names, through the participants):
    which of its terms are rare, which of its capitalised words it never saw (a few indexed probes)."""
    # max(rowid) stands in for count(*), which reads a whole index (tens of ms at 1M facts).
    facts = conn.execute("SELECT coalesce(max(rowid), 0) FROM facts").fetchone()[0]
    rare_limit = min(max(RARE_MIN, int(facts * RARE_SHARE)), keyword.PROBE_CAP)
    # One statement for all terms; the counts also say which of them facts hold (_capitalised_words).
    frequency = keyword.document_frequencies(conn, "facts_fts", prompt.text_terms[: keyword.MAX_PROBES], rare_limit + 1)
    rare = [term for term, count in frequency.items() if 0 < count <= rare_limit]
    names = prompt.names
    unknown, known = _capitalised_words(conn, prompt.text, names, frequency)
    words = _words_besides_names(conn, prompt)
    return PromptReading(prompt.named, unknown, tuple(rare), known, words, names.others, names.newcomers)


def _words_besides_names(conn: db.Connection, prompt: Prompt) -> tuple[str, ...]:
    """The prompt's search terms (as recall probes them) without the words of the names of the entities
    it names and of participants this memory knows (a newcomer's name stays: no fact holds it)."""
    meant_words = {word for word, ids in prompt.names.word_meanings().items() if ids}
    terms = [t for t in prompt.text_terms[: keyword.MAX_PROBES] if t not in meant_words]
    named = prompt.named
    if not named:
        return tuple(terms)
    ids = sorted(named)
    rows = conn.execute(
        f"""SELECT name FROM entities WHERE id IN ({db.placeholders(ids)})
            UNION SELECT alias FROM aliases WHERE entity_id IN ({db.placeholders(ids)})""",
        [*ids, *ids],
    ).fetchall()
    name_words = {word for (name,) in rows for word in keyword.tokenize(name)}
    return tuple(t for t in terms if t not in name_words)


def _capitalised_words(
    conn: db.Connection, prompt: str, names: MeantNames, frequency: Mapping[str, int]
) -> tuple[tuple[str, ...], bool]:
    """The prompt's capitalised words (not opening a sentence) that no entity or fact holds, and
    whether any other one is known to the store. A word of a participant's name is theirs wherever it
    stands: a stranger's when this memory never met them, known when it did. `frequency`: facts holding
    a term, counted already (a term not in it is probed)."""
    found: list[str] = []
    known = False
    probes = 0
    meanings = names.word_meanings()
    for match in _CAPITALISED.finditer(prompt[: keyword.MAX_QUERY_CHARS]):
        word = re.sub(r"['’]s$", "", match.group(1)).rstrip(".")
        key = word.lower()
        if len(word) < 2 or key in keyword.STOPWORDS or key in _TITLES or key in _CALENDAR or key in found:
            continue
        if key in meanings:
            if meanings[key]:
                known = True
            elif len(found) < MAX_STRANGERS:
                found.append(key)
            continue
        if _starts_sentence(prompt, match.start()):
            continue
        probes += 1
        if probes > keyword.MAX_PROBES or len(found) >= MAX_STRANGERS:
            break
        if _known_name(conn, key) or any(
            frequency[t] if t in frequency else keyword.document_frequency(conn, "facts_fts", t, cap=1)
            for t in keyword.tokenize(word)
        ):
            known = True
        else:
            found.append(key)
    return tuple(found), known


def _starts_sentence(text: str, start: int) -> bool:
    """True when the word at `start` opens the text or a sentence (a title's period does not end one)."""
    before = text[max(0, start - 16) : start]
    if not before.strip():
        return not text[:start].strip()
    if not _SENTENCE_END.search(before):
        return False
    title = re.search(r"(\w+)\.\s*$", before)
    return not (title and title.group(1).lower() in _TITLES)


def _known_name(conn: db.Connection, key: str) -> bool:
    """An entity or alias is this word, or starts with it: a first name ("sarah" of "sarah connor") or,
    from three letters on, a short form ("mel" of "melanie"). Aliases count like names: a delivered
    entity is named by its handle, and the name people use is its display-name alias."""
    low, high = (key, key + "\uffff") if len(key) >= 3 else (key + " ", key + "!")
    row = conn.execute(
        """SELECT 1 FROM entities WHERE normalized = ? OR (normalized >= ? AND normalized < ?)
           UNION ALL SELECT 1 FROM aliases WHERE normalized = ? OR (normalized >= ? AND normalized < ?) LIMIT 1""",
        (key, low, high, key, low, high),
    ).fetchone()
    return row is not None


class FactTexts:
    """Which of some facts hold a term, read off their texts (loaded by recall already) through the tokenizer
    of facts_fts (schema/memory.sql), so it says what a MATCH over the store would say of them: their texts go
    into a small in-memory FTS5 table. Asking the store instead walked each word's whole doclist, ~1.5 ms for
    a common word at 1M facts."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self.ids = list(texts)
        self._texts = [texts[i] for i in self.ids]

    def holding(self, terms: Sequence[str], among: Sequence[str] | None = None) -> set[str]:
        """Those of the facts (of `among`, when given) that hold at least one of the terms (stemming included)."""
        expression = keyword.match_expression(list(terms)) if terms else None
        if expression is None or not self.ids:
            return set()
        conn = _scratch()
        if getattr(_SCRATCH, "owner", None) is not self:  # the table holds one FactTexts' texts: row i, fact i
            with db.transaction(conn):  # one transaction: FTS5 writes one segment, not one per row (~25 us a row)
                conn.execute("INSERT INTO texts(texts) VALUES ('delete-all')")  # contentless: nothing to re-read
                conn.executemany("INSERT INTO texts(rowid, text) VALUES (?, ?)", enumerate(self._texts))
            _SCRATCH.owner = self
        found = {self.ids[r[0]] for r in conn.execute("SELECT rowid FROM texts WHERE texts MATCH ?", [expression])}
        return found if among is None else found & set(among)


_SCRATCH = threading.local()  # per thread: an in-memory connection with the texts table, and whose texts it holds


def _scratch() -> db.Connection:
    conn: db.Connection | None = getattr(_SCRATCH, "conn", None)
    if conn is None:
        conn = db.sqlite.connect(":memory:")
        conn.isolation_level = None
        # The tokenizer of facts_fts: a word is held here exactly when a MATCH on the store finds it.
        conn.execute("CREATE VIRTUAL TABLE texts USING fts5(text, content='', tokenize='porter unicode61')")
        _SCRATCH.conn = conn
    return conn


def is_evidence(
    result: RecallResult,
    reading: PromptReading,
    holds_rare_term: bool,
    *,
    window: tuple[int | None, int | None] = (None, None),
    vectors: bool = True,
    thresholds: Thresholds = Thresholds(),
    about_time: tuple[int, int] | None = None,
) -> bool:
    """The rule of the module docstring for one recalled fact.

    `window` is the time window recall read from the prompt (or was given); `vectors` False means
    the recall ran without embeddings; `about_time` is the time the fact's text names, if any.
    """
    if "recency" in result.ranks:
        return True
    similarity = result.metadata.get("scores", {}).get("semantic")
    if similarity is None:
        similarity = 0.0  # not among the semantic strategy's candidates: further than all of them
    about = any(e.get("id") in reading.named for e in result.entities)
    if not about and any(e.get("id") in reading.others for e in result.entities):
        return False  # about someone else of the name a participant goes by: the shared name is all it matches
    if reading.about_strangers:
        return similarity >= thresholds.stranger
    asks_about_someone = reading.named or reading.newcomers
    if (
        vectors
        and asks_about_someone
        and not about
        and similarity < thresholds.other_subject
        and _names_someone(result)
    ):
        return False  # the prompt asks about someone, the fact about other people (the "who" rule)
    if similarity >= thresholds.topic:
        return True
    agreeing = about + holds_rare_term + _in_window(result.as_of, about_time, window)
    if not vectors:
        return agreeing >= 1
    return (similarity >= thresholds.agree and agreeing >= 1) or (similarity >= thresholds.floor and agreeing >= 2)


def _names_someone(result: RecallResult) -> bool:
    """The result is linked to a named entity (a person, a handle, a place; not a common noun or a date)."""
    return any(e.get("type") not in ("concept", "date") for e in result.entities)


def _in_window(as_of: int | None, about_time: tuple[int, int] | None, window: tuple[int | None, int | None]) -> bool:
    """The fact is about the window: its about-time overlaps it, or, without one, it was said in it."""
    after, before = window
    if after is None and before is None:
        return False
    first, last = about_time if about_time is not None else (as_of, as_of)
    if first is None or last is None:
        return False
    return (after is None or last >= after) and (before is None or first <= before)


def leads(result: RecallResult, held: float, thresholds: Thresholds = Thresholds()) -> bool:
    """Whether this evidence is strong enough on the prompt's topic to open a block (the "lead" rule);
    `held` is the share of the prompt's words, its names left out, that the fact holds."""
    if "recency" in result.ranks:
        return True
    similarity = result.metadata.get("scores", {}).get("semantic") or 0.0
    return similarity + thresholds.word_weight * held >= thresholds.lead


def fact_about_times(conn: db.Connection, fact_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Per fact that has one, the time its text names (RecallResult carries no about-time)."""
    return {fact_id: about for fact_id, row in fact_rows(conn, fact_ids).items() if (about := about_of(row))}


def held_shares(texts: FactTexts, words: Sequence[str], fact_ids: Sequence[str]) -> dict[str, float]:
    """Per fact of `fact_ids`, the share of `words` it holds (facts holding none are left out)."""
    counts: dict[str, int] = {}
    for word in words:
        for fact_id in texts.holding([word], fact_ids):
            counts[fact_id] = counts.get(fact_id, 0) + 1
    return {fact_id: count / len(words) for fact_id, count in counts.items()}


def evidence(
    conn: db.Connection,
    prompt: Prompt,
    results: Sequence[RecallResult],
    *,
    window: tuple[int | None, int | None] = (None, None),
    thresholds: Thresholds = Thresholds(),
    about_times: Mapping[str, tuple[int, int] | None] | None = None,
) -> list[RecallResult]:
    """The results that are evidence for `prompt` (read with its participants), in their order; none
    unless one of them leads. `about_times`: per fact id, the time its text names (`fact_about_times`;
    read here when not given)."""
    if not results:
        return []
    reading = store_reading(conn, prompt)
    fact_ids = [r.id for r in results if r.type == "fact"]
    texts = FactTexts({r.id: r.text for r in results if r.type == "fact"})
    rare = texts.holding(reading.rare_terms)
    vectors = any("semantic" in r.ranks for r in results)
    if about_times is None:
        about_times = fact_about_times(conn, fact_ids) if window != (None, None) else {}
    kept = [
        r
        for r in results
        if is_evidence(
            r,
            reading,
            r.id in rare,
            window=window,
            vectors=vectors,
            thresholds=thresholds,
            about_time=about_times.get(r.id),
        )
    ]
    if not vectors or not kept or not (reading.named or reading.knows_a_name):  # the lead rule: see docstring
        return kept
    held = held_shares(texts, reading.words, [r.id for r in kept if r.type == "fact"])
    if not any(leads(r, held.get(r.id, 0.0) if r.type == "fact" else 0.0, thresholds) for r in kept):
        return []
    return kept
