"""Shape metrics of the ``collation`` package: one table, one column per repository root given.

    python benchmarks/shape_metrics.py .                  # this tree
    python benchmarks/shape_metrics.py /tmp/before .      # two trees side by side
    python benchmarks/shape_metrics.py . --details        # also the lists behind the counts

Plain stdlib (ast, pathlib): nothing is imported from the trees measured. Rows:

- files and lines per top-level folder of ``collation`` ("(root)": the package root's own files);
- scoring entry points: which of a fixed list of score-computing functions are defined;
- option lookups outside ``collation/core/options.py``: ``options["..."]`` and ``options.get(``;
- ``record["request"]`` / ``record.get("request")`` walks;
- correspondence shapes: dict literals with a "source" key and one of "match", "candidates",
  "target" (distinct key pairs, and distinct full key sets);
- imports that go up the layers: the layering of the tree's own ``tests/test_architecture.py``
  (``MAY_IMPORT`` where it has one, else ``RANK``), read with ``ast.literal_eval``;
- import circles (module-level and lazy imports; then module-level only), over ``collation`` and
  separately over ``benchmarks/``;
- files over 400 and over 500 lines; duplicate module basenames.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from test_architecture import circles

SCORING = (
    "score_pairs",
    "score_matrix",
    "score_pairs_transposed",
    "score_matrix_transposed",
    "sparse_score_matrix",
    "cheap_scores",
    "pruned_score_matrix",
    "pruned_score_matrix_transposed",
    "score_features_matrix",
    "score_candidates",
)
OPTIONS_MODULE = "collation/core/options.py"
CORRESPONDENCE_KEYS = ("match", "candidates", "target")
LIMITS = (400, 500)


# -- reading ---------------------------------------------------------------------------------------


class Tree:
    """One repository root: its package's files, parsed once."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.package = self.root / "collation"
        if not self.package.is_dir():
            raise SystemExit(f"{root}: no collation package")
        self.files = sorted(self.package.rglob("*.py"))
        self.text = {p: p.read_text(encoding="utf-8") for p in self.files}
        self.ast = {p: ast.parse(t, filename=str(p)) for p, t in self.text.items()}

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def module(self, path: Path, base: Path | None = None) -> str:
        parts = list(path.relative_to(base or self.root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts)

    def is_module(self, dotted: str) -> bool:
        path = self.root / dotted.replace(".", "/")
        return path.with_suffix(".py").exists() or path.is_dir()


def lines(text: str) -> int:
    return text.count("\n")


def top_folder(tree: Tree, path: Path) -> str:
    parts = path.relative_to(tree.package).parts
    return parts[0] if len(parts) > 1 else "(root)"


def lazy_nodes(module: ast.Module) -> set[int]:
    """ids of the import nodes inside a function body (lazy imports)."""
    lazy: set[int] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    lazy.add(id(inner))
    return lazy


def imports_of(
    tree: Tree, path: Path, module: ast.Module, name: str, local: frozenset[str] = frozenset(), lazy: bool = True
) -> set[str]:
    """The package's modules (or the plain names of ``local`` scripts) that ``path`` imports; with
    ``lazy`` False, module-level imports only (``if TYPE_CHECKING`` blocks included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skip = set() if lazy else lazy_nodes(module)
    found: set[str] = set()
    for node in ast.walk(module):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "collation" or a.name in local)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "collation":
                found.add(target)
                found.update(f"{target}.{a.name}" for a in node.names if tree.is_module(f"{target}.{a.name}"))
            elif target in local:
                found.add(target)
    return found - {name}


# -- layering (from the tree's own tests/test_architecture.py) -------------------------------------


def literals(path: Path) -> dict[str, object]:
    found: dict[str, object] = {}
    if not path.is_file():
        return found
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        single = isinstance(node, ast.Assign) and len(node.targets) == 1
        target = node.targets[0] if single else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and value is not None:
            with contextlib.suppress(ValueError):
                found[target.id] = ast.literal_eval(value)
    return found


class Layering:
    def __init__(self, tree: Tree) -> None:
        spec = literals(tree.root / "tests" / "test_architecture.py")
        self.may_import = spec.get("MAY_IMPORT")
        self.face = spec.get("FACE", {})
        self.rank = spec.get("RANK")
        self.base = set(spec.get("BASE", ()))
        self.engine = set(spec.get("ENGINE", ()))
        self.kind = "MAY_IMPORT" if self.may_import else "RANK" if self.rank else "none"

    def layer(self, module: str) -> str | None:
        if self.kind == "MAY_IMPORT":
            if module in self.face:
                return self.face[module]
            parts = module.split(".")
            return parts[1] if len(parts) > 1 and parts[1] in self.may_import else None
        if self.kind == "RANK":
            parts = module.split(".")
            top = parts[1] if len(parts) > 1 else "__init__"
            if top in self.base:
                return "base"
            if top in self.engine:
                return "engine"
            return top if top in self.rank else None
        return None

    def upward(self, source: str, target: str) -> bool:
        here, there = self.layer(source), self.layer(target)
        if here is None or there is None:
            return there is None and here is not None  # a module in no layer counts as a violation
        if self.kind == "MAY_IMPORT":
            return there != here and there not in self.may_import[here]
        return self.rank[there] > self.rank[here]


# -- metrics ---------------------------------------------------------------------------------------


def named(node: ast.AST, name: str) -> bool:
    """``name`` or ``<anything>.name``."""
    return (isinstance(node, ast.Name) and node.id == name) or (isinstance(node, ast.Attribute) and node.attr == name)


def string_key(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def lookups(tree: Tree, receiver: str, key: str | None, exclude: str | None = None) -> Counter[str]:
    """Per file: ``receiver["..."]`` subscripts with a string key (``key`` only, if given) and
    ``receiver.get(`` calls (with ``key`` as first argument, if given)."""
    per_file: Counter[str] = Counter()
    for path, module in tree.ast.items():
        rel = tree.rel(path)
        if rel == exclude:
            continue
        for node in ast.walk(module):
            if isinstance(node, ast.Subscript) and named(node.value, receiver):
                k = string_key(node.slice)
                if k is not None and (key is None or k == key):
                    per_file[rel] += 1
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and named(node.func.value, receiver)
                and (key is None or (node.args and string_key(node.args[0]) == key))
            ):
                per_file[rel] += 1
    return per_file


def metrics(root: Path) -> dict[str, object]:
    tree = Tree(root)
    m: dict[str, object] = {}

    folders: dict[str, list[int]] = {}
    for path in tree.files:
        f = folders.setdefault(top_folder(tree, path), [0, 0])
        f[0] += 1
        f[1] += lines(tree.text[path])
    m["folders"] = folders
    m["total"] = [len(tree.files), sum(lines(t) for t in tree.text.values())]

    defined: dict[str, list[str]] = {}
    other_score: set[str] = set()
    for path, module in tree.ast.items():
        for node in ast.walk(module):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name in SCORING:
                    defined.setdefault(node.name, []).append(tree.module(path))
                elif "score" in node.name and not node.name.startswith("_") and node in module.body:
                    other_score.add(f"{tree.module(path)}.{node.name}")
    m["scoring"] = defined
    m["other_score_functions"] = sorted(other_score)

    m["option_lookups"] = lookups(tree, "options", None, exclude=OPTIONS_MODULE)
    m["request_walks"] = lookups(tree, "record", "request")

    pairs: Counter[str] = Counter()
    keysets: Counter[str] = Counter()
    for module in tree.ast.values():
        for node in ast.walk(module):
            if isinstance(node, ast.Dict):
                keys = [string_key(k) for k in node.keys if k is not None]
                if "source" in keys and any(k in keys for k in CORRESPONDENCE_KEYS):
                    for k in CORRESPONDENCE_KEYS:
                        if k in keys:
                            pairs[f"source+{k}"] += 1
                    keysets["{" + ",".join(sorted(k for k in keys if k)) + "}"] += 1
    m["correspondence_pairs"] = pairs
    m["correspondence_keysets"] = keysets

    names = {p: tree.module(p) for p in tree.files}
    graph_all = {names[p]: imports_of(tree, p, tree.ast[p], names[p]) for p in tree.files}
    graph_top = {names[p]: imports_of(tree, p, tree.ast[p], names[p], lazy=False) for p in tree.files}
    layering = Layering(tree)
    m["layering"] = layering.kind
    m["upward"] = sorted(f"{s} -> {t}" for s, ts in graph_all.items() for t in ts if layering.upward(s, t))
    m["circles_package"] = circles(graph_all)
    m["circles_package_top"] = circles(graph_top)

    bench = sorted((tree.root / "benchmarks").glob("*.py"))
    local = frozenset(p.stem for p in bench)
    parsed = {p: ast.parse(p.read_text(encoding="utf-8")) for p in bench}
    m["circles_benchmarks"] = circles(
        {p.stem: {t for t in imports_of(tree, p, parsed[p], p.stem, local) if t in local} for p in bench}
    )
    m["circles_benchmarks_top"] = circles(
        {p.stem: {t for t in imports_of(tree, p, parsed[p], p.stem, local, lazy=False) if t in local} for p in bench}
    )

    sizes = {tree.rel(p): lines(t) for p, t in tree.text.items()}
    m["over"] = {limit: sorted(f"{r} ({n})" for r, n in sizes.items() if n > limit) for limit in LIMITS}
    stems = Counter(p.stem for p in tree.files if p.stem not in ("__init__", "__main__"))
    m["duplicates"] = sorted(
        f"{s}: " + ", ".join(tree.rel(p) for p in tree.files if p.stem == s) for s, k in stems.items() if k > 1
    )
    return m


# -- the table -------------------------------------------------------------------------------------


def listed(result: dict[str, object]) -> str:
    return ", ".join(f"{k} x{n}" for k, n in sorted(result["correspondence_pairs"].items()))


def table(roots: list[Path], details: bool) -> str:
    results = [metrics(r) for r in roots]
    heads = [str(r) for r in roots]
    rows: list[tuple[str, list[str]]] = []

    folders = sorted({f for r in results for f in r["folders"]}, key=lambda f: (f != "(root)", f))
    for f in folders:
        rows.append(
            (
                f"collation/{f}: files / lines" if f != "(root)" else "collation (root files): files / lines",
                [("{} / {}".format(*r["folders"][f]) if f in r["folders"] else "-") for r in results],
            )
        )
    rows.append(("collation total: files / lines", ["{} / {}".format(*r["total"]) for r in results]))
    rows.append((f"scoring entry points (of {len(SCORING)} named)", [str(len(r["scoring"])) for r in results]))
    for name in SCORING:
        rows.append(
            (
                f"  {name}",
                [
                    ",".join(x.removeprefix("collation.") for x in r["scoring"][name]) if name in r["scoring"] else "-"
                    for r in results
                ],
            )
        )
    rows.append(
        ("other public module-level *score* functions", [str(len(r["other_score_functions"])) for r in results])
    )
    rows.append(
        (
            'options["..."] / options.get( outside core/options.py',
            [f"{sum(r['option_lookups'].values())} in {len(r['option_lookups'])} files" for r in results],
        )
    )
    rows.append(
        (
            'record["request"] / record.get("request")',
            [f"{sum(r['request_walks'].values())} in {len(r['request_walks'])} files" for r in results],
        )
    )
    rows.append(
        (
            "correspondence shapes: distinct key pairs",
            [f"{len(r['correspondence_pairs'])} ({listed(r)})" for r in results],
        )
    )
    rows.append(("correspondence shapes: distinct key sets", [str(len(r["correspondence_keysets"])) for r in results]))
    rows.append(("layering used", [r["layering"] for r in results]))
    rows.append(("imports up the layers", [str(len(r["upward"])) for r in results]))
    rows.append(("import circles, collation (all imports)", [str(len(r["circles_package"])) for r in results]))
    rows.append(("import circles, collation (module-level)", [str(len(r["circles_package_top"])) for r in results]))
    rows.append(("import circles, benchmarks/ (all imports)", [str(len(r["circles_benchmarks"])) for r in results]))
    rows.append(
        ("import circles, benchmarks/ (module-level)", [str(len(r["circles_benchmarks_top"])) for r in results])
    )
    for limit in LIMITS:
        rows.append((f"files over {limit} lines", [str(len(r["over"][limit])) for r in results]))
    rows.append(("duplicate module basenames", [str(len(r["duplicates"])) for r in results]))

    width0 = max(len(label) for label, _ in rows)
    widths = [max(len(h), *(len(v[i]) for _, v in rows)) for i, h in enumerate(heads)]
    out = ["  ".join([" " * width0, *(h.ljust(w) for h, w in zip(heads, widths, strict=True))])]
    out.append("  ".join(["-" * width0, *("-" * w for w in widths)]))
    out += [
        "  ".join([label.ljust(width0), *(v.ljust(w) for v, w in zip(values, widths, strict=True))]).rstrip()
        for label, values in rows
    ]

    if details:
        for head, r in zip(heads, results, strict=True):
            out += ["", f"== details: {head}"]
            out.append(
                "other public *score* functions: "
                + ", ".join(x.removeprefix("collation.") for x in r["other_score_functions"])
            )
            out.append(
                "option lookups per file: " + ", ".join(f"{k} {n}" for k, n in r["option_lookups"].most_common())
            )
            out.append("request walks per file: " + ", ".join(f"{k} {n}" for k, n in r["request_walks"].most_common()))
            out.append(
                "correspondence key sets: "
                + ", ".join(f"{k} x{n}" for k, n in sorted(r["correspondence_keysets"].items()))
            )
            for key, title in (
                ("upward", "imports up the layers"),
                ("circles_package", "circles, collation, all imports"),
                ("circles_package_top", "circles, collation, module-level"),
                ("circles_benchmarks", "circles, benchmarks, all imports"),
                ("duplicates", "duplicate basenames"),
            ):
                out.append(f"{title}: {len(r[key])}")
                out += [f"    {x}" for x in r[key]]
            for limit in LIMITS:
                out.append(f"over {limit} lines: " + ", ".join(x.removeprefix("collation/") for x in r["over"][limit]))
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "roots",
        nargs="*",
        type=Path,
        default=[Path(__file__).resolve().parent.parent],
        help="repository roots (default: this script's repository)",
    )
    parser.add_argument("--details", action="store_true", help="also the lists behind the counts")
    args = parser.parse_args()
    print(table(args.roots, args.details))


if __name__ == "__main__":
    main()
