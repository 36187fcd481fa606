"""The shared Physiologus data of the detection benchmarks: where it is, and the authors' boxes on its folios."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from collation.engine.illustrations import list_images  # noqa: E402


def data_dir() -> Path:
    return Path(os.environ.get("COLLATION_TEST_DATA", REPO.parent / "shared" / "data" / "physiologus"))


def truth(root: Path, alias: str) -> dict[str, list[tuple[int, int, int, int]]]:
    """Folio file name -> VIA boxes, for every folio image present (empty list: no illustration)."""
    via = json.loads((root / "annotations" / f"{alias}.via.json").read_text())["_via_img_metadata"]
    boxes = {
        e["filename"]: [
            tuple(int(r["shape_attributes"][k]) for k in ("x", "y", "width", "height")) for r in e["regions"]
        ]
        for e in via.values()
    }
    return {p.name: boxes.get(p.name, []) for p in list_images(root / alias / "folios")}
