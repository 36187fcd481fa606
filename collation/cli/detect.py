"""``collate detect IMAGE_OR_FOLDER...``: print the illustrations found on whole folio images.

Also the options that ``collate match --detect`` shares (``--model``, ``--min-score``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from collation.core.errors import InputError


def add_detector_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        metavar="PATH",
        help="TorchScript detector (default: $COLLATION_DETECTOR_MODEL, else the built-in one)",
    )
    parser.add_argument(
        "--min-score", type=float, help="drop boxes scoring lower (default: $COLLATION_DETECTOR_MIN_SCORE)"
    )


def detector_from_args(args: argparse.Namespace):
    """The detector and minimum score that the flags, else the settings, ask for."""
    from collation.engine.detection import load_detector

    settings = args.settings
    model = args.model if args.model is not None else settings.detector_model
    min_score = args.min_score if args.min_score is not None else settings.detector_min_score
    return load_detector(model, min_score=min_score), min_score


def image_paths(values: list[str]) -> list[Path]:
    """Files as given; folders expand to their images in natural order."""
    from collation.engine.illustrations import list_images

    paths: list[Path] = []
    for value in values:
        path = Path(value)
        if path.is_dir():
            paths += list_images(path)
        elif path.is_file():
            paths.append(path)
        else:
            raise InputError(f"{path}: no such image or folder")
    return paths


def cmd_detect(args: argparse.Namespace) -> int:
    from collation.engine.detection import detect_illustrations
    from collation.engine.illustrations import open_image

    detector, min_score = detector_from_args(args)
    pages = []
    for path in image_paths(args.images):
        image = open_image(path)
        found = detect_illustrations(image, detector=detector, min_score=min_score)
        pages.append(
            {
                "image": str(path),
                "width": image.width,
                "height": image.height,
                "detector": detector.name,
                "illustrations": [{"xywh": list(d.xywh), "score": d.score, "label": d.label} for d in found],
            }
        )
        if not args.json:
            boxes = "  ".join(f"{','.join(map(str, d.xywh))} ({d.score:.2f})" for d in found) or "-"
            print(f"{path}\t{len(found)}\t{boxes}")
    if args.json:
        print(json.dumps(pages if len(pages) != 1 else pages[0], indent=1))
    return 0


def add_detect_command(sub) -> None:
    detect = sub.add_parser("detect", help="find the illustrations on whole folio images")
    detect.add_argument(
        "images", nargs="+", metavar="IMAGE_OR_FOLDER", help="folio images, or folders of them (natural order)"
    )
    detect.add_argument(
        "--json",
        action="store_true",
        help="print JSON: per image its size and illustrations (xywh in its pixels, score, label)",
    )
    add_detector_options(detect)
    detect.set_defaults(handler=cmd_detect)
