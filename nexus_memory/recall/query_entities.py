"""Entities a query names: matching names in its text, telling busy entities apart, taking names out.

Plain SQL over the identity tables; the recall engine uses these for its entity strategy and to
embed a query without a busy name (see BUSY_ENTITY_SHARE).
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator, Sequence

from nexus_memory.core import db
from nexus_memory.identity import store as identity
from nexus_memory.recall import keyword

MAX_QUERY_ENTITIES = 10  # entities taken from one query
MAX_NGRAM_TOKENS = 300  # words of the query scanned for entity names (n-grams up to 3)


def match_query_entities(conn: db.Connection, text: str, limit: int = MAX_QUERY_ENTITIES) -> list[str]:
    """Live entities whose name or alias is a 1-3 word n-gram of `text`, longest match first."""
    grams = _ngrams(text)
    if not grams:
        return []
    # (-words, position, id): longer (more specific) names first, then earlier in the query.
    ids: list[tuple[int, int, str]] = []
    for part in db.chunked(list(grams), 400):  # each part goes into two IN lists
        marks = db.placeholders(part)
        rows = conn.execute(
            f"""SELECT id, normalized FROM entities WHERE normalized IN ({marks})
                UNION SELECT entity_id, normalized FROM aliases WHERE normalized IN ({marks})""",
            [*part, *part],
        ).fetchall()
        for entity_id, normalized in rows:
            ids.append((-grams[normalized][0], grams[normalized][1], entity_id))
    ids += _first_name_matches(conn, text)
    out: list[str] = []
    for _, _, entity_id in sorted(ids):
        canonical = identity.canonical_id(conn, entity_id)
        if canonical not in out:
            out.append(canonical)
    return out[:limit]


# A prompt's n-grams repeat across its readings (the whole prompt, each name run in it) and common words across
# prompts; normalising them character by character was most of reading a prompt. The function is pure.
_normalize = functools.lru_cache(maxsize=8192)(identity.normalize)
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_TRIM = ".,;:!?\"'()[]{}<>«»“”‘’"
FIRST_NAME_MATCHES = 3  # "Sarah" may be "Sarah Connor": the most mentioned few such entities
NAME_ALIASES = ("display_name", "name", "nickname")  # aliases people say, unlike handles, emails, phones


def _first_name_matches(conn: db.Connection, text: str) -> list[tuple[int, int, str]]:
    """Entities whose name, or a name-like alias, starts with a capitalised query word ("Sarah" ->
    "sarah connor"). A delivered entity is named by its handle ("+15550111"); the name people use is
    its display-name alias.

    Index range scans on entities.normalized and aliases.normalized per word; ranked after every
    exact match.
    """
    found: list[tuple[int, int, str]] = []
    words = [_POSSESSIVE.sub("", w.strip(_TRIM)) for w in text.split()][:MAX_NGRAM_TOKENS]
    seen: set[str] = set()
    for position, word in enumerate(words):
        key = _normalize(word)
        if not word[:1].isupper() or len(key) < 2 or key in keyword.STOPWORDS or key in seen:
            continue
        seen.add(key)
        low, high = key + " ", key + "!"  # '!' sorts right after ' ': all "key ..." names
        # `+merged_into` keeps SQLite on the name indexes: with an index on merged_into (or an IN over the
        # live entities) it walked every live entity, ~3-10 ms at 5,000 entities against ~0.1 ms.
        rows = conn.execute(
            f"""SELECT id FROM (
                    SELECT id, mention_count FROM entities
                    WHERE normalized >= ? AND normalized < ? AND +merged_into IS NULL
                    UNION SELECT e.id, e.mention_count FROM aliases a JOIN entities e ON e.id = a.entity_id
                    WHERE a.normalized >= ? AND a.normalized < ?
                      AND a.alias_type IN ({db.placeholders(NAME_ALIASES)}) AND +e.merged_into IS NULL)
                ORDER BY mention_count DESC, id LIMIT ?""",
            (low, high, low, high, *NAME_ALIASES, FIRST_NAME_MATCHES),
        ).fetchall()
        found += [(0, position, r[0]) for r in rows]
    return found


def _ngrams(text: str) -> dict[str, tuple[int, int]]:
    """normalized n-gram -> (word count, first position); stopword / 1-letter unigrams left out."""
    words = [w.strip(_TRIM) for w in text.split()][:MAX_NGRAM_TOKENS]
    words = [w for w in words if w]
    grams: dict[str, tuple[int, int]] = {}
    for size in (3, 2, 1):
        for i in range(len(words) - size + 1):
            gram = " ".join(words[i : i + size])
            key = _normalize(gram)
            if size == 1 and (key in keyword.STOPWORDS or len(key) < 2):
                continue
            grams.setdefault(key, (size, i))
            # Possessives and punctuation inside a name: "Sarah's" -> "sarah". Only a gram that ends in one
            # has a bare form: normalising every gram twice was half of reading a prompt.
            stripped = _POSSESSIVE.sub("", gram)
            if stripped == gram:
                continue
            bare = _normalize(stripped)
            if bare != key and not (size == 1 and bare in keyword.STOPWORDS):
                grams.setdefault(bare, (size, i))
    return grams


# A query entity linked to at least this share of facts (the user, a conversation's speaker) does
# not tell facts apart: its list would be a recency list of nearly everything, and in the fusion it
# outvotes the semantic and keyword lists. Such a busy entity adds no list of its own, unless the
# query names nothing else. The share is read off the newest BUSY_SAMPLE facts (all of a small
# store; at 1M facts an exact count of a busy entity's links costs ~6 ms, the sample ~1 ms).
BUSY_ENTITY_SHARE = 0.1
BUSY_ENTITY_MIN = 50  # in stores smaller than BUSY_SAMPLE, fewer links never make an entity busy
BUSY_SAMPLE = 1_000


# conn id -> (conn, (data_version, total_changes), sample size, links per entity in the newest BUSY_SAMPLE facts):
# one read serves every prompt until the store changes (another connection's commit, a write of this one).
# Connections cannot be weakly referenced, so a few are held; at 1M facts the read is ~0.5 ms of each prompt.
_NEWEST_LINKS: dict[int, tuple[db.Connection, tuple[int, int], int, dict[str, int]]] = {}
_NEWEST_LINKS_HELD = 8


def busy_entities(conn: db.Connection, entity_ids: Sequence[str]) -> set[str]:
    """The entities among `entity_ids` linked to at least BUSY_ENTITY_SHARE of the newest facts."""
    sample, links = _newest_links(conn)
    return {
        entity_id
        for entity_id in entity_ids
        if (count := links.get(entity_id, 0)) >= BUSY_ENTITY_SHARE * sample
        and (sample >= BUSY_SAMPLE or count >= BUSY_ENTITY_MIN)
    }


@contextlib.contextmanager
def links_kept(conn: db.Connection) -> Iterator[None]:
    """Around a write of `conn` that adds, removes and relinks no fact (recall's access counts, `touch_results`):
    the newest facts' links read before it are still the store's after it, unless another connection committed
    meanwhile."""
    cached = _NEWEST_LINKS.get(id(conn))
    before = db.store_state(conn)
    yield
    after = db.store_state(conn)
    kept = cached is not None and cached[0] is conn and cached[1] == before and after[0] == before[0]
    if kept and cached is not None and not conn.in_transaction:
        _NEWEST_LINKS[id(conn)] = (conn, after, cached[2], cached[3])


def _newest_links(conn: db.Connection) -> tuple[int, dict[str, int]]:
    """(facts sampled, entity -> its links among them) over the newest BUSY_SAMPLE facts, read again only when
    the store changed since the last read on `conn` (never kept inside a transaction: it may roll back)."""
    cached = _NEWEST_LINKS.get(id(conn))
    key = db.store_state(conn)
    if cached is not None and cached[0] is conn and cached[1] == key and not conn.in_transaction:
        return cached[2], cached[3]
    sample = conn.execute("SELECT count(*) FROM (SELECT 1 FROM facts LIMIT ?)", (BUSY_SAMPLE,)).fetchone()[0]
    links: dict[str, int] = dict(
        conn.execute(
            # CROSS JOIN keeps the sample as the outer loop (one primary-key probe per sampled fact);
            # left to itself the planner walks every link of an entity instead.
            """SELECT fe.entity_id, count(*) FROM (SELECT id FROM facts ORDER BY rowid DESC LIMIT ?) f
               CROSS JOIN fact_entities fe ON fe.fact_id = f.id GROUP BY fe.entity_id""",
            (BUSY_SAMPLE,),
        ).fetchall()
    )
    if not conn.in_transaction:
        if len(_NEWEST_LINKS) >= _NEWEST_LINKS_HELD and id(conn) not in _NEWEST_LINKS:
            _NEWEST_LINKS.clear()  # one call, safe beside another thread's
        _NEWEST_LINKS[id(conn)] = (conn, key, sample, links)
    return sample, links


def _names(conn: db.Connection, entity_ids: Sequence[str]) -> list[tuple[str, str, bool]]:
    """(name or alias, entity type, is_alias) of these entities."""
    marks = db.placeholders(entity_ids) or "NULL"
    return conn.execute(
        f"""SELECT name, type, 0 FROM entities WHERE id IN ({marks})
                            UNION ALL SELECT a.alias, n.type, 1 FROM aliases a JOIN entities n ON n.id = a.entity_id
                            WHERE a.entity_id IN ({marks})""",
        [*entity_ids, *entity_ids],
    ).fetchall()


def terms_besides_names(conn: db.Connection, terms: Sequence[str], entity_ids: Sequence[str]) -> bool:
    """True when the query's search `terms` hold others than the words of these entities' names and aliases."""
    name_words = {word for name, _, _ in _names(conn, entity_ids) for word in keyword.tokenize(name)}
    return any(term not in name_words for term in terms)


def without_names(conn: db.Connection, text: str, entity_ids: Sequence[str]) -> str | None:
    """`text` without these entities' names and aliases, nor a person's capitalised name parts ("Sarah").

    Whole names and aliases go in any case; a part of a person's name goes only capitalised, as
    `_first_name_matches` finds it ("Will" of "Mark Will", not "will"). Possessives go with a name.
    None when nothing was taken out, or nothing searchable is left.
    """
    whole: set[str] = set()
    parts: set[str] = set()
    for name, kind, is_alias in _names(conn, entity_ids):
        whole.add(name)
        if kind == "person" and not is_alias:
            parts.update(p[:1].upper() + p[1:] for p in name.split())
    whole = {w for w in whole if len(w) > 1 and w.lower() not in keyword.STOPWORDS}
    parts = {p for p in parts - whole if len(p) > 1 and p.lower() not in keyword.STOPWORDS}
    if not whole and not parts:
        return None
    # Longest first so "Sarah Connor" goes as a whole before "Sarah" could.
    alternatives = [re.escape(w) for w in sorted(whole, key=len, reverse=True)]
    if parts:
        alternatives.append("(?-i:" + "|".join(re.escape(p) for p in sorted(parts, key=len, reverse=True)) + ")")
    pattern = rf"(?<!\w)(?:{'|'.join(alternatives)})(?:'s|’s)?(?!\w)"
    stripped = " ".join(re.sub(pattern, " ", text, flags=re.IGNORECASE).split())
    if stripped == " ".join(text.split()) or not keyword.extract_terms(stripped):
        return None
    return stripped
