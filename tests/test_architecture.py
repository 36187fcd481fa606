"""The package's shape, in one place: folders that are layers, imports that go down, no circles.

The layers follow the data (docs/architecture.md); each folder of ``collation`` is one layer and may
import only the layers listed for it in ``MAY_IMPORT``:

    core  <-  engine, net  <-  iiif  <-  publish, store  <-  jobs  <-  service  <-  viewer  <-  app  <-  cli

The package root holds only its face: ``__init__`` (the version), ``__main__`` (``python -m
collation``, the command line) and ``app`` (the WSGI app factory, the one module that mounts the API's
and the viewer's blueprints).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "collation"

MAY_IMPORT = {
    "core": set(),
    "engine": {"core"},
    "net": {"core"},
    "iiif": {"core", "engine", "net"},
    "publish": {"core", "iiif"},
    "store": {"core", "engine"},
    "jobs": {"core", "engine", "net", "iiif", "store"},
    "service": {"core", "engine", "net", "iiif", "publish", "store", "jobs"},
    "viewer": {"core", "engine", "net", "iiif", "publish", "store", "jobs", "service"},
    "app": {"core", "jobs", "service", "viewer"},
    "cli": {"core", "engine", "net", "iiif", "store", "jobs", "service", "app"},
}
"""Layer -> the layers below it that it may import (besides itself)."""

FACE = {"collation": "core", "collation.__main__": "cli", "collation.app": "app"}
"""The modules of the package root and the layer each stands in."""

LINE_LIMIT = 400
LONG_FILE_REASON = "longer than 400 lines because"


def layer(module: str) -> str:
    """``collation.jobs.tasks`` -> ``jobs``; ``collation.app`` -> ``app``."""
    if module in FACE:
        return FACE[module]
    top = module.split(".")[1]
    if top not in MAY_IMPORT:
        raise AssertionError(f"{module} is in no layer: the package root holds only {sorted(FACE)}")
    return top


def module_name(path: Path, root: Path = REPO) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def is_module(dotted: str) -> bool:
    path = REPO / dotted.replace(".", "/")
    return path.with_suffix(".py").exists() or path.is_dir()


def imports_of(path: Path, name: str, local: set[str] = frozenset()) -> set[str]:
    """Modules that ``path`` imports at any depth of the file (lazy imports too): the package's, and
    the plain names of ``local`` (sibling scripts of a folder such as benchmarks/)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("collation") or a.name in local)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("collation"):
                found.add(target)
                found.update(f"{target}.{a.name}" for a in node.names if is_module(f"{target}.{a.name}"))
            elif target in local:
                found.add(target)
    return found - {name}


SOURCES = sorted(PACKAGE.rglob("*.py"))
GRAPH = {module_name(p): imports_of(p, module_name(p)) for p in SOURCES}


def test_every_module_is_in_a_layer_and_the_root_holds_only_the_face():
    for module in GRAPH:
        layer(module)


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_go_down_the_layers(module):
    here = layer(module)
    allowed = MAY_IMPORT[here] | {here}
    bad = sorted(t for t in GRAPH[module] if layer(t) not in allowed)
    assert not bad, f"{module} ({here}) imports {bad}: {here} may import only {sorted(allowed)}"


def test_no_two_modules_share_a_name():
    names = Counter(p.stem for p in SOURCES if p.stem not in ("__init__", "__main__"))
    assert not [n for n, k in names.items() if k > 1], [n for n, k in names.items() if k > 1]


def circles(graph: dict[str, set[str]]) -> list[str]:
    """Every import circle of ``graph`` (a package's ``__init__`` re-exporting its modules excepted)."""
    nodes = set(graph)

    def edges(module: str) -> list[str]:
        return sorted(t for t in graph[module] if t in nodes and not module.startswith(t + "."))

    state: dict[str, int] = {}
    stack: list[str] = []
    found: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in edges(module):
            if state.get(target) == 1:
                found.append(" -> ".join([*stack[stack.index(target) :], target]))
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(nodes):
        if module not in state:
            visit(module)
    return found


def test_no_import_circles_in_the_package():
    assert not circles(GRAPH), "import circles:\n" + "\n".join(circles(GRAPH))


@pytest.mark.parametrize("folder", ["benchmarks", "tests", "scripts"])
def test_no_import_circles_among_scripts_and_tests(folder):
    files = sorted((REPO / folder).rglob("*.py"))
    local = {p.stem for p in files}
    graph = {p.stem: {t for t in imports_of(p, p.stem, local) if t in local} for p in files}
    assert not circles(graph), "import circles:\n" + "\n".join(circles(graph))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_global_statements_or_module_level_caches(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        assert not isinstance(node, ast.Global), f"{path.name}:{node.lineno}: `global` statement"
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
    """400 lines is guidance, not a wall: a longer module says in its docstring why it is one module (a split
    must make sense on its own; no file is split to stay under a number)."""
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n")
    if lines > LINE_LIMIT:
        docstring = ast.get_docstring(ast.parse(text)) or ""
        assert LONG_FILE_REASON in docstring.lower(), (
            f"{path.relative_to(PACKAGE)} has {lines} lines: split it, or say why in its docstring "
            f"('{LONG_FILE_REASON} ...')"
        )


@pytest.mark.heavy
def test_the_engine_imports_with_torch_numpy_and_pillow_alone():
    """A GPU machine has torch, timm, NumPy and Pillow, and none of Flask, Redis, RQ or the rest."""
    code = (
        "import sys, collation.engine.pipeline, collation.engine.cascade, collation.engine.detection, "
        "collation.engine.evaluation, collation.engine.illustrations, collation.core.options\n"
        "web = {'flask', 'redis', 'rq', 'requests', 'marshmallow', 'boto3', 'waitress', 'yaml', 'xlsxwriter'}\n"
        "print(sorted(web & {m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "modules",
    [
        "collation.core.options, collation.core.vocabulary",
        # the API process: the app factory mounts every route and page
        "collation.app, collation.cli.serve",
        # an io worker: the worker and the steps it runs (reading manifests, keys, the final results)
        "collation.jobs.worker, collation.jobs.tasks, collation.jobs.manuscripts, collation.engine.feature_keys",
    ],
    ids=["options", "api", "io-worker"],
)
def test_the_api_and_the_io_workers_import_no_torch(modules: str):
    """torch costs every process that imports it about 400 MB and two seconds: only the compute steps
    (features, scores) and detection need it, and they import it when they run."""
    code = f"import sys, {modules}; print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch')[:3])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------------------------------
# The jobs layer


JOBS_AND_STORE = [*sorted((PACKAGE / "jobs").glob("*.py")), *sorted((PACKAGE / "store").glob("*.py"))]


def test_scheduler_does_not_import_the_steps():
    for name in ("planning", "scheduling"):
        imports = GRAPH[f"collation.jobs.{name}"]
        assert not {n for n in imports if n.startswith(("collation.jobs.tasks", "collation.jobs.steps"))}, name
    code = "import sys, collation.jobs.scheduling; print('collation.jobs.steps' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("path", JOBS_AND_STORE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_rq_attributes(path: Path) -> None:
    tree = ast.parse(path.read_text())
    private = {"_dependency_ids", "_stop_requested", "_dependency_id"}
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} & private
    assert not used


def test_no_step_names_are_matched_as_strings() -> None:
    for path in JOBS_AND_STORE:
        if path.name == "records.py":  # where CollationStatus spells the stored strings
            continue
        text = path.read_text()
        for pattern in ('startswith(("prepare-"', 'f"features-{', 'f"prepare-{', '"finished"', '"failed"'):
            assert pattern not in text, (path.name, pattern)
