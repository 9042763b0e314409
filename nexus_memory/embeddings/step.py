"""The embedding step of the pipeline, and the vector index it keeps fit.

The canonical vectors live in `embeddings` (one row per target and model, float32 LE blob); the
search indexes (vec0 table, IVF files) are derived from it by `nexus_memory.embeddings.vectors`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nexus_memory.core import db
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings import query_encoder
from nexus_memory.embeddings.model import ENCODE_BATCH, Embedder, get_embedder, split_identity, text_hash
from nexus_memory.embeddings.vectors.index import ANN_THRESHOLD, VectorIndex
from nexus_memory.embeddings.vectors.ivf import build_ivf, drop_ann
from nexus_memory.embeddings.vectors.vec0 import (
    IndexModelMismatch,
    create_vec_table,
    index_state,
    indexed_rows_sql,
    insert_vec_rows,
    mismatch_message,
)

if TYPE_CHECKING:
    from nexus_memory.embeddings.ahead import EmbeddingAhead


# --- index model bookkeeping ---------------------------------------------------------------------


def check_index_model(stores: Stores, embedder: Embedder) -> None:
    """Raise IndexModelMismatch if the index serves another model/dimension/recipe; claim it on first use."""
    want = (embedder.model_name, embedder.dimension)
    have = index_state(stores.conn)
    if have is None:
        rebuild_index(stores, *want)
    elif have != want:
        if split_identity(have[0])[0] == split_identity(want[0])[0]:
            raise IndexModelMismatch(
                f"The store's vectors were embedded as {have[0]!r}, but {want[0]!r} is configured "
                "(NEXUS_EMBED_PRECISION): vectors of two recipes are never mixed. Run `nexus-memory "
                "rebuild-index --reembed fact observation mental_model entity` to embed the store again "
                "with the configured recipe, or set NEXUS_EMBED_PRECISION=auto to keep the store's."
            )
        raise IndexModelMismatch(mismatch_message(have, want))


def embedder_for_store(stores: Stores, embedder: Embedder) -> Embedder:
    """The embedder that adds vectors to this store: `embedder`, or, when the store's settings say
    NEXUS_EMBED_PRECISION=auto, the same model in the recipe the store's index already serves (an
    existing store keeps its recipe, so its vectors stay valid; a new one takes auto's). An explicit
    recipe is taken as it is, and check_index_model refuses it if the store holds another."""
    have = index_state(stores.conn)
    if (
        have is None
        or have[0] == embedder.model_name
        or stores.settings.embed_precision != "auto"
        or split_identity(have[0])[0] != getattr(embedder, "base_model", None)
    ):
        return embedder
    return get_embedder(have[0])


def rebuild_index(stores: Stores, embedder_model: str, dimension: int, *, ann_threshold: int = ANN_THRESHOLD) -> int:
    """Recreate vec_embeddings for `dimension` and the IVF indexes from the canonical table.

    Afterwards the index serves `embedder_model`; returns the rows indexed.
    """
    conn = stores.conn
    with db.transaction(conn):
        create_vec_table(conn, dimension)
        types = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT target_type FROM embeddings WHERE model = ? AND dimension = ?",
                (embedder_model, dimension),
            )
        ]
        for target_type in types:
            cursor = conn.execute(indexed_rows_sql(target_type), (0, embedder_model, target_type))
            insert_vec_rows(conn, ((r[0], target_type, r[2], r[3], r[4], r[5], r[1]) for r in cursor))
        conn.execute(
            "INSERT INTO vector_index_state(id, model, dimension, built_at) VALUES (1, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET model = excluded.model, dimension = excluded.dimension, "
            "built_at = excluded.built_at",
            (embedder_model, dimension, int(time.time() * 1000)),
        )
        total = conn.execute("SELECT count(*) FROM vec_embeddings").fetchone()[0]
    drop_ann(stores.data_dir)
    for target_type in types:
        count = conn.execute(
            "SELECT count(*) FROM embeddings WHERE model = ? AND target_type = ?", (embedder_model, target_type)
        ).fetchone()[0]
        if count >= ann_threshold:
            build_ivf(conn, stores.data_dir, embedder_model, target_type, dimension)
    return total


def nightly_index_upkeep(stores: Stores) -> dict[str, str]:
    """The nightly upkeep of the served model's IVF indexes: `VectorIndex.maintain` per target type, retraining
    the centroids of an index that lost rows to a forget since it was trained (a forget only drops its rows,
    fast). Returns target type -> what was done."""
    state = index_state(stores.conn)
    if state is None:
        return {}
    index = VectorIndex(stores, *state)
    types = [
        r[0] for r in stores.conn.execute("SELECT DISTINCT target_type FROM embeddings WHERE model = ?", state[:1])
    ]
    return {t: index.maintain(t, retrain_pruned=True) for t in sorted(types)}


def reembed(
    stores: Stores,
    embedder: Embedder,
    target_types: Sequence[str] = ("fact",),
    on_progress: Callable[[int, int], None] | None = None,
) -> EmbedStats:
    """Embed `target_types` again from scratch (after the embedded text changed), then reindex.

    The old vectors are dropped first, so until this finishes recall finds those rows by keyword and
    entity only; interrupted, it is simply run again (embedding skips what is already done). When the
    index served another recipe of the same model (a recipe change), every type it held vectors of is
    embedded again too, or it would drop out of the index; the old recipe's rows stay, as another model's do.
    A reembed is bulk work with the machine to itself: the embedding-ahead worker embeds beside this
    process (from ahead.START_AT_TEXTS texts), so both cores of a 2-core machine embed.
    """
    from nexus_memory.embeddings.ahead import ahead_for  # a worker process: only a bulk job needs it

    have = index_state(stores.conn)
    if have is not None and have[0] != embedder.model_name and split_identity(have[0])[0] == embedder.base_model:
        held = stores.conn.execute("SELECT DISTINCT target_type FROM embeddings WHERE model = ?", have[:1])
        target_types = list(dict.fromkeys([*target_types, *sorted(r[0] for r in held)]))
    with db.transaction(stores.conn):
        stores.conn.execute(
            f"DELETE FROM embeddings WHERE model = ? AND target_type IN ({db.placeholders(target_types)})",
            [embedder.model_name, *target_types],
        )
    rebuild_index(stores, embedder.model_name, embedder.dimension)
    ahead = ahead_for(embedder) if isinstance(embedder, Embedder) else None  # not for tests' stand-ins
    return embed_pending(stores, embedder, target_types=target_types, on_progress=on_progress, ahead=ahead)


# --- the embedding step --------------------------------------------------------------------------


@dataclass
class EmbedStats:
    """What one embed_pending call did."""

    rows: int
    seconds: float
    rows_per_s: float
    by_type: dict[str, int]
    # Of `seconds`: in the embedding-ahead worker's drain (this process embedding its share beside the worker,
    # then waiting for it), and of that the part this thread spent not computing (waiting on the worker).
    drain_s: float = 0.0
    wait_s: float = 0.0


# A fact is embedded with the message it came from ("<sender>: <content>", its first this-many
# characters) after its own text: an atomic fact loses what the message around it says ("It was Matt
# Patterson." about a concert), and MiniLM reads ~256 tokens, so the fact itself always counts.
FACT_CONTEXT_CHARS = 500
# When that message answers a question (the message before it in the thread and session, from someone
# else, asks one), the question comes too, its last this-many characters up to its last '?': "No, not
# really. Just keep their area clean." says what it is about only next to "Is it hard to keep turtles?".
QUESTION_CONTEXT_CHARS = 200


def message_context(sender: str | None, content: str) -> str:
    """A fact's source message as its vector and its keyword key read it: "<sender>: <content>", cut."""
    return f"{sender}: {content[:FACT_CONTEXT_CHARS]}" if sender else content[:FACT_CONTEXT_CHARS]


def fact_embedding_text(
    fact: str, sender: str | None, content: str | None, asker: str | None = None, question: str | None = None
) -> str:
    """What is embedded for a fact: the fact, its source message, and the question that message answers."""
    text = fact
    if content:
        text += "\n" + message_context(sender, content)
    if content and question and "?" in question:
        asked = question[: question.rindex("?") + 1][-QUESTION_CONTEXT_CHARS:]
        text += f"\n{asker}: {asked}" if asker else f"\n{asked}"
    return text


# Facts with what fact_embedding_text needs: their message and the one before it (same thread and
# session). Columns: id, text, platform, as_of, thread_id, then sender id / name / content of each.
_FACT_ROWS_SQL = """
        SELECT f.id, f.text, f.platform, f.as_of, f.thread_id, ev.sender_id, ev.sender_name, ev.content,
               pv.sender_id, pv.sender_name, pv.content
        FROM facts f LEFT JOIN events ev ON ev.id = f.source_event_id
        LEFT JOIN events pv ON pv.rowid = (
            SELECT p.rowid FROM events p
            WHERE p.thread_id = ev.thread_id AND p.as_of <= ev.as_of  -- an index range, newest first
              AND (p.as_of < ev.as_of OR p.rowid < ev.rowid)
            ORDER BY p.as_of DESC, p.rowid DESC LIMIT 1) AND pv.session_id IS ev.session_id"""

# Rows of each target type that have no embedding under the model (parameter 1):
# (target_id, text, platform, as_of, thread_id); facts as _FACT_ROWS_SQL, turned into that by _fact_row.
_PENDING_SQL: dict[str, str] = {
    "fact": _FACT_ROWS_SQL
    + """
        WHERE NOT EXISTS (SELECT 1 FROM embeddings e
                          WHERE e.target_type = 'fact' AND e.target_id = f.id AND e.model = ?)""",
    "observation": """
        SELECT a.id, a.output_text, ep.platform, COALESCE(ep.end_time, a.created_at), ep.thread_id
        FROM analysis_runs a LEFT JOIN episodes ep ON ep.id = a.episode_id
        WHERE a.analysis_type_id = 'observation_v1' AND a.output_text IS NOT NULL AND a.output_text != ''
          AND NOT EXISTS (SELECT 1 FROM analysis_runs c WHERE c.parent_id = a.id)  -- current versions only
          AND NOT EXISTS (SELECT 1 FROM embeddings e
                          WHERE e.target_type = 'observation' AND e.target_id = a.id AND e.model = ?)""",
    "mental_model": """
        SELECT m.id, m.name || ': ' || m.description, NULL, m.updated_at, NULL FROM mental_models m
        WHERE NOT EXISTS (SELECT 1 FROM mental_models c WHERE c.parent_id = m.id)  -- current versions only
          AND NOT EXISTS (SELECT 1 FROM embeddings e
                          WHERE e.target_type = 'mental_model' AND e.target_id = m.id AND e.model = ?)""",
    "entity": """
        SELECT n.id, n.name, NULL, n.last_seen, NULL FROM entities n
        WHERE n.merged_into IS NULL
          AND NOT EXISTS (SELECT 1 FROM embeddings e
                          WHERE e.target_type = 'entity' AND e.target_id = n.id AND e.model = ?)""",
}


def _pending(conn: db.Connection, target_type: str, model: str, ids: Sequence[str] | None) -> list[tuple[Any, ...]]:
    if target_type not in _PENDING_SQL:
        raise ValueError(f"cannot embed target type {target_type!r}; known: {sorted(_PENDING_SQL)}")
    sql, args = _PENDING_SQL[target_type], [model]
    rows: list[tuple[Any, ...]] = []
    if ids is None:
        rows = [tuple(r) for r in conn.execute(sql, args)]
    else:
        for part in db.chunked(list(dict.fromkeys(ids))):
            rows += [tuple(r) for r in conn.execute(f"{sql} AND f.id IN ({db.placeholders(part)})", [*args, *part])]
    if target_type == "fact":
        rows = [_fact_row(r) for r in rows]
    return [r for r in rows if r[1] and r[1].strip()]


def _fact_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A _FACT_ROWS_SQL row as (id, embedded text, platform, as_of, thread_id)."""
    sender_id, prev_sender_id, prev_name, prev_content = row[5], row[8], row[9], row[10]
    asked = prev_content is not None and prev_sender_id != sender_id  # someone else's message, not one's own
    text = fact_embedding_text(
        row[1],
        row[6] or sender_id,
        row[7],
        (prev_name or prev_sender_id) if asked else None,
        prev_content if asked else None,
    )
    return row[0], text, row[2], row[3], row[4]


def fact_embedding_texts(conn: db.Connection) -> list[str]:
    """What embed_pending embeds for every stored fact, by today's rules (the embedding-bound benchmark)."""
    texts = (_fact_row(tuple(row))[1] for row in conn.execute(_FACT_ROWS_SQL))
    return [text for text in texts if text and text.strip()]


@dataclass
class StaleVectors:
    """How many of the newest fact vectors were made from another text than the one embedded today."""

    checked: int
    stale: int  # made from a different text: the fact's message, context rules or model input changed
    unknown: int  # embedded before text hashes were kept


def stale_fact_vectors(conn: db.Connection, model: str, sample: int = 1_000) -> StaleVectors:
    """Compare the newest `sample` fact vectors' text hashes with the text fact_embedding_text gives now."""
    stored = dict(
        conn.execute(
            """SELECT target_id, text_hash FROM embeddings WHERE target_type = 'fact' AND model = ?
           ORDER BY rowid DESC LIMIT ?""",
            (model, sample),
        ).fetchall()
    )
    current: dict[str, str] = {}
    for part in db.chunked(list(stored)):
        for row in conn.execute(f"{_FACT_ROWS_SQL} WHERE f.id IN ({db.placeholders(part)})", part):
            fact_id, text = _fact_row(tuple(row))[:2]
            current[fact_id] = text_hash(text)
    unknown = sum(1 for h in stored.values() if h is None)
    stale = sum(1 for i, h in stored.items() if h is not None and i in current and current[i] != h)
    return StaleVectors(checked=len(stored), stale=stale, unknown=unknown)


AHEAD_WINDOW = 20_000  # rows embedded ahead, then stored, at a time (well under ahead.MAX_KEPT)


def length_batches(rows: Sequence[tuple[Any, ...]], batch_size: int) -> Iterator[list[tuple[Any, ...]]]:
    """(id, text, ...) rows in batches of similar text length: a model call pads every text to its
    longest, so sorted batches spend ~15% less compute than batches in arrival order."""
    ordered = sorted(rows, key=lambda r: len(r[1]))
    for start in range(0, len(ordered), batch_size):
        yield ordered[start : start + batch_size]


def embed_pending(
    stores: Stores,
    embedder: Embedder,
    *,
    target_types: Sequence[str] = ("fact",),
    batch_size: int = 128,
    on_progress: Callable[[int, int], None] | None = None,
    fact_ids: Sequence[str] | None = None,
    ahead: EmbeddingAhead | None = None,
) -> EmbedStats:
    """Embed every row of `target_types` that has no embedding for this model yet.

    Writes canonical rows and the search index batch by batch, each batch one transaction
    (encoding happens outside it, so the write lock is held only for the inserts). Idempotent.
    `fact_ids` restricts the facts considered (the per-turn path). `ahead` (nexus_memory.embeddings.ahead)
    holds vectors already made for some of the texts, and embeds the rest with its worker process
    beside this one; those are stored without encoding again (beyond its MAX_KEPT, texts are encoded here).
    Ends with index upkeep (`VectorIndex.maintain`), which builds or folds the IVF index when it is
    due, and with the ONNX query encoder made (once per model) while the model is loaded, so recall
    starts fast.
    """
    embedder = embedder_for_store(stores, embedder)
    check_index_model(stores, embedder)
    if ahead is not None and ahead.embedder.model_name != embedder.model_name:
        ahead = None  # its vectors are of another recipe than the store's
    index = VectorIndex(stores, embedder.model_name, embedder.dimension)
    started = time.perf_counter()
    pending = {
        t: _pending(stores.conn, t, embedder.model_name, fact_ids if t == "fact" else None) for t in target_types
    }
    total = sum(len(rows) for rows in pending.values())
    if on_progress and total:
        on_progress(0, total)  # the work starts now, not at the first stored batch after the drain
    done, by_type = 0, {t: 0 for t in target_types}
    drain_s = drain_cpu_s = 0.0
    for target_type, rows in pending.items():
        for start in range(0, len(rows), AHEAD_WINDOW):
            window = rows[start : start + AHEAD_WINDOW]
            if ahead is not None:  # this process and the worker embed the window together
                ahead.submit([row[1] for row in window])
                wall, cpu = time.perf_counter(), time.thread_time()
                ahead.drain()
                drain_s += time.perf_counter() - wall
                drain_cpu_s += time.thread_time() - cpu
            for batch in length_batches(window, batch_size):
                vectors = _vectors(embedder, [r[1] for r in batch], ahead)
                with db.transaction(stores.conn):
                    index.add(
                        target_type,
                        [(r[0], vectors[i], r[2], r[3], r[4]) for i, r in enumerate(batch)],
                        text_hashes={r[0]: text_hash(r[1]) for r in batch},
                    )
                    if target_type == "fact":
                        write_fact_keys(stores.conn, [r[0] for r in batch])
                done += len(batch)
                by_type[target_type] += len(batch)
                if on_progress:
                    on_progress(done, total)
            if ahead is not None:
                ahead.release([row[1] for row in window])
        index.maintain(target_type)
    seconds = time.perf_counter() - started
    if done and isinstance(embedder, Embedder):
        embedder.prepare_query_encoder()  # the model is loaded now: export the query encoder ahead of recall
    return EmbedStats(
        rows=done,
        seconds=seconds,
        rows_per_s=done / seconds if seconds > 0 else 0.0,
        by_type=by_type,
        drain_s=drain_s,
        wait_s=max(0.0, drain_s - drain_cpu_s),
    )


def write_fact_keys(conn: db.Connection, fact_ids: Sequence[str]) -> None:
    """Give these facts' keyword keys their source message (schema/memory_fact_keys.sql): as the vector
    reads it, less the question it answers, another message that may be forgotten while the fact stays."""
    for part in db.chunked(list(dict.fromkeys(fact_ids))):
        rows = conn.execute(
            f"""SELECT f.rowid, ev.sender_id, ev.sender_name, ev.content
                FROM facts f JOIN events ev ON ev.id = f.source_event_id
                WHERE f.id IN ({db.placeholders(part)}) AND ev.content != ''""",
            part,
        ).fetchall()
        conn.executemany(
            "UPDATE fact_keys_fts SET message = ? WHERE rowid = ?",
            [(message_context(r[2] or r[1], r[3]), r[0]) for r in rows],
        )


def _vectors(embedder: Embedder, texts: list[str], ahead: EmbeddingAhead | None) -> list[np.ndarray]:
    """A vector per text: made ahead where one was, encoded now where not."""
    found = [ahead.vector(text) if ahead is not None else None for text in texts]
    missing = [i for i, vector in enumerate(found) if vector is None]
    if missing:
        for i, vector in zip(
            missing, embedder.encode([texts[i] for i in missing], batch_size=ENCODE_BATCH), strict=True
        ):
            found[i] = vector
    return found  # type: ignore[return-value]


def unembedded_fact_texts(conn: db.Connection, model: str, fact_ids: Sequence[str]) -> list[str]:
    """What embed_pending would embed for those of `fact_ids` with no vector of `model` yet."""
    return [row[1] for row in _pending(conn, "fact", model, fact_ids)]


# --- a few facts now: an agent's write ---------------------------------------------------------


class _ExportedDocuments:
    """A model's checked ONNX export standing in for it in embed_pending (model_name, dimension, encode)."""

    def __init__(self, embedder: Embedder, encoder: query_encoder.OnnxQueryEncoder) -> None:
        self.model_name, self.dimension, self._encoder = embedder.model_name, embedder.dimension, encoder

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        return self._encoder.encode(texts)


def embed_facts_now(stores: Stores, embedder: Embedder, fact_ids: Sequence[str]) -> EmbedStats:
    """Embed a few named facts at once (an agent's write), as embed_pending does.

    Through the model's checked ONNX export when the process has it, the model embeds documents
    and queries alike (no query prefix) and the export matched the store's recipe on the probes to
    query_encoder.PARITY_MIN_COSINE (recorded per recipe at export: fp32 ~1.0, bf16 ~0.99997), the
    standard that makes it the pipeline's vector: a fresh process then stores the vector without
    importing torch. Otherwise through the model, in the store's recipe (an int8 store's through its
    int8 graph, which needs no torch either once made).
    """
    embedder = embedder_for_store(stores, embedder)
    encoder = getattr(embedder, "_query_encoder", None)
    parity = encoder.recipe_parity.get(embedder.precision, 0.0) if encoder is not None else 0.0
    if encoder is not None and not embedder.query_prefix and parity >= query_encoder.PARITY_MIN_COSINE:
        return embed_pending(stores, _ExportedDocuments(embedder, encoder), target_types=("fact",), fact_ids=fact_ids)  # type: ignore[arg-type]
    return embed_pending(stores, embedder, target_types=("fact",), fact_ids=fact_ids)
