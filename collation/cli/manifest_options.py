"""Manifests on the command line: options of ``collate match`` and the ``collate regions`` command."""

from __future__ import annotations

import argparse
import sys

from collation.core.settings import Settings, default_cache_dir
from collation.engine.illustrations import Illustration
from collation.iiif.regions import RegionSelector
from collation.iiif.sources import format_regions_report, list_regions, load_manuscript_regions
from collation.net.http import Fetcher, fetcher_for


def add_manifest_options(parser: argparse.ArgumentParser) -> None:
    """Options that say how manifests are read and fetched."""
    group = parser.add_argument_group("IIIF manifests")
    group.add_argument(
        "--selector",
        metavar="SPEC",
        help="which annotations are illustrations, e.g. motivation=tagging,tag=illustration "
        "(default: every non-painting annotation with a region)",
    )
    group.add_argument("--whole-canvases", action="store_true", help="use every canvas whole as an illustration")
    group.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="fetch from HOST even if it resolves to a private or loopback address "
        "(also $COLLATION_ALLOWED_HOSTS, comma-separated)",
    )
    group.add_argument(
        "--cache-dir",
        help="on-disk cache of fetched documents and images "
        "(default $COLLATION_IIIF_CACHE_DIR or ~/.cache/image-collation/iiif)",
    )


def make_fetcher(args: argparse.Namespace) -> Fetcher:
    """A polite, cached fetcher configured from the options and the environment (``Settings``).

    The cache folder is ``--cache-dir``, else ``COLLATION_IIIF_CACHE_DIR``, else the XDG default.
    """
    settings = Settings.from_env()
    cache_dir = args.cache_dir or settings.iiif.cache_dir or default_cache_dir()
    return fetcher_for(settings, allowed_hosts=args.allow_host, cache_dir=cache_dir)


def _detector(args: argparse.Namespace):
    """The detector that ``--model``/``--min-score`` (where the command has them) or the settings ask for."""
    from collation.engine.detection import load_detector

    settings = getattr(args, "settings", None) or Settings.from_env()
    model = getattr(args, "model", None) or settings.detector_model
    min_score = getattr(args, "min_score", None)
    return load_detector(model, min_score=settings.detector_min_score if min_score is None else min_score)


def _detect_flag(args: argparse.Namespace) -> bool | None:
    """``--detect``: True; ``--no-detect``: False; neither: detect when there are no region annotations."""
    if getattr(args, "no_detect", False):
        return False
    return True if getattr(args, "detect", False) else None


def manifest_illustrations(source: str, args: argparse.Namespace) -> list[Illustration]:
    """The illustrations of a manifest, fetched at the size the features need; problems go to stderr.
    A manifest without region annotations is detected (``--detect``: even with annotations)."""
    detect = None if args.whole_canvases else _detect_flag(args)
    result = load_manuscript_regions(
        source,
        fetcher=make_fetcher(args),
        selector=RegionSelector.parse(args.selector),
        whole_canvases=args.whole_canvases,
        detect=detect,
        detector=_detector(args) if detect is not False else None,
    )
    if result.note:
        print(f"collate: {source}: {result.note}", file=sys.stderr)
    for problem in result.problems:
        print(f"collate: warning: {source}: {problem.message}", file=sys.stderr)
    return [
        Illustration(
            f"{region.canvas_id}#xywh={','.join(map(str, region.xywh))}",
            region.label,
            image,
            {
                "manifest": result.manifest.id,
                "canvas": region.canvas_id,
                "xywh": list(region.xywh),
                "region_index": region.index,
            },
        )
        for region, image in zip(result.regions, result.images, strict=True)
    ]


def cmd_regions(args: argparse.Namespace) -> int:
    manifest, regions, problems = list_regions(
        args.manifest,
        fetcher=make_fetcher(args),
        selector=RegionSelector.parse(args.selector),
        whole_canvases=args.whole_canvases,
    )
    sys.stdout.write(format_regions_report(manifest, regions, problems))
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    import json

    from collation.iiif.dryrun import format_inspection, inspect_manifest

    detect = None if args.whole_canvases else _detect_flag(args)
    report = inspect_manifest(
        args.manifest,
        fetcher=make_fetcher(args),
        selector=RegionSelector.parse(args.selector),
        whole_canvases=args.whole_canvases,
        max_info=args.max_info,
        detect=detect,
        detector=_detector(args) if detect is not False else None,
    )
    text = json.dumps(report, indent=2, ensure_ascii=False) + "\n" if args.json else format_inspection(report)
    sys.stdout.write(text)
    return 0


def add_inspect_command(subparsers: argparse._SubParsersAction) -> None:
    inspect = subparsers.add_parser(
        "inspect", help="dry run: what a IIIF manifest holds and which regions a collation would use"
    )
    inspect.add_argument("manifest", help="manifest URL or local file")
    inspect.add_argument("--json", action="store_true", help="print the report as JSON")
    inspect.add_argument(
        "--max-info",
        type=int,
        default=20,
        metavar="N",
        help="read the info.json of at most N image services (default 20; 0: none)",
    )
    found = inspect.add_mutually_exclusive_group()
    found.add_argument(
        "--detect",
        action="store_true",
        help="show the illustrations the detector finds even when the manifest has annotations",
    )
    found.add_argument(
        "--no-detect", action="store_true", help="do not detect illustrations on a manifest without region annotations"
    )
    add_manifest_options(inspect)
    inspect.set_defaults(handler=cmd_inspect)


def add_regions_command(subparsers: argparse._SubParsersAction) -> None:
    regions = subparsers.add_parser("regions", help="list the illustration regions a IIIF manifest carries")
    regions.add_argument("manifest", help="manifest URL or local file")
    add_manifest_options(regions)
    regions.set_defaults(handler=cmd_regions)
