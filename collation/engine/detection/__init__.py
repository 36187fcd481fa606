"""Illustrations on whole folios: boxes of the miniatures, drawings and diagrams of a page image.

Two detectors share one interface (``Detector``): ``BuiltinDetector``, image analysis that needs
nothing but the image (docs/detection.md), and ``ModelDetector``, a TorchScript file that a library
or a lab already has (e.g. an exported YOLO fine-tuned on manuscripts; the file contract is in
``collation.engine.detection.torchscript``). ``load_detector(path_or_none)`` picks one; ``detect_illustrations``
runs it on one image and returns boxes in that image's pixel frame, in reading order.

    from collation.engine.detection import detect_illustrations, load_detector
    detector = load_detector(settings.detector_model)         # None: the built-in one
    for d in detect_illustrations(folio, detector=detector):  # folio: PIL.Image.Image
        print(d.xywh, d.score, d.label)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Protocol, runtime_checkable

from PIL import Image

from collation.core.errors import InputError
from collation.engine.detection import builtin

DEFAULT_MIN_SCORE = 0.5
"""Boxes scoring lower are dropped (both detectors score in 0..1)."""


@dataclass(frozen=True)
class Detection:
    """One illustration found on an image.

    Attributes:
        xywh: (x, y, w, h) in the pixels of the image given to the detector, integers, inside it.
        score: confidence in 0..1.
        label: what was found ("illustration" for the built-in detector; a model's class name).
    """

    xywh: tuple[int, int, int, int]
    score: float
    label: str = "illustration"


@runtime_checkable
class Detector(Protocol):
    """Finds illustrations on one page image; boxes in its pixel frame, any order."""

    name: str

    def __call__(self, image: Image.Image) -> list[Detection]: ...


class BuiltinDetector:
    """Image analysis: dense or coloured regions of the page that are not script (``builtin``).

    ``conf`` overrides ``builtin.default_conf`` by key (unknown keys are an error).
    """

    name = "builtin"

    def __init__(self, **conf):
        unknown = sorted(set(conf) - set(builtin.default_conf))
        if unknown:
            raise ValueError(f"unknown settings of the built-in detector: {unknown}")
        self.conf = SimpleNamespace(**{**builtin.default_conf, **conf})

    def __call__(self, image: Image.Image) -> list[Detection]:
        return [
            Detection(tuple(int(v) for v in xywh), round(float(score), 4))
            for xywh, score in builtin.detect(image, self.conf)
        ]


def load_detector(model: str | Path | None = None, *, min_score: float | None = None) -> Detector:
    """The built-in detector when ``model`` is None or empty, else ``ModelDetector(model)``.

    Raises:
        InputError: the model file is missing or is not a usable TorchScript detector.
    """
    if model is None or str(model) == "":
        return BuiltinDetector() if min_score is None else BuiltinDetector(min_score=min_score)
    from collation.engine.detection.torchscript import ModelDetector

    return ModelDetector(model, min_score=DEFAULT_MIN_SCORE if min_score is None else min_score)


def reading_order(detections: Sequence[Detection]) -> list[Detection]:
    """Top to bottom by rows, left to right within a row (boxes whose vertical extents overlap by
    half the shorter one share a row)."""
    rest = sorted(detections, key=lambda d: (d.xywh[1], d.xywh[0]))
    ordered: list[Detection] = []
    while rest:
        first = rest[0]
        y0, h0 = first.xywh[1], first.xywh[3]
        row = [d for d in rest if min(y0 + h0, d.xywh[1] + d.xywh[3]) - max(y0, d.xywh[1]) >= 0.5 * min(h0, d.xywh[3])]
        ordered += sorted(row, key=lambda d: d.xywh[0])
        rest = [d for d in rest if d not in row]
    return ordered


def detect_illustrations(
    image: Image.Image, *, detector: Detector | None = None, min_score: float | None = None
) -> list[Detection]:
    """Illustrations on one page image, in reading order, boxes clipped to the image.

    Args:
        image: the page (any mode; read as RGB).
        detector: default: the built-in one.
        min_score: drop boxes scoring lower (default: keep what the detector keeps).
    """
    if not isinstance(image, Image.Image):
        raise InputError(f"detection needs a PIL image, got {type(image).__name__}")
    found = (detector or BuiltinDetector())(image)
    kept = []
    for d in found:
        x, y, w, h = d.xywh
        x0, y0 = max(0, min(x, image.width)), max(0, min(y, image.height))
        x1, y1 = max(0, min(x + w, image.width)), max(0, min(y + h, image.height))
        if x1 - x0 < 2 or y1 - y0 < 2 or (min_score is not None and d.score < min_score):
            continue
        kept.append(Detection((x0, y0, x1 - x0, y1 - y0), d.score, d.label))
    return reading_order(kept)
