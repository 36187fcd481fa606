"""The house's health in numbers: what issue 37's table counted, by one command, on any checkout.

    python tools/house_counts.py [ROOT]

Prints one line per measure. Each is counted from the source (``ast``), so the same command gives the
"before" on an old checkout and the "after" on this one:

- lookups of stored documents' fields as dict keys (``doc["regions"]``, ``item.get("verdict")``), by
  document, outside the store's edge (the module that defines the document's type);
- manuscript documents built by hand in tests (a dict literal with ``regions`` and ``features_key``);
- inline region-to-position maps (``{r["index"]: k for k, r in enumerate(...)}``);
- public names defined at module level in more than one module of the package (one name, several things);
- whether importing the app factory or the io worker loads torch (run in a subprocess);
- files over 400 lines, the longest file, and files that promise a split "next";
- test folders against the package's layers, helpers and fixtures defined more than once in tests.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

DOCUMENTS = {
    "manuscript": {
        "regions",
        "regions_source",
        "regions_note",
        "features_key",
        "precision",
        "manifest_id",
        "errors",
        "version",
        "digest",
        "canvas_id",
        "canvas_index",
        "blank",
    },
    "pair results": {"S", "N_S", "P_S", "T", "two_cycles", "three_cycles", "seeds", "regions0", "regions1"},
    "assessment": {"verdict", "source", "target", "pair", "reviewer", "note", "created", "replaces"},
}
"""Field names that only a stored document of that kind has (generic words like ``label`` are left out)."""

EDGES = {"manuscript": "stored.py", "pair results": "stored.py", "assessment": "stored.py"}
"""The module (under collation/store/) where each document is typed: lookups there are its edge."""

LAYERS = ["core", "engine", "net", "iiif", "publish", "store", "jobs", "service", "viewer", "cli"]


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def key_of(node: ast.AST) -> str | None:
    """``x["key"]`` or ``x.get("key", ...)`` -> ``key``."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return node.args[0].value
    return None


def document_lookups(package: Path) -> dict[str, tuple[int, int]]:
    """Document -> (lookups, modules) outside its edge."""
    found: dict[str, Counter[str]] = defaultdict(Counter)
    for path in python_files(package):
        if path.parent.name == "store" and path.name == "stored.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            key = key_of(node)
            for document, fields in DOCUMENTS.items():
                if key in fields:
                    found[document][str(path.relative_to(package))] += 1
    return {d: (sum(found[d].values()), len(found[d])) for d in DOCUMENTS}


def hand_built_manuscripts(tests: Path) -> int:
    """Test files with a dict literal holding both ``regions`` and ``features_key``."""
    files = 0
    for path in python_files(tests):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                if {"regions", "features_key"} <= keys:
                    files += 1
                    break
    return files


def inline_position_maps(package: Path) -> int:
    """Dict comprehensions ``{r["index"]: k for k, r in enumerate(...)}`` outside ``positions()``."""
    count = 0
    for path in python_files(package):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.DictComp)
                and key_of(node.key) == "index"
                and isinstance(node.generators[0].iter, ast.Call)
                and getattr(node.generators[0].iter.func, "id", "") == "enumerate"
                and path.name != "correspondence.py"
            ):
                count += 1
    return count


def module_level_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_") and n not in {"main", "bp", "log", "logger", "app"}}


def repeated_names(package: Path) -> dict[str, int]:
    where: dict[str, int] = Counter()
    for path in python_files(package):
        if path.name != "__init__.py":
            where.update(module_level_names(path))
    return {name: n for name, n in sorted(where.items()) if n > 1}


def imports_torch(root: Path, statement: str) -> bool:
    code = f"import sys; {statement}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=False)
    return out.stdout.strip().endswith("True") if out.returncode == 0 else None  # type: ignore[return-value]


def defined_more_than_once(tests: Path, names: set[str]) -> dict[str, int]:
    found: Counter[str] = Counter()
    for path in python_files(tests):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name in names:
                found[node.name] += 1
    return dict(sorted(found.items()))


def main(root: Path) -> None:
    package, tests = root / "collation", root / "tests"
    files = [p for p in python_files(package)]
    lines = {p: len(p.read_text().splitlines()) for p in files}
    print(f"package: {len(files)} files, {sum(lines.values())} lines")
    for document, (count, modules) in document_lookups(package).items():
        print(f"{document} document: {count} field lookups as dict keys in {modules} modules")
    print(f"manuscript documents built by hand in tests: {hand_built_manuscripts(tests)} files")
    print(f"inline region-to-position maps: {inline_position_maps(package)}")
    repeated = repeated_names(package)
    watched = ["features_key", "candidate_pairs", "extract_features", "Progress", "pairs_to_score", "VERDICTS"]
    print(
        f"public names defined in several modules: {len(repeated)}; of issue 37's: "
        + ", ".join(f"{n} {repeated.get(n, 1)}" for n in watched)
    )
    print(
        f"torch loaded by importing the app: {imports_torch(root, 'import collation.app')}; "
        f"by the io worker's tasks: {imports_torch(root, 'import collation.jobs.tasks')}"
    )
    longest = max(lines, key=lines.get)
    promises = [p.name for p in files if "is the next step" in p.read_text()]
    print(
        f"files over 400 lines: {sum(n > 400 for n in lines.values())}; longest "
        f"{longest.relative_to(package)} {lines[longest]}; split promised 'next': {promises}"
    )
    folders = sorted(p.name for p in tests.iterdir() if p.is_dir() and any(p.glob("test_*.py")))
    print(
        f"test folders: {len(folders)} {folders}; layers {len(LAYERS)}; mirrored: {sorted(set(folders) & set(LAYERS))}"
    )
    twice = defined_more_than_once(tests, {"write_collation", "api", "store", "client"})
    print(f"defined more than once in tests: {twice}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent))
