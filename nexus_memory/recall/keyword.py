"""Turn any user string into a safe, cheap FTS5 MATCH expression (and LIKE patterns).

Measured on FTS5 at 1M rows: 2-4 rare terms ~5 ms, OR-queries that keep stopwords ~700 ms.
So we never pass user text to MATCH. We split it into word tokens the way FTS5's unicode61 tokenizer
does (letters and digits; everything else, including FTS5 syntax such as * " : ( ) ^ - and emoji, is a
separator), drop stopwords, quote every term (so AND/OR/NOT/NEAR are plain words) and keep at most a
few of the rarest terms, OR-ed together so BM25 ranks documents with more of them first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from nexus_memory.core import db, words

MAX_TERMS = 6  # terms that reach MATCH
MAX_PROBES = 16  # candidate terms whose document frequency we look up
PROBE_CAP = 2000  # df lookups stop counting here: cost stays bounded for very common terms
MAX_QUERY_CHARS = 4000  # longer input is cut before tokenising (10k-char pastes stay cheap)

# Letters and digits, as unicode61 sees tokens; "_" is punctuation there too.
_TOKEN_RE = re.compile(r"[^\W_]+", re.UNICODE)

# Queries are talk: words of talk and asking ("tell", "know", "thing", "please") and the halves FTS5 leaves of
# "don't", "isn't", "couldn't" match most facts and rank none, so they are not searched for either.
STOPWORDS = words.STOPWORDS | words.word_set(
    """
    also anything aren't cannot couldn don ever everything get got isn know let like much must ought please
    really said say says something tell thing things think us yes
    """
)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (letters/digits only), in order, duplicates kept."""
    text = text[:MAX_QUERY_CHARS]
    if text.isascii():  # lower-casing ASCII changes no token's bounds: one call, not one per token
        return _TOKEN_RE.findall(text.lower())
    return [token.lower() for token in _TOKEN_RE.findall(text)]


def extract_terms(text: str) -> list[str]:
    """Candidate search terms: unique tokens, stopwords and single characters dropped, in order.

    Single digits/letters match almost everything and carry no meaning; a lone CJK character can be a
    whole word, so those are kept.
    """
    terms: list[str] = []
    seen: set[str] = set()
    for token in tokenize(text):
        if token in STOPWORDS or token in seen:
            continue
        if len(token) < 2 and token.isascii():
            continue
        seen.add(token)
        terms.append(token)
    return terms


def quote(term: str) -> str:
    """An FTS5 string literal: the term in double quotes, inner quotes doubled."""
    return '"' + term.replace('"', '""') + '"'


def match_expression(terms: Sequence[str]) -> str | None:
    """OR of quoted terms, or None when there is nothing to search for."""
    terms = [t for t in terms if t]
    return " OR ".join(quote(t) for t in terms) if terms else None


def choose_terms(conn: db.Connection, fts_table: str, terms: Sequence[str], max_terms: int = MAX_TERMS) -> list[str]:
    """The rarest `max_terms` terms that occur at all in `fts_table` (original order kept).

    Document frequency comes from one capped probe per term through the table's own tokenizer
    (porter stemming included), which fts5vocab cannot give us without stemming the term ourselves.
    Before probing, long inputs are cut to the MAX_PROBES longest terms: longer words are rarer.
    Terms that occur nowhere are dropped: in an OR they cannot change which rows match.
    """
    candidates = _longest(list(terms), MAX_PROBES)
    frequency = document_frequencies(conn, fts_table, candidates)
    present = [t for t in candidates if frequency[t] > 0]
    order = sorted(range(len(present)), key=lambda i: (frequency[present[i]], i))[:max_terms]
    return [present[i] for i in sorted(order)]


def document_frequency(conn: db.Connection, fts_table: str, term: str, cap: int = PROBE_CAP) -> int:
    """How many rows of `fts_table` contain `term`, counted up to `cap`."""
    # fts_table is one of our own table names, never user input; the term is a bound, quoted literal.
    sql = f"SELECT count(*) FROM (SELECT rowid FROM {fts_table} WHERE {fts_table} MATCH ? LIMIT ?)"
    try:
        return int(conn.execute(sql, (quote(term), cap)).fetchone()[0])
    except db.OperationalError:
        # A token our regex accepts but the tokenizer rejects can't be searched; treat as absent.
        return 0


def document_frequencies(
    conn: db.Connection, fts_table: str, terms: Sequence[str], cap: int = PROBE_CAP
) -> dict[str, int]:
    """`document_frequency` of each of `terms`, in one statement rather than one per term (up to
    MAX_PROBES of them per query)."""
    unique = list(dict.fromkeys(terms))
    if len(unique) < 2:
        return {term: document_frequency(conn, fts_table, term, cap) for term in unique}
    probe = f"(SELECT count(*) FROM (SELECT rowid FROM {fts_table} WHERE {fts_table} MATCH ? LIMIT ?))"
    args = [value for term in unique for value in (quote(term), cap)]
    try:
        row = conn.execute(f"SELECT {', '.join([probe] * len(unique))}", args).fetchone()
    except db.OperationalError:  # a term the tokenizer rejects fails the statement: probe each alone
        return {term: document_frequency(conn, fts_table, term, cap) for term in unique}
    return {term: int(count) for term, count in zip(unique, row, strict=True)}


def fts_query(conn: db.Connection, fts_table: str, terms: Sequence[str], max_terms: int = MAX_TERMS) -> str | None:
    """The MATCH expression for a text's `terms` (`extract_terms`) against `fts_table`, or None when no
    useful term is left."""
    if not terms:
        return None
    return match_expression(choose_terms(conn, fts_table, terms, max_terms))


def like_terms(terms: Sequence[str], max_terms: int = MAX_TERMS) -> list[str]:
    """Of a text's `terms` (`extract_terms`), those for LIKE search where no FTS table exists: the
    longest (rarest-looking) few, in order."""
    return _longest(list(terms), max_terms)


def _longest(terms: list[str], limit: int) -> list[str]:
    """The `limit` longest terms (earlier wins ties), in their original order."""
    if len(terms) <= limit:
        return terms
    order = sorted(range(len(terms)), key=lambda i: (-len(terms[i]), i))[:limit]
    return [terms[i] for i in sorted(order)]


def like_pattern(term: str) -> str:
    """A `%term%` pattern with LIKE wildcards escaped (use with ESCAPE '\\')."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
