"""The ``collate`` command: collate manuscripts in-process, evaluate results, run the service.

``main`` builds the process's one ``Settings`` from the environment (``COLLATION_*``) and hands it to
the command as ``args.settings``; flags win over settings. Every error the project raises on purpose
ends the command with a one-line message and status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from collation import __version__
from collation.core import defaults, options
from collation.core.allocator import keep_freed_memory
from collation.core.errors import CollationError, InputError
from collation.core.options import CollationOptions
from collation.core.settings import Settings

EXIT_USAGE = 2


def _progress_bar():
    """A ``stage(name, done, total)`` callback: one tqdm bar per stage on a terminal; elsewhere (a log
    file, a pipe) one line per finished stage with its duration."""
    if not sys.stderr.isatty():
        return _stage_lines()
    from tqdm import tqdm

    bars: dict[str, tqdm] = {}

    def stage(name: str, done: int, total: int) -> None:
        if name not in bars:
            for bar in bars.values():
                bar.close()
            bars[name] = tqdm(total=total, desc=name, unit="it", file=sys.stderr, leave=True, mininterval=0.5)
        bar = bars[name]
        bar.update(done - bar.n)

    return stage


def _stage_lines():
    # A stage starts when the work before it last reported (its first report comes after its first step).
    started: dict[str, float] = {}
    last = [time.perf_counter()]

    def stage(name: str, done: int, total: int) -> None:
        now = time.perf_counter()
        started.setdefault(name, last[0])
        last[0] = now
        if done >= total:
            print(f"{name}: {total} in {now - started[name]:.1f} s", file=sys.stderr, flush=True)

    return stage


def _candidates(value: str) -> int | None:
    if value.lower() in ("all", "none"):
        return None
    try:
        k = int(value)
    except ValueError:
        k = 0
    if k < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'all', got {value!r}")
    return k


def _named_paths(values: list[str], option: str) -> dict[str, str]:
    named = {}
    for value in values or []:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise InputError(f"{option} expects NAME=PATH, got {value!r}", field=option)
        named[name] = path
    return named


def load_manuscript(name: str, source: str, args: argparse.Namespace):
    """Illustrations of one NAME=SOURCE argument: a folder, a VIA file, or a IIIF manifest."""
    from collation.engine.illustrations import folder_illustrations, is_via_file, via_illustrations
    from collation.engine.pipeline import Manuscript

    path = Path(source)
    if source.startswith(("http://", "https://")) or (path.suffix.lower() == ".json" and not is_via_file(path)):
        from collation.cli.manifest_options import manifest_illustrations

        return Manuscript(name, manifest_illustrations(source, args))
    if is_via_file(path):
        folios = _named_paths(args.folios, "--folios").get(name)
        return Manuscript(name, via_illustrations(path, folios, skip_missing=args.skip_missing_folios))
    if getattr(args, "detect", False):
        from collation.cli.detect import detector_from_args, image_paths
        from collation.engine.illustrations import detected_illustrations

        detector, min_score = detector_from_args(args)
        return Manuscript(name, detected_illustrations(image_paths([source]), detector=detector, min_score=min_score))
    return Manuscript(name, folder_illustrations(path))


def options_from_args(args: argparse.Namespace, settings: Settings) -> CollationOptions:
    """The collation's options from ``collate match``'s flags (the API's body names them alike)."""
    return CollationOptions.parse(
        {name: getattr(args, name) for name in OPTION_FLAGS} | {"candidates": args.candidates},
        backbone=settings.backbone,
    )


OPTION_FLAGS = (
    "backbone",
    "similarity",
    "seed",
    "kernel",
    "normalization",
    "propagation",
    "orientation",
    "transpositions",
    "partial",
    "weak_below",
)
"""The flags of ``collate match`` that are options of the collation (``CollationOptions``); absent: default."""


def cmd_match(args: argparse.Namespace) -> int:
    import torch

    from collation.engine.outputs import write_results
    from collation.engine.pipeline import FEATURES_DTYPE, run_collation

    specs = []
    for value in args.manuscripts:
        name, sep, source = value.partition("=")
        if not sep or not name or not source:
            raise InputError(f"manuscripts are given as NAME=PATH, got {value!r}", field="manuscripts")
        specs.append((name, source))
    if len(specs) < 2:
        raise InputError("a collation needs two or more manuscripts", field="manuscripts")
    manuscripts = [load_manuscript(name, source, args) for name, source in specs]
    for m in manuscripts:
        print(f"{m.name}: {len(m.illustrations)} illustrations", file=sys.stderr)
    settings: Settings = args.settings
    result = run_collation(
        manuscripts,
        options_from_args(args, settings),
        device=args.device or settings.device,
        weights_dir=args.weights_dir or settings.weights_dir,
        dtype=torch.float16 if args.float16 else FEATURES_DTYPE,
        progress=_progress_bar(),
        precision=settings.feature_precision,
    )
    out = write_results(result, args.out)
    for (a, b), pr in result.pairs.items():
        print(
            f"{manuscripts[a].name}-{manuscripts[b].name}: {len(pr.two_cycles)} mutual best matches, "
            f"{len(pr.three_cycles)} from 3-cycles",
            file=sys.stderr,
        )
    print(out)
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    import numpy as np

    from collation.engine.evaluation import accuracy, check_ground_truth, load_ground_truth

    out = Path(args.dir)
    first, sep, second = args.pair.partition(",")
    if not sep or not first or not second:
        raise InputError(f"--pair expects A,B, got {args.pair!r}", field="pair")
    try:
        similarity = json.loads((out / "collation.json").read_text())["options"]["similarity"]
    except (OSError, ValueError, KeyError):
        raise InputError(f"{out}: not a collation output folder (no readable collation.json)") from None
    folder, transpose = out / f"{first}-{second}", False
    if not folder.is_dir():
        folder, transpose = out / f"{second}-{first}", True
    if not folder.is_dir():
        raise InputError(f"{out}: no results for the pair {first},{second}", field="pair")
    ground_truth = load_ground_truth(args.ground_truth)
    matrices = {}
    for name in ("S", "N_S", "P_S"):
        m = np.load(folder / f"{name}.npy")
        matrices[name] = m.T if transpose else m
    ground_truth = check_ground_truth(ground_truth, matrices["S"].shape, restrict=args.restrict)
    scores = {name: accuracy(m, ground_truth) for name, m in matrices.items()}
    if args.json:
        print(
            json.dumps(
                {"pair": f"{first}-{second}", "n_gt": len(ground_truth), "similarity": similarity, "accuracy": scores}
            )
        )
    else:
        print(f"{first}-{second}: top-1 accuracy over {len(ground_truth)} ground-truth pairs (both directions)")
        labels = {"S": f"S ({similarity})", "N_S": "N_S (normalized)", "P_S": "P_S (propagated)"}
        for name, value in scores.items():
            print(f"  {labels[name]:<22} {100 * value:6.1f} %")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``collate`` parser with every subcommand; a subcommand whose module fails to import is an error."""
    from collation.cli.detect import add_detect_command, add_detector_options
    from collation.cli.maintenance import add_subcommands as add_maintenance_commands
    from collation.cli.manifest_options import add_inspect_command, add_manifest_options, add_regions_command
    from collation.cli.serve import add_subcommands as add_service_commands

    parser = argparse.ArgumentParser(prog="collate", description="Match illustrations across manuscripts.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    match = sub.add_parser("match", help="collate two or more manuscripts in this process")
    match.add_argument(
        "manuscripts",
        nargs="+",
        metavar="NAME=PATH",
        help="a folder of illustrations (natural order), a VIA file, or a IIIF manifest (URL or file)",
    )
    match.add_argument("--out", required=True, help="folder for the matrices and correspondences.json")
    match.add_argument(
        "--backbone", choices=options.BACKBONES, help=f"default: $COLLATION_BACKBONE, else {defaults.BACKBONE}"
    )
    match.add_argument(
        "--weights-dir",
        help="folder holding the ResNet-50 weights (default: $COLLATION_WEIGHTS_DIR, else the torch cache)",
    )
    match.add_argument("--similarity", default=defaults.SIMILARITY, choices=options.SIMILARITIES)
    match.add_argument(
        "--kernel",
        default=defaults.KERNEL,
        choices=options.KERNELS,
        help="final Gaussian of S_trans: the authors' code (default) or the paper's formula",
    )
    match.add_argument("--normalization", default=defaults.NORMALIZATION, choices=options.NORMALIZATIONS)
    match.add_argument("--propagation", default=defaults.PROPAGATION, choices=options.PROPAGATIONS)
    match.add_argument(
        "--orientation", default=defaults.ORIENTATION, choices=options.ORIENTATIONS, help="direction of 3-cycles"
    )
    match.add_argument(
        "--transpositions",
        default=None,
        choices=tuple(options.TRANSPOSITION_SETS),
        help="also score mirrored (mirror), mirrored and quarter-turned (all) or mirrored and turned by "
        "±15/30/45° (turns) copies; the winner is reported (docs/transpositions.md); default turns (none "
        "with s_features)",
    )
    match.add_argument(
        "--partial",
        action=argparse.BooleanOptionalAction,
        default=defaults.PARTIAL,
        help="partial copies: S_trans counts only the query cells of the matched area",
    )
    match.add_argument(
        "--weak-below",
        type=float,
        metavar="S",
        help="matches whose raw S is below S are weak: flagged, and in no concordance group "
        "(default: a floor learned from the collation's own scores; 0: none; docs/concordance.md)",
    )
    match.add_argument("--device", help="auto, cpu, cuda or cuda:N (default: $COLLATION_DEVICE, else auto)")
    match.add_argument("--seed", type=int, default=defaults.SEED)
    match.add_argument(
        "--float16", action="store_true", help="store features as float16: half the memory, scores move by about 1e-3"
    )
    match.add_argument("--float32", action="store_true", help="store features as float32 (the default, as the service)")
    match.add_argument(
        "--candidates",
        type=_candidates,
        default=defaults.CANDIDATES,
        metavar="K|all",
        help="score only each illustration's K best pairs by global score, both directions "
        f"(default {defaults.CANDIDATES}); 'all' scores every pair",
    )
    match.add_argument(
        "--folios",
        action="append",
        metavar="NAME=DIR",
        help="folio images of a VIA manuscript (default: the VIA file's folder)",
    )
    match.add_argument(
        "--skip-missing-folios", action="store_true", help="leave out VIA regions whose folio image is absent"
    )
    match.add_argument(
        "--detect",
        action="store_true",
        help="folders hold whole folio images: each illustration detected on them is one region",
    )
    add_detector_options(match)
    add_manifest_options(match)
    add_regions_command(sub)
    add_inspect_command(sub)
    match.set_defaults(handler=cmd_match)

    evaluate = sub.add_parser("evaluate", help="top-1 accuracy of a collation against ground truth")
    evaluate.add_argument("dir", help="output folder of collate match")
    evaluate.add_argument("--ground-truth", required=True, help="JSON list of [a, b] pairs (authors' format)")
    evaluate.add_argument("--pair", required=True, metavar="A,B", help="a indexes A, b indexes B")
    evaluate.add_argument(
        "--restrict",
        action="store_true",
        help="only use ground-truth pairs inside the matrices (for partial manuscripts)",
    )
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")
    evaluate.set_defaults(handler=cmd_evaluate)

    add_detect_command(sub)
    add_service_commands(sub)
    add_maintenance_commands(sub)
    return parser


SERVICE_COMMANDS = ("serve", "worker")
"""The commands that refuse to start on a data store of a format this release does not read."""


def check_store_format(settings: Settings) -> None:
    """Stops ``serve`` and ``worker`` before they start on a store of a newer format (a message naming
    it and what to run), notes an older one, and marks a new store with this release's format
    (``collation.store.migration``)."""
    from collation.store.location import open_store
    from collation.store.migration import require_readable, upgrade_note

    store = open_store(settings)
    note = upgrade_note(store, require_readable(store))
    if note is not None:
        print(f"collate: note: {note}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    keep_freed_memory()  # for this whole process: every command here allocates large tensors over and over
    try:
        args.settings = Settings.from_env()  # the one place the command line reads COLLATION_*
        if args.command in SERVICE_COMMANDS:
            check_store_format(args.settings)
        return args.handler(args)
    except CollationError as e:
        print(f"collate: error: {e.message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("collate: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
