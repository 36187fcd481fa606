"""The package's shape: layers that import only downward, no import circles, no process-wide state.

The layers follow the data (docs/architecture.md):

    engine  <-  iiif  <-  store  <-  runtime  <-  jobs  <-  service, viewer

``settings``, ``errors``, ``defaults`` and ``atomic`` sit below everything; ``cli`` (the command
line) and ``pipeline`` (the in-process collation) may use every layer but the web ones.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "collation"

BASE = {"settings", "errors", "defaults", "atomic", "allocator", "__init__", "py"}
ENGINE = {
    "backbones",
    "candidates",
    "cascade",
    "features",
    "ransac",
    "similarity",
    "correspondences",
    "evaluation",
    "illustrations",
    "checks",
    "detection",
    "concordance",
    "partial",
    "transpositions",
}
RANK = {
    "base": 0,
    "engine": 1,
    "iiif": 2,
    "store": 3,
    "runtime": 4,
    "jobs": 5,
    "service": 6,
    "viewer": 6,
    "pipeline": 3,
    "cli": 7,
}
"""A module may import modules of a lower or equal rank only (service and viewer are siblings)."""

LINE_LIMIT = 400
LONG_FILE_REASON = "longer than 400 lines because"


def layer(module: str) -> str:
    """``collation.jobs.tasks`` -> ``jobs``; ``collation.similarity`` -> ``engine``."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    if top in BASE:
        return "base"
    if top in ENGINE:
        return "engine"
    if top in ("iiif", "store", "runtime", "jobs", "service", "viewer", "pipeline", "cli"):
        return top
    raise AssertionError(f"module {module} belongs to no layer: add it to tests/test_architecture.py")


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def is_module(dotted: str) -> bool:
    path = PACKAGE.parent / dotted.replace(".", "/")
    return path.with_suffix(".py").exists() or path.is_dir()


def imports_of(path: Path) -> set[str]:
    """Modules of the package that ``path`` imports, at any depth of the file (lazy imports too)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("collation"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("collation"):
                found.add(target)
                found.update(f"{target}.{alias.name}" for alias in node.names if is_module(f"{target}.{alias.name}"))
    return found


SOURCES = sorted(PACKAGE.rglob("*.py"))
GRAPH = {module_name(p): imports_of(p) for p in SOURCES}


def test_every_module_has_a_layer():
    for module in GRAPH:
        layer(module)


COMPOSITION_ROOT = "collation.service.app"
"""The app factory mounts the API's and the viewer's blueprints: the one service module that may
import the viewer."""


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_go_downward(module):
    here = layer(module)
    upward = [target for target in GRAPH[module] if RANK[layer(target)] > RANK[here]]
    assert not upward, f"{module} ({here}) imports a higher layer: {upward}"


JOBS_DOORWAY = "collation.service.jobs_bridge"
"""The one web module that calls into ``collation.jobs`` (the scheduler, assessments, a worker)."""


def test_web_layers_reach_the_jobs_through_one_module():
    for module, targets in GRAPH.items():
        if layer(module) in ("service", "viewer") and module != JOBS_DOORWAY:
            bad = [t for t in targets if layer(t) == "jobs"]
            assert not bad, f"{module} imports {bad}: go through {JOBS_DOORWAY}"


def test_service_and_viewer_meet_only_in_the_app_factory():
    for module, targets in GRAPH.items():
        if layer(module) == "viewer":
            bad = [
                t
                for t in targets
                if t
                in (
                    "collation.service.routes",
                    "collation.service.cli",
                    "collation.service.collations",
                    COMPOSITION_ROOT,
                )
            ]
            assert not bad, f"{module} imports the API's routes, commands or app factory: {bad}"
        if layer(module) == "service" and module != COMPOSITION_ROOT and not module.endswith("service"):
            bad = [t for t in targets if layer(t) == "viewer"]
            assert not bad, f"{module} imports the viewer: {bad}"


def test_no_import_circles():
    """Module-level and lazy imports alike: no module reaches itself again."""
    modules = set(GRAPH)

    def edges(module: str) -> set[str]:
        # A package's __init__ re-exporting its modules is not a dependency of those modules.
        return {t for t in GRAPH[module] if t in modules and not module.startswith(t + ".") and t != module}

    state: dict[str, int] = {}
    stack: list[str] = []
    circles: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(edges(module)):
            if state.get(target) == 1:
                circles.append(" -> ".join([*stack[stack.index(target) :], target]))
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(modules):
        if module not in state:
            visit(module)
    assert not circles, "import circles:\n" + "\n".join(circles)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_global_statements_or_module_level_caches(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        assert not isinstance(node, ast.Global | ast.Nonlocal), f"{path.name}:{node.lineno}: `global` statement"
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign) and node.value is not None
            else []
        )
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        for target in targets:
            if not isinstance(target, ast.Name) or target.id.isupper() or target.id.startswith("__"):
                continue  # constants are UPPER_CASE; their values are never changed (read-only by convention)
            mutable = isinstance(value, ast.Dict | ast.List | ast.Set) or (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name | ast.Attribute)
                and (value.func.id if isinstance(value.func, ast.Name) else value.func.attr)
                in ("dict", "list", "set", "OrderedDict", "defaultdict", "deque", "Lock", "RLock", "Event")
            )
            assert not mutable, f"{path.name}:{node.lineno}: module-level mutable state `{target.id}`"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_long_files_say_why(path):
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n")
    if lines > LINE_LIMIT:
        docstring = ast.get_docstring(ast.parse(text)) or ""
        assert LONG_FILE_REASON in docstring.lower(), (
            f"{path.relative_to(PACKAGE)} has {lines} lines: split it, or say why in its docstring "
            f"('{LONG_FILE_REASON} ...')"
        )
