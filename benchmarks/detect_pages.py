"""Pages composed for judging illustration detection on pages it was not tuned on (issue 21).

A page is a real folio of script (one without illustrations) from the shared Physiologus data, with
one or two drawings put on it (above, below or beside the script, on a blank of paper colour) and the
things real scans hold: tinted patches of paper, stains and foxing, a gutter or a binding strip,
a colour bar, ruling, a slight rotation. The drawings are of four kinds:

- ``filled``: a crop of a real miniature (an authors' VIA box);
- ``line``: the same miniature as an ink-only line drawing (its edge map, in brown ink);
- ``touching``: a filled one whose box touches the script (no blank between them);
- ``tinted``: a filled or line one lying on a ground of differently tinted paper.

Two parts that share nothing: the ``tuned`` part (seeds 0.., P2's folios and miniatures) is the one
the detector was developed on; the ``set-aside`` part (seeds 100000.., P3's) is measured, never tuned
on. Everything is drawn from ``numpy.random.default_rng(seed)``, so a page is the same on every run.

    .venv/bin/python benchmarks/detect_pages.py tuned /tmp/pages/tuned --pages 50       # PNGs + truth.json
    .venv/bin/python benchmarks/bench_detect.py --generated set-aside --pages 50        # make and measure

The pages are made from the shared folios: write them to a temporary folder, never commit them.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

sys.path.insert(0, str(Path(__file__).resolve().parent))

from physiologus import data_dir, truth

PARTS = {"tuned": ("P2", 0), "set-aside": ("P3", 100_000)}
"""part -> (manuscript whose folios and miniatures it uses, first seed)."""
KINDS = ("filled", "line", "touching", "tinted")
INK = np.array([70, 45, 30], dtype=np.float32)


@dataclass(frozen=True)
class Sources:
    """The folios of script and the miniatures (folio path, VIA box) of one manuscript."""

    script: list[Path]
    miniatures: list[tuple[Path, tuple[int, int, int, int]]]


def sources(root: Path, alias: str) -> Sources:
    """Folios with no VIA box (pages only, not covers: their name has no 'piatto' or 'risguardia'), and boxes."""
    folios = truth(root, alias)
    folder = root / alias / "folios"
    script = [folder / n for n, b in folios.items() if not b and not any(s in n for s in ("piatto", "risguard"))]
    n = len(script)
    script = script[n // 8 : n - n // 8]  # the first and last leaves are covers and flyleaves
    miniatures = [(folder / n, box) for n, boxes in folios.items() for box in boxes]
    return Sources(script, miniatures)


# -- the things drawn on a page: each takes the page (PIL RGB) and draws in place --------------------


def paper_of(image: Image.Image, box: tuple[int, int, int, int]) -> np.ndarray:
    """(3,) float32 the paper's colour within box (x0, y0, x1, y1): the median of its lightest half."""
    a = np.asarray(image.crop(box), dtype=np.float32).reshape(-1, 3)
    light = a.mean(axis=1)
    return np.median(a[light >= np.median(light)], axis=0)


def blank(image: Image.Image, box, paper: np.ndarray, rng) -> None:
    """Cover box (x0, y0, x1, y1) with paper: its colour with a little grain."""
    w, h = box[2] - box[0], box[3] - box[1]
    grain = rng.normal(0, 2.5, (h, w, 1)).astype(np.float32)
    image.paste(Image.fromarray(np.clip(paper + grain, 0, 255).astype(np.uint8)), box[:2])


def line_drawing(miniature: Image.Image, paper: np.ndarray) -> Image.Image:
    """An ink-only line drawing of a miniature: its strong edges, in brown ink on the paper."""
    grey = miniature.convert("L").filter(ImageFilter.GaussianBlur(1.2))
    edges = np.array(grey.filter(ImageFilter.FIND_EDGES), dtype=np.float32)
    # PIL leaves the outermost pixels unfiltered (their grey values, far above any edge): without this,
    # every line drawing had a dark frame, a cue real pen drawings do not give
    edges[[0, -1], :] = 0
    edges[:, [0, -1]] = 0
    ink = edges > np.percentile(edges, 88)
    ink = np.asarray(Image.fromarray(ink).filter(ImageFilter.MaxFilter(3))) > 0
    out = np.where(ink[..., None], INK, paper)
    return Image.fromarray(out.astype(np.uint8))


def soft_blob(size: tuple[int, int], rng, blur: float) -> np.ndarray:
    """(h, w) float32 0..1: an irregular soft-edged blob filling most of the size (w, h)."""
    w, h = size
    mask = Image.new("L", size, 0)
    d = ImageDraw.Draw(mask)
    for _ in range(4):
        cx, cy = rng.uniform(0.3, 0.7) * w, rng.uniform(0.3, 0.7) * h
        rx, ry = rng.uniform(0.2, 0.35) * w, rng.uniform(0.2, 0.35) * h
        d.ellipse([cx - rx, cy - ry, cx + rx, cy + ry], fill=255)
    return np.asarray(mask.filter(ImageFilter.GaussianBlur(blur)), dtype=np.float32) / 255.0


def tint(image: Image.Image, box, factor: np.ndarray, alpha: np.ndarray | float) -> None:
    """Dye box (x0, y0, x1, y1): multiply its colours by factor (3,) where alpha (a float or an (h, w)
    map) is 1, as a tint of the paper does; ink and paint under it stay visible, darkened alike."""
    region = np.asarray(image.crop(box), dtype=np.float32)
    a = alpha if np.isscalar(alpha) else alpha[..., None]
    image.paste(Image.fromarray(np.clip(region * (1 - a + a * factor), 0, 255).astype(np.uint8)), box[:2])


def tinted_patch(image: Image.Image, box, paper: np.ndarray, rng) -> None:
    """A patch of differently tinted paper (darker, yellower or greyer), smooth, with soft edges."""
    shift = rng.choice([np.array([-30, -30, -45]), np.array([-25, -20, -10]), np.array([-20, -30, -50])])
    w, h = box[2] - box[0], box[3] - box[1]
    edge = np.minimum.outer(np.minimum(np.arange(h), np.arange(h)[::-1]), np.minimum(np.arange(w), np.arange(w)[::-1]))
    alpha = np.clip(edge / 12.0, 0, 1) * rng.uniform(0.7, 1.0)
    tint(image, box, np.clip(paper + shift * rng.uniform(0.8, 1.3), 0, 255) / np.maximum(paper, 1), alpha)


def stain(image: Image.Image, box, paper: np.ndarray, rng) -> None:
    """A water or grease stain: a soft brownish blob with a darker rim."""
    w, h = box[2] - box[0], box[3] - box[1]
    blob = soft_blob((w, h), rng, blur=max(4, min(w, h) / 12))
    rim = np.clip(blob * (1 - blob) * 4, 0, 1)
    colour = np.clip(paper - np.array([45, 55, 75]) * rng.uniform(0.7, 1.2), 0, 255)
    tint(image, box, colour / np.maximum(paper, 1), 0.45 * blob + 0.25 * rim)


def foxing(image: Image.Image, box, rng, n: int = 25) -> None:
    """Small brown spots scattered over box (x0, y0, x1, y1)."""
    d = ImageDraw.Draw(image)
    for _ in range(n):
        x, y, r = rng.uniform(box[0], box[2]), rng.uniform(box[1], box[3]), rng.uniform(1.5, 5)
        c = tuple(int(v) for v in rng.integers([140, 100, 60], [190, 140, 100]))
        d.ellipse([x - r, y - r, x + r, y + r], fill=c)


def binding(image: Image.Image, side: str, width: int, rng) -> None:
    """A binding strip (leather or cloth, textured) or a dark gutter along the left or right side."""
    w, h = image.size
    x0 = 0 if side == "left" else w - width
    colour = rng.choice([np.array([95, 60, 40]), np.array([60, 45, 35]), np.array([140, 110, 80])])
    texture = rng.normal(0, 10, (h, width, 1)).astype(np.float32)
    shade = np.linspace(0.7, 1.0, width) if side == "left" else np.linspace(1.0, 0.7, width)
    shade = shade[None, :, None]
    strip = np.clip(colour * shade + texture, 0, 255).astype(np.uint8)
    image.paste(Image.fromarray(strip), (x0, 0))


def colour_bar(image: Image.Image, y: int, rng) -> None:
    """A row of colour patches (a scanning target) across the bottom or top of the image."""
    d = ImageDraw.Draw(image)
    w = image.width
    n, side = 10, max(12, image.width // 28)
    x = int(rng.uniform(0.05, 0.3) * w)
    for i in range(n):
        c = tuple(int(v) for v in rng.integers(0, 256, 3)) if i % 3 else (255, 255, 255)
        d.rectangle([x + i * side, y, x + (i + 1) * side - 1, y + side], fill=c)


def ruling(image: Image.Image, box, rng) -> None:
    """Faint horizontal ruling lines over box (x0, y0, x1, y1)."""
    d = ImageDraw.Draw(image)
    step = int(rng.integers(22, 32))
    for y in range(box[1], box[3], step):
        d.line([box[0], y, box[2], y], fill=(190, 175, 150), width=1)


# -- composing a page ---------------------------------------------------------------------------------


def place(leaf: tuple[int, int, int, int], n: int, rng) -> list[tuple[str, tuple[int, int, int, int]]]:
    """Where the drawings go within the leaf (x0, y0, x1, y1): (position, box) for 1 or 2 drawings."""
    x0, y0, x1, y1 = leaf
    lw, lh = x1 - x0, y1 - y0
    out = []
    positions = rng.choice(["above", "below", "beside"], size=n, replace=False) if n < 3 else []
    for where in sorted(positions, key=["above", "beside", "below"].index):
        if where == "beside":  # within 0.33-0.62 of the leaf's height: clear of one above or below
            w, h = int(lw * rng.uniform(0.3, 0.45)), int(lh * rng.uniform(0.15, 0.25))
            left = rng.random() < 0.5
            bx = x0 + int(lw * 0.05) if left else x1 - w - int(lw * 0.05)
            by = y0 + int(lh * rng.uniform(0.455, 0.495)) - h // 2
        else:
            w, h = int(lw * rng.uniform(0.3, 0.8)), int(lh * rng.uniform(0.15, 0.25 if n == 2 else 0.4))
            bx = x0 + int(rng.uniform(0.05, 0.95) * (lw - w))
            by = y0 + int(lh * 0.04) if where == "above" else y1 - h - int(lh * 0.05)
        out.append((str(where), (bx, by, bx + w, by + h)))
    return out


def make_page(seed: int, src: Sources) -> tuple[Image.Image, list[dict]]:
    """A page and its truth, from seed alone: [{"xywh": (x, y, w, h), "kind": str, "where": str, "near": str
    or None, "page": [str]}], with what lies near each drawing and the page's conditions (``degrade``)."""
    rng = np.random.default_rng(seed)
    image = Image.open(src.script[int(rng.integers(len(src.script)))]).convert("RGB")
    w, h = image.size
    leaf = (int(w * 0.1), int(h * 0.08), int(w * 0.9), int(h * 0.9))  # inside the leaf, clear of the backdrop
    paper = paper_of(image, leaf)
    if rng.random() < 0.3:
        ruling(image, leaf, rng)
    truths = []
    for where, box in place(leaf, int(rng.integers(1, 3)), rng):
        kind = str(rng.choice(KINDS))
        path, (mx, my, mw, mh) = src.miniatures[int(rng.integers(len(src.miniatures)))]
        bw, bh = box[2] - box[0], box[3] - box[1]
        ratio = mw / mh
        bw, bh = (bw, int(bw / ratio)) if bw / bh < ratio else (int(bh * ratio), bh)
        bw, bh = max(bw, 60), max(bh, 60)
        box = (box[0], box[1], box[0] + bw, box[1] + bh)
        art = Image.open(path).convert("RGB").crop((mx, my, mx + mw, my + mh)).resize((bw, bh), Image.BILINEAR)
        inner = rng.random() < 0.5
        if kind == "line" or (kind == "tinted" and inner):
            art = line_drawing(art, paper)
        pad = 0 if kind == "touching" else int(rng.integers(10, 30))
        blank(image, (box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad), paper, rng)
        if kind == "tinted":
            m = int(rng.integers(15, 60))
            tinted_patch(image, (box[0] - m, box[1] - m, box[2] + m, box[3] + m), paper, rng)
            art = Image.fromarray(np.minimum(np.asarray(art), np.asarray(image.crop(box))))  # ink over the tint
        image.paste(art, box[:2])
        truths.append({"xywh": (box[0], box[1], bw, bh), "kind": kind, "where": where})
    near, page = degrade(image, [t["xywh"] for t in truths], paper, rng)
    turned = rng.random() < 0.4
    if turned:
        angle = float(rng.uniform(-2.0, 2.0))
        image, truths = rotated(image, truths, angle)
    conditions = page + ["turned"] * turned
    return image, [{**t, "near": n, "page": conditions} for t, n in zip(truths, near, strict=True)]


def degrade(image: Image.Image, boxes: list, paper: np.ndarray, rng) -> tuple[list, list[str]]:
    """Tinted patches and stains near the drawings, foxing, a gutter or binding strip, a colour bar.
    Returns what was put near each drawing ("patch", "stain" or None) and on the page ("large tint",
    "foxing", "binding", "colour bar"): the conditions the figures are broken down by."""
    w, h = image.size
    near, page = [], []
    for x, y, bw, bh in boxes:
        r = rng.random()
        side = rng.choice(["above", "below", "left", "right"])
        sw, sh = int(bw * rng.uniform(0.3, 0.9)), int(bh * rng.uniform(0.2, 0.6))
        gap = int(rng.integers(0, 12))
        sx = {"left": x - sw - gap, "right": x + bw + gap}.get(side, x + int(rng.uniform(0, 0.5) * bw))
        sy = {"above": y - sh - gap, "below": y + bh + gap}.get(side, y + int(rng.uniform(0, 0.5) * bh))
        sx, sy = int(np.clip(sx, 0, w - sw - 1)), int(np.clip(sy, 0, h - sh - 1))
        thing = "patch" if r < 0.35 else "stain" if r < 0.65 else None
        if thing is not None:
            (tinted_patch if thing == "patch" else stain)(image, (sx, sy, sx + sw, sy + sh), paper, rng)
        near.append(thing)
    if rng.random() < 0.25:  # a large tinted area of the page
        tw, th = int(w * rng.uniform(0.4, 0.7)), int(h * rng.uniform(0.3, 0.6))
        tx, ty = int(rng.uniform(0.05, 0.5) * w), int(rng.uniform(0.05, 0.4) * h)
        tinted_patch(image, (tx, ty, min(w, tx + tw), min(h, ty + th)), paper, rng)
        page.append("large tint")
    if rng.random() < 0.5:
        foxing(image, (int(w * 0.1), int(h * 0.1), int(w * 0.9), int(h * 0.9)), rng)
        page.append("foxing")
    if rng.random() < 0.5:
        left = min(x for x, *_ in boxes) < w - max(x + bw for x, _, bw, _ in boxes)
        binding(image, "left" if left else "right", int(w * rng.uniform(0.03, 0.08)), rng)
        page.append("binding")
    if rng.random() < 0.3:
        colour_bar(image, int(h * 0.95) if rng.random() < 0.5 else int(h * 0.01), rng)
        page.append("colour bar")
    return near, page


def rotated(image: Image.Image, truths: list[dict], angle: float) -> tuple[Image.Image, list[dict]]:
    """The page turned by angle degrees about its centre (corners filled with the backdrop's dark grey),
    and each true box replaced by the box around its turned corners."""
    w, h = image.size
    out = image.rotate(angle, resample=Image.BILINEAR, fillcolor=(40, 40, 40))
    t = np.deg2rad(angle)
    c, s = np.cos(t), np.sin(t)
    moved = []
    for tr in truths:
        x, y, bw, bh = tr["xywh"]
        corners = np.array([[x, y], [x + bw, y], [x, y + bh], [x + bw, y + bh]], dtype=np.float64) - (w / 2, h / 2)
        turned = np.stack([c * corners[:, 0] + s * corners[:, 1], -s * corners[:, 0] + c * corners[:, 1]], 1)
        turned += (w / 2, h / 2)
        x0, y0 = turned.min(0)
        x1, y1 = turned.max(0)
        moved.append({**tr, "xywh": (int(x0), int(y0), int(x1 - x0), int(y1 - y0))})
    return out, moved


def pages(part: str, n: int, root: Path | None = None):
    """Yield (name, image, truths) for the first n pages of a part ("tuned" or "set-aside")."""
    alias, first = PARTS[part]
    src = sources(root or data_dir(), alias)
    for seed in range(first, first + n):
        image, truths = make_page(seed, src)
        yield f"{part}-{seed}.png", image, truths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=sorted(PARTS))
    parser.add_argument("out", type=Path, help="a temporary folder (never commit these pages)")
    parser.add_argument("--pages", type=int, default=50)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    record = {}
    for name, image, truths in pages(args.part, args.pages):
        image.save(args.out / name)
        record[name] = truths
    (args.out / "truth.json").write_text(json.dumps(record, indent=1))
    print(f"{len(record)} pages, {sum(map(len, record.values()))} drawings in {args.out}")


if __name__ == "__main__":
    main()
