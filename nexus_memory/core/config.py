"""Settings: the one place configuration comes from (the environment, then explicit overrides).

Every part of Nexus Memory reads its configuration from a `Settings`; nothing else reads NEXUS_*
variables. The stores default to `./data` and the inbox to `./inbox` under the working directory
at the moment the settings are made (made absolute then, so a later chdir moves nothing): the
commands of the Makefile and the Dagster UI all run from the checkout, and an installed package
never writes into site-packages. See docs/decisions.md.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path


def _env(name: str, default: str) -> str:
    value = os.environ.get(name, "").strip()
    return value or default


class SetupError(RuntimeError):
    """The installation cannot run as it is set up (a setting, the data directory, a store file, a model's
    weights): what to fix, in one line, which the command line prints without a traceback."""


def _env_int(name: str, default: str, minimum: int = 0) -> int:
    text = _env(name, default)
    try:
        value = int(text)
    except ValueError:
        raise SetupError(f"{name}={text!r} is not a whole number") from None
    if value < minimum:
        raise SetupError(f"{name}={text!r} must be at least {minimum}")
    return value


def _env_float(name: str, default: str) -> float:
    text = _env(name, default)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:  # every float setting is a rate, a threshold or seconds
        raise SetupError(f"{name}={text!r} is not a number of at least 0")
    return value


def _env_path(name: str, default: Path) -> Path:
    return Path(_env(name, str(default))).expanduser().absolute()


@dataclass(frozen=True)
class Settings:
    """Everything configurable about a Nexus Memory installation."""

    data_dir: Path = field(default_factory=lambda: _env_path("NEXUS_DATA_DIR", Path.cwd() / "data"))
    inbox_dir: Path = field(default_factory=lambda: _env_path("NEXUS_INBOX_DIR", Path.cwd() / "inbox"))
    # Days before this one are processed by its day's partition (every later day with events is its own).
    partition_start: str = field(default_factory=lambda: _env("NEXUS_PARTITION_START", "2019-01-01"))
    # Who the data directory belongs to: every run the orchestrator launches carries it as the `nexus/tenant`
    # tag (the run queue lets one run per tenant write at a time). Empty: the data directory's own id.
    tenant: str = field(default_factory=lambda: _env("NEXUS_TENANT", ""))
    embedding_model: str = field(default_factory=lambda: _env("NEXUS_EMBEDDING_MODEL", "all-MiniLM-L6-v2"))
    torch_threads: int = field(default_factory=lambda: _env_int("NEXUS_TORCH_THREADS", "1", minimum=1))
    # "onnx": recall embeds queries with an ONNX export of the model (~3x faster, same vectors); "torch"
    query_backend: str = field(default_factory=lambda: _env("NEXUS_QUERY_BACKEND", "onnx"))
    # How stored texts are embedded: "auto" (default: bfloat16 where the CPU computes it natively, else float32;
    # an existing store keeps its recipe), "fp32" or "bf16". The recipe is part of each vector's identity
    # (embeddings.model); bf16 passed the LoCoMo quality gate (docs/speed.md).
    embed_precision: str = field(default_factory=lambda: _env("NEXUS_EMBED_PRECISION", "auto"))
    # Where the ONNX export of the query model is cached (per model and library versions).
    model_cache_dir: Path = field(
        default_factory=lambda: _env_path("NEXUS_MODEL_CACHE", Path.home() / ".cache" / "nexus-memory")
    )
    llm_base_url: str = field(default_factory=lambda: _env("NEXUS_LLM_BASE_URL", ""))
    llm_model: str = field(default_factory=lambda: _env("NEXUS_LLM_MODEL", ""))
    llm_api_key: str = field(default_factory=lambda: _env("OPENAI_API_KEY", "not-needed"))
    llm_timeout_s: float = field(default_factory=lambda: _env_float("NEXUS_LLM_TIMEOUT_S", "60"))
    max_content_chars: int = field(default_factory=lambda: _env_int("NEXUS_MAX_CONTENT_CHARS", "100000", minimum=1))
    # The bearer token `nexus-memory serve` requires (and must have to listen beyond loopback); "" for none.
    api_token: str = field(default_factory=lambda: _env("NEXUS_API_TOKEN", ""), repr=False)
    # How the LLM writer talks to the model: 'tools' (tool loop), 'structured' (one JSON-schema call per
    # episode), or 'auto' (the tool loop, switching an episode to structured when the loop does not work
    # or would take too long: docs/writer.md).
    llm_mode: str = field(default_factory=lambda: _env("NEXUS_LLM_MODE", "auto"))
    # auto mode stops trying the tool loop for the run when the run's first request shows that one tool-loop
    # episode (about 6 requests) would take longer than this many seconds; 0: never for speed.
    llm_tool_episode_s: float = field(default_factory=lambda: _env_float("NEXUS_LLM_TOOL_EPISODE_S", "120"))
    # Per-operation models; each falls back to NEXUS_LLM_MODEL.
    llm_model_writer: str = field(default_factory=lambda: _env("NEXUS_LLM_MODEL_WRITER", ""))
    llm_model_consolidation: str = field(default_factory=lambda: _env("NEXUS_LLM_MODEL_CONSOLIDATION", ""))
    llm_model_reflection: str = field(default_factory=lambda: _env("NEXUS_LLM_MODEL_REFLECTION", ""))
    # Per-operation token budgets (prompt + completion over every call of one episode / fact / run).
    llm_budget_writer: int = field(default_factory=lambda: _env_int("NEXUS_LLM_BUDGET_WRITER", "60000"))
    llm_budget_consolidation: int = field(default_factory=lambda: _env_int("NEXUS_LLM_BUDGET_CONSOLIDATION", "8000"))
    llm_budget_reflection: int = field(default_factory=lambda: _env_int("NEXUS_LLM_BUDGET_REFLECTION", "30000"))
    # Consolidation keeps a mental model of each of the this-many most discussed entities.
    emergent_models: int = field(default_factory=lambda: _env_int("NEXUS_EMERGENT_MODELS", "3"))
    # Mental models are also written here as markdown dossiers (default: <data_dir>/dossiers).
    dossier_dir: Path | None = field(default_factory=lambda: Path(d) if (d := _env("NEXUS_DOSSIER_DIR", "")) else None)
    # Decay (lifecycle/decay.py): confidence x exp(-rate x days since last access); hidden below the threshold.
    decay_rate: float = field(default_factory=lambda: _env_float("NEXUS_DECAY_RATE", "0.01"))
    decay_threshold: float = field(default_factory=lambda: _env_float("NEXUS_DECAY_THRESHOLD", "0.05"))
    # Long commands off a terminal (a log, a pipe) print a progress line this often (core/progress.py).
    progress_every_s: float = field(default_factory=lambda: _env_float("NEXUS_PROGRESS_EVERY_S", "60"))

    def __post_init__(self) -> None:
        # Overrides may arrive as strings (Dagster config, CLI flags); paths are always Paths.
        for name in ("data_dir", "inbox_dir", "model_cache_dir"):
            object.__setattr__(self, name, Path(getattr(self, name)))

    @property
    def llm_enabled(self) -> bool:
        return bool(self.llm_base_url and self.llm_model)

    def llm_model_for(self, operation: str) -> str:
        """The model of one LLM operation (writer, consolidation, reflection), else NEXUS_LLM_MODEL."""
        return str(getattr(self, f"llm_model_{operation}", "") or self.llm_model)

    def llm_budget_for(self, operation: str) -> int:
        """The token budget of one LLM operation; 0 means unlimited."""
        return int(getattr(self, f"llm_budget_{operation}", 0) or 0)

    @property
    def dossiers(self) -> Path:
        return Path(self.dossier_dir) if self.dossier_dir else self.data_dir / "dossiers"

    def store_path(self, name: str) -> Path:
        return self.data_dir / f"{name}.db"


SETTING_NAMES = tuple(f.name for f in fields(Settings))


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment, with explicit overrides (tests, CLI flags, Dagster config) on top."""
    unknown = sorted(set(overrides) - set(SETTING_NAMES))
    if unknown:
        raise TypeError(f"unknown settings {unknown}; settings are {list(SETTING_NAMES)}")
    return replace(Settings(), **overrides)  # type: ignore[arg-type]
