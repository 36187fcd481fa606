"""The jobs layer's structure: imports go one way, no module-level mutable state, public RQ APIs."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "collation"
OWNED = [*sorted((PACKAGE / "jobs").glob("*.py")), *sorted((PACKAGE / "store").glob("*.py")), PACKAGE / "runtime.py"]


def imported_modules(path: Path) -> set[str]:
    """Absolute names of the ``collation`` modules a file imports (at any depth of the file)."""
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n.startswith("collation")}


LAYERS = ["collation.store", "collation.runtime", "collation.jobs", "collation.service", "collation.viewer"]


@pytest.mark.parametrize("path", OWNED, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_layers_import_only_downward(path: Path) -> None:
    module = ".".join(path.relative_to(REPO).with_suffix("").parts)
    layer = next(i for i, name in enumerate(LAYERS) if module.startswith(name))
    above = LAYERS[layer + 1 :]
    upward = sorted(n for n in imported_modules(path) if any(n.startswith(a) for a in above))
    assert not upward, f"{module} imports {upward} from a layer above it"


def test_scheduler_does_not_import_the_tasks() -> None:
    for name in ("planning", "scheduling"):
        imports = imported_modules(PACKAGE / "jobs" / f"{name}.py")
        assert not {n for n in imports if n.startswith(("collation.jobs.tasks", "collation.jobs.steps"))}, name
    code = "import sys, collation.jobs.scheduling; print('collation.jobs.tasks' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("path", OWNED, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_global_statements_nor_private_rq_attributes(path: Path) -> None:
    tree = ast.parse(path.read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Global)]
    private = {"_dependency_ids", "_stop_requested", "_dependency_id"}
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} & private
    assert not used


def test_no_step_names_are_matched_as_strings() -> None:
    for path in OWNED:
        if path.name == "records.py":  # where CollationStatus spells the stored strings
            continue
        text = path.read_text()
        for pattern in ('startswith(("prepare-"', 'f"features-{', 'f"prepare-{', '"finished"', '"failed"'):
            assert pattern not in text, (path.name, pattern)


def test_context_module_is_gone() -> None:
    assert not (PACKAGE / "jobs" / "context.py").exists()
