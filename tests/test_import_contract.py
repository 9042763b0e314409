"""The import contract of `make lint` (pyproject's [tool.importlinter], docs/packages.md): kept, and able to fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("nexus_memory", "nexus_memory_assets", "sensors", "resources")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
# The only modules of nexus_memory/ that sit outside a package (docs/packages.md).
LOOSE_MODULES_ALLOWED = {"__init__.py", "__main__.py"}


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}  # the tree under `root`, not the installed one
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )


def _copy_tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for name in PACKAGES:
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def test_the_contract_is_kept() -> None:
    done = _lint_imports(REPO)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "back_edge", "broken"),
    [
        # a layer importing one above it, hidden where only a type checker would look
        (
            "nexus_memory/core/ids.py",
            "if TYPE_CHECKING:\n    from nexus_memory.recall.engine import recall\n",
            "Layers",
        ),
        # the domain core reaching for Dagster
        ("nexus_memory/recall/fusion.py", "import dagster\n", "Dagster glue"),
        # a package importing the Dagster glue
        ("nexus_memory/facts/state.py", "from nexus_memory_assets import jobs\n", "Dagster glue"),
    ],
)
def test_a_back_edge_breaks_the_contract(tmp_path: Path, module: str, back_edge: str, broken: str) -> None:
    root = _copy_tree(tmp_path)
    path = root / module
    text = path.read_text()
    header = "from typing import TYPE_CHECKING\n" if "TYPE_CHECKING" in back_edge else ""
    path.write_text(text + "\n" + header + back_edge)
    done = _lint_imports(root)
    assert done.returncode != 0, done.stdout[-3000:]
    assert any(broken in line and "BROKEN" in line for line in done.stdout.splitlines()), done.stdout[-3000:]


def test_no_module_import_cycle() -> None:
    """No module reaches itself through imports (function-level and TYPE_CHECKING ones included)."""
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False, cache_dir=None)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert cycles == []


def test_every_module_of_nexus_memory_is_in_a_package() -> None:
    loose = {p.name for p in (REPO / "nexus_memory").glob("*.py")} - LOOSE_MODULES_ALLOWED
    assert loose == set()
