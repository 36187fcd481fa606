"""Illustrations from local files: a folder of crops, or a VIA annotation file with its folios.

Both keep the order the paper's indices rely on (B.2): natural sort of file names for a folder,
VIA entries in file order then regions in list order for an annotation file.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from collation.core.errors import InputError

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp")
"""The reference reads jpg, tif, png and bmp only and silently skips .jpeg and .tiff; we read all six."""

MAX_IMAGE_PIXELS = 20_000 * 20_000
"""Larger images are refused rather than decoded (decompression bombs)."""


@dataclass
class Illustration:
    """One illustration: its image and where it came from.

    Attributes:
        id: stable identifier (file name, or folio name plus region position, or canvas id plus xywh).
        label: for display.
        image: the RGB pixels of the illustration.
        source: provenance for outputs, e.g. {"file": ...} or {"folio": ..., "xywh": [x, y, w, h]}.
    """

    id: str
    label: str
    image: Image.Image
    source: dict = field(default_factory=dict)


def natural_key(text: str) -> list:
    """Digit runs compare as integers, other text lower-cased: "f2" < "f10" (B.2)."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", text)]


def open_image(path: Path) -> Image.Image:
    """Opens and decodes an image fully, as RGB; unreadable files are an input error naming the file."""
    try:
        with Image.open(path) as im:
            if im.width * im.height > MAX_IMAGE_PIXELS:
                raise InputError(f"{path}: image of {im.width} x {im.height} pixels is too large")
            return im.convert("RGB")
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError, ValueError) as e:
        raise InputError(f"{path}: not a readable image ({e.__class__.__name__})") from None


def list_images(folder: Path) -> list[Path]:
    """Image files directly inside ``folder``, in natural order of their names."""
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder")
    files = [p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS]
    if not files:
        raise InputError(f"{folder}: no images ({', '.join(IMAGE_EXTENSIONS)}) in this folder")
    return sorted(files, key=lambda p: natural_key(p.name))


def folder_illustrations(folder: str | Path) -> list[Illustration]:
    """Every image of a folder of crops; its position in natural order is its index."""
    return [Illustration(p.name, p.stem, open_image(p), {"file": str(p)}) for p in list_images(Path(folder))]


def is_via_file(path: str | Path) -> bool:
    """A VIA 2 project file: JSON with ``_via_img_metadata``."""
    path = Path(path)
    if path.suffix.lower() != ".json" or not path.is_file():
        return False
    try:
        return "_via_img_metadata" in json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, TypeError):
        return False


def read_via_boxes(via_file: str | Path) -> list[tuple[str, tuple[int, int, int, int]]]:
    """(folio file name, (x, y, w, h)) of every rectangle, entries in file order, regions in list order."""
    via_file = Path(via_file)
    try:
        data = json.loads(via_file.read_text())
        entries = data["_via_img_metadata"].values()
        boxes = []
        for entry in entries:
            for region in entry.get("regions", []):
                shape = region["shape_attributes"]
                if shape.get("name") != "rect":
                    raise InputError(
                        f"{via_file}: {entry['filename']} has a {shape.get('name')!r} region; "
                        "only rectangles are supported"
                    )
                boxes.append((entry["filename"], tuple(int(shape[k]) for k in ("x", "y", "width", "height"))))
        return boxes
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{via_file}: not a readable VIA file ({e})") from None
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise InputError(f"{via_file}: not a VIA 2 project file (missing or bad {e})") from None


def crop_box(folio: Image.Image, box: tuple[int, int, int, int]) -> Image.Image:
    """Cuts (x, y, w, h) as the authors did: (x, y, x + w, y + h), clipped to the folio."""
    x, y, w, h = box
    left, top = max(x, 0), max(y, 0)
    right, bottom = min(x + w, folio.width - 1), min(y + h, folio.height)
    if right <= left or bottom <= top:
        raise InputError(f"box {box} lies outside the {folio.width} x {folio.height} folio")
    return folio.crop((left, top, right, bottom))


def via_illustrations(
    via_file: str | Path, folios: str | Path | None = None, *, skip_missing: bool = False
) -> list[Illustration]:
    """The illustrations a VIA file marks on the folio images in ``folios`` (default: its folder).

    A region whose folio image is absent is an error, unless ``skip_missing``: then it is left out
    and the indices of later regions shift down, so ground truth only applies when the folios present
    are a prefix of the file (as in the shared Physiologus data).
    """
    via_file = Path(via_file)
    folder = Path(folios) if folios else via_file.parent
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folio folder")
    illustrations, cache, position = [], {}, {}
    for name, box in read_via_boxes(via_file):
        r = position[name] = position.get(name, -1) + 1
        path = folder / name
        if not path.is_file():
            if skip_missing:
                continue
            raise InputError(f"{path}: folio of a VIA region is missing (use --skip-missing-folios to leave it out)")
        if name not in cache:
            cache = {name: open_image(path)}  # folios come in order: keep only the current one
        stem = Path(name).stem
        crop = crop_box(cache[name], box)
        illustrations.append(Illustration(f"{stem}_{r}", f"{stem} #{r}", crop, {"folio": name, "xywh": list(box)}))
    if not illustrations:
        raise InputError(f"{via_file}: no region with its folio in {folder}")
    return illustrations


def detected_illustrations(
    folios: list[str | Path], *, detector=None, min_score: float | None = None
) -> list[Illustration]:
    """Every illustration that ``detector`` finds on whole folio images: folios in the order given, then
    reading order on each folio (``collation.engine.detection.detect_illustrations``)."""
    from collation.engine.detection import detect_illustrations

    illustrations = []
    for path in map(Path, folios):
        folio = open_image(path)
        for r, d in enumerate(detect_illustrations(folio, detector=detector, min_score=min_score)):
            illustrations.append(
                Illustration(
                    f"{path.stem}_{r}",
                    f"{path.stem} #{r}",
                    crop_box(folio, d.xywh),
                    {"folio": path.name, "xywh": list(d.xywh), "score": d.score},
                )
            )
    return illustrations


def image_digest(image: Image.Image) -> str:
    """A content hash of an image's pixels, to key cached features."""
    rgb = image.convert("RGB")
    h = hashlib.sha256(f"{rgb.size}".encode())
    h.update(rgb.tobytes())
    return h.hexdigest()
