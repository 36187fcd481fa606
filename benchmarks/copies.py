"""Synthetic manuscript pairs for the benchmarks, from the shared Physiologus data (never committed).

A pair of "manuscripts" of n0 and n1 illustrations: G shared subjects, each shown in the first
manuscript and as a *copy* in the second, and distractors that appear on one side only. The second
manuscript keeps the first one's order up to local swaps (copyists follow the text). G is 73% of
the second manuscript, as in De Materia Medica D1-D2 (295 of 405).

Subjects are, in this order of preference:
- the 15 real P2 illustrations whose folios are present, copied from P3's real copy of each (a real
  copyist's change, then the synthetic one);
- their quadrants (2 x 2 cells of the P2 drawing, copied from the same cell of the P3 drawing): parts
  of drawings look like other drawings, as the plants of a herbal do;
- crops of folio pages (disjoint cells of a 3 x 3 grid per folio): script, initials, margins; outside
  ``moderate`` never over an annotated illustration (since issue 38's fourth round: before, a crop of a
  subject's own drawing could beat its copy), and only from the page, not from what surrounds it in the
  photograph (since the fifth round: before, crops of the background, the book's edge and the library's
  footer were copies of each other).

Difficulties (``DIFFICULTIES``), each a restyle applied to every copy:
- ``moderate``: the first scale benchmark's copyist (small affine warp, other colours, blur). Copies
  move by a few percent of the frame.
- ``hard``: strong affine warps (scale, shear, rotation, translation), occluding patches, and in most
  copies a harsh change of style (line-art, posterization, recolouring, washed-out greys).
- ``paper``: ``hard`` at full strength, where unpruned S_trans's top-1 (.51-.58 at 200 x 100 and
  400 x 200) is near the paper's De Materia Medica D1-D2 (61.7%, Table 2); S_features falls lower
  there than on D1-D2 (.13-.19 against .354), while ``hard`` at 816 x 405 has D1-D2's S_features
  (.320) and a higher S_trans: the two bracket D1-D2 (docs/candidates.md).
- ``extreme``: ``hard``, and each copy also mirrored (30%), turned by up to ±30° and, one copy in two,
  cut by 25-45% on one side (issue 38's held-out sets, as the issue describes them).

Everything is drawn from one seeded generator, so a (size, difficulty, seed) triple is one data set.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter, ImageOps

from collation.engine.evaluation import load_ground_truth
from collation.engine.illustrations import read_via_boxes, via_illustrations
from collation.engine.transpositions import paper_colour

DATA = Path(
    os.environ.get("COLLATION_TEST_DATA")
    or Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "physiologus"
)
"""The shared Physiologus data: beside the repository, or ``$COLLATION_TEST_DATA`` (as the tests find it)."""
GT_SHARE = 295 / 405
"""Ground-truth pairs per illustration of the smaller manuscript in D1-D2."""

DIFFICULTIES = ("moderate", "hard", "paper", "extreme")
STRENGTH = {"hard": 0.7, "paper": 1.0, "extreme": 0.7}
"""Strength (0..1) of the hard restyle per difficulty (scales the warps, the patches and the share of
harsh styles); "paper" is the full strength, chosen on unpruned S_trans at 200 x 100, seed 0."""


def restyle_moderate(image: Image.Image, rng: np.random.Generator) -> Image.Image:
    """The first scale benchmark's copyist: a small random affine warp, other colours, softer strokes."""
    w, h = image.size
    a, e = rng.uniform(0.9, 1.1, 2)
    b, d = rng.uniform(-0.08, 0.08, 2)
    matrix = (a, b, rng.uniform(-0.05, 0.05) * w, d, e, rng.uniform(-0.05, 0.05) * h)
    paper = tuple(int(v) for v in np.asarray(image).reshape(-1, 3).mean(axis=0))
    warped = image.transform(
        image.size, Image.Transform.AFFINE, matrix, resample=Image.Resampling.BICUBIC, fillcolor=paper
    )
    pixels = np.asarray(warped, dtype=np.float32)
    mix = np.eye(3) * rng.uniform(0.7, 1.0) + rng.uniform(0, 0.2, (3, 3))
    tinted = np.clip(pixels @ mix.T + rng.uniform(-10, 20), 0, 255).astype(np.uint8)
    return Image.fromarray(tinted).filter(ImageFilter.GaussianBlur(float(rng.uniform(0.5, 1.5))))


def strong_affine(image: Image.Image, rng: np.random.Generator, strength: float) -> Image.Image:
    """Scale up to ±30%, shear up to ±0.3, rotation up to ±12° and shift up to ±12% of the frame, times strength."""
    w, h = image.size
    angle = np.deg2rad(rng.uniform(-12, 12) * strength)
    scale = 1 + rng.uniform(-0.3, 0.3, 2) * strength
    shear = rng.uniform(-0.3, 0.3) * strength
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    linear = rotation @ np.array([[scale[0], shear], [0.0, scale[1]]])
    centre = np.array([w / 2, h / 2])
    shift = rng.uniform(-0.12, 0.12, 2) * strength * np.array([w, h])
    offset = centre - linear @ centre + shift  # output pixel p samples the input at linear @ p + offset
    matrix = (linear[0, 0], linear[0, 1], offset[0], linear[1, 0], linear[1, 1], offset[1])
    return image.transform(
        image.size, Image.Transform.AFFINE, matrix, resample=Image.Resampling.BICUBIC, fillcolor=paper_colour(image)
    )


def occlude(image: Image.Image, rng: np.random.Generator, strength: float) -> Image.Image:
    """One or two patches of paper or stain over 8-25% of the frame each (lost or damaged parts)."""
    out = image.copy()
    w, h = out.size
    for _ in range(int(rng.integers(1, 3))):
        if rng.random() > strength:
            continue
        area = rng.uniform(0.08, 0.25)
        pw = int(w * np.sqrt(area) * rng.uniform(0.7, 1.4))
        ph = int(min(h, w * h * area / max(pw, 1)))
        pw = min(pw, w)
        x0, y0 = int(rng.integers(0, w - pw + 1)), int(rng.integers(0, h - ph + 1))
        colour = paper_colour(image) if rng.random() < 0.6 else tuple(int(v) for v in rng.integers(90, 200, 3))
        out.paste(Image.new("RGB", (pw, ph), colour), (x0, y0))
    return out


HARSH_STYLES = ("line-art", "posterized", "recoloured", "washed-out")
"""The harsh changes of style, by the number ``harsh_style`` draws; a copy's is in ``image.info["style"]``."""


def harsh_style(image: Image.Image, rng: np.random.Generator) -> Image.Image:
    """One of ``HARSH_STYLES``: line-art (ink outlines only), posterized colours, recoloured (channels swapped
    and mixed), washed-out greys with high contrast."""
    kind = int(rng.integers(4))
    return styled(apply_harsh_style(image, rng, kind), HARSH_STYLES[kind])


def styled(image: Image.Image, style: str) -> Image.Image:
    """``image``, its ``info["style"]`` set: the benchmarks report their losses by the copy's style."""
    image.info["style"] = style
    return image


def apply_harsh_style(image: Image.Image, rng: np.random.Generator, kind: int) -> Image.Image:
    """The harsh style number ``kind`` of ``HARSH_STYLES``, applied to ``image``."""
    paper = np.array(paper_colour(image), dtype=np.float32)
    if kind == 0:  # line-art: the outlines in one ink on clean paper
        grey = ImageOps.grayscale(image).filter(ImageFilter.GaussianBlur(1.0))
        edges = np.asarray(grey.filter(ImageFilter.FIND_EDGES), dtype=np.float32)
        ink = np.clip(edges / max(np.percentile(edges, 97), 1.0), 0, 1)[..., None]
        colour = rng.uniform(10, 110, 3)
        pixels = paper * (1 - ink) + colour * ink
        return Image.fromarray(pixels.astype(np.uint8)).filter(ImageFilter.GaussianBlur(0.6))
    if kind == 1:  # posterized: a few flat colours
        mixed = np.asarray(image, dtype=np.float32) @ (np.eye(3) * 0.6 + rng.uniform(0, 0.4, (3, 3))).T
        mixed = Image.fromarray(np.clip(mixed, 0, 255).astype(np.uint8))
        return ImageOps.posterize(mixed, int(rng.integers(1, 3))).filter(ImageFilter.GaussianBlur(0.8))
    if kind == 2:  # recoloured: channels swapped, saturation pushed
        pixels = np.asarray(image, dtype=np.float32)[..., rng.permutation(3)]
        grey = pixels.mean(axis=2, keepdims=True)
        pixels = grey + (pixels - grey) * rng.uniform(1.5, 2.5)
        return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    grey = ImageOps.autocontrast(ImageOps.grayscale(image), cutoff=5)  # washed-out greys
    ink = tuple(int(v) for v in rng.integers(40, 120, 3))
    return ImageOps.colorize(grey, black=ink, white=tuple(int(v) for v in paper))


def restyle_hard(image: Image.Image, rng: np.random.Generator, strength: float) -> Image.Image:
    """A copyist who redraws: strong warp, occlusions, and (with probability ``strength``) a harsh style."""
    out = occlude(strong_affine(image.convert("RGB"), rng, strength), rng, strength)
    if rng.random() < strength:
        out = harsh_style(out, rng)
    style = out.info.get("style", "warped only")
    return styled(out.filter(ImageFilter.GaussianBlur(float(rng.uniform(0.3, 1.2)))), style)


def transpose(image: Image.Image, rng: np.random.Generator) -> Image.Image:
    """The extreme copyist, as issue 38 describes its held-out sets: mirrored with probability 0.3, turned by an
    angle drawn in ±30° (in a frame that holds the whole turned drawing), and half the copies cut by 25-45% on
    one side (issue 38's fourth round; before, a copy was mirrored, turned by exactly ±30° or cut to a half,
    with probability 1/4 each)."""
    mirrored = rng.random() < 0.3
    out = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if mirrored else image
    angle = float(rng.uniform(-30, 30))
    out = out.rotate(angle, Image.Resampling.BICUBIC, expand=True, fillcolor=paper_colour(out))
    cut = None
    if rng.random() < 0.5:
        w, h = out.size
        fx, fy = rng.uniform(0.25, 0.45), rng.uniform(0.25, 0.45)
        cx, cy = int(w * fx), int(h * fy)
        side = int(rng.integers(4))  # the side cut away: left, right, top, bottom
        out = out.crop([(cx, 0, w, h), (0, 0, w - cx, h), (0, cy, w, h), (0, 0, w, h - cy)][side])
        cut = (("left", "right", "top", "bottom")[side], float(fx if side < 2 else fy))
    out.info["transposed"] = {"mirrored": mirrored, "angle": angle, "cut": cut}
    return out


def undo_transpose(copy: Image.Image) -> Image.Image:
    """An extreme copy with its turn and then its mirror undone (``transpose``'s ``info["transposed"]``), in its
    own frame, the corners filled with its paper colour; the cut stays cut. What an oracle of the transpositions
    would give S_trans (benchmarks/bench_inverse.py)."""
    done = copy.info["transposed"]
    rgb = copy.convert("RGB")
    out = rgb.rotate(-done["angle"], Image.Resampling.BICUBIC, expand=False, fillcolor=paper_colour(rgb))
    return out.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if done["mirrored"] else out


def copy_of(image: Image.Image, difficulty: str, rng: np.random.Generator) -> Image.Image:
    """The second manuscript's version of a subject, or a distractor's look on either side; outside ``moderate``
    its style (one of ``HARSH_STYLES``, or "warped only") in ``info["style"]``."""
    if difficulty == "moderate":
        return restyle_moderate(image, rng)
    out = restyle_hard(image, rng, STRENGTH[difficulty])
    return styled(transpose(out, rng), out.info["style"]) if difficulty == "extreme" else out


def quadrants(image: Image.Image) -> list[Image.Image]:
    w, h = image.size
    cells = [(c * w // 2, r * h // 2, (c + 1) * w // 2, (r + 1) * h // 2) for r in range(2) for c in range(2)]
    return [image.crop(box) for box in cells]


def drawing_subjects() -> list[tuple[Image.Image, Image.Image]]:
    """(P2 drawing, P3's real copy of it) for the 15 illustrations whose folios are present, then their quadrants."""
    p2 = via_illustrations(DATA / "annotations" / "P2.via.json", DATA / "P2" / "folios", skip_missing=True)
    p3 = via_illustrations(DATA / "annotations" / "P3.via.json", DATA / "P3" / "folios", skip_missing=True)
    real = [
        (p2[a].image.convert("RGB"), p3[b].image.convert("RGB"))
        for a, b in load_ground_truth(DATA / "ground_truth" / "P2-P3.json").tolist()
        if a < len(p2) and b < len(p3)
    ]
    parts = [pair for a, b in real for pair in zip(quadrants(a), quadrants(b), strict=True)]
    for kind, pairs in (("drawing", real), ("quarter", parts)):
        for a, _ in pairs:
            a.info["subject"] = kind  # the first manuscript's image itself: bench_concordance reports losses by it
    return real + parts


def illustration_boxes() -> dict[Path, list[tuple[int, int, int, int]]]:
    """The annotated illustrations of the P2 and P3 folios: folio path -> [(x, y, w, h)]."""
    boxes: dict[Path, list[tuple[int, int, int, int]]] = {}
    for name in ("P2", "P3"):
        for folio, box in read_via_boxes(DATA / "annotations" / f"{name}.via.json"):
            boxes.setdefault(DATA / name / "folios" / folio, []).append(box)
    return boxes


PAGE_BOX = (0.15, 0.12, 0.85, 0.82)
"""The part of a folio photograph (left, top, right, bottom, in shares of its size) that distractors outside
``moderate`` come from: the page, without what surrounds it in the photograph (the black background, the
book's edge, the library's footer and watermark), which is alike on every folio, so its crops were copies of
each other (issue 38's fifth round: about 10 of the 16 unrelated pairs grouped in ``816x405:hard:5:30``)."""
PAGE_ASPECT = (0.55, 0.95)
"""Width / height of the folio photographs that show a page; the spine and the edge of the book do not."""


def page_crops(count: int, rng: np.random.Generator, *, distractors_only: bool = False) -> list[Image.Image]:
    """``count`` crops of folio pages, from disjoint cells of a 3 x 3 grid per folio (no two overlap), or of a
    4 x 4 grid when the folios have fewer cells than that (816 x 405 with 30 true pairs needs 1,161).

    With ``distractors_only`` the grid covers the page (``PAGE_BOX`` of the photographs of a page's shape,
    ``PAGE_ASPECT``) and no cell overlaps an annotated illustration: a crop of a subject's own drawing (P2's,
    or P3's real copy of it) is that subject, not a distractor; it beat the synthetic copy of a hard subject
    on its own drawing (issue 38's fourth round: 4 of the 6 failures of ``816x405:hard:1:30``).
    """
    folios = sorted((DATA / "P2" / "folios").glob("*.jpg")) + sorted((DATA / "P3" / "folios").glob("*.jpg"))
    sizes = {f: Image.open(f).size for f in folios}
    boxes = illustration_boxes() if distractors_only else {}
    if distractors_only:
        folios = [f for f in folios if PAGE_ASPECT[0] <= sizes[f][0] / sizes[f][1] <= PAGE_ASPECT[1]]

    def frame(folio: Path) -> tuple[int, int, int, int]:
        """The folio's part the grid divides: (x, y, width, height) in pixels."""
        w, h = sizes[folio]
        if not distractors_only:
            return 0, 0, w, h
        left, top, right, bottom = PAGE_BOX
        return int(left * w), int(top * h), int((right - left) * w), int((bottom - top) * h)

    def cell_box(folio: Path, side: int, r: int, c: int) -> tuple[int, int, int, int]:
        fx, fy, fw, fh = frame(folio)
        cw, ch = fw // side, fh // side
        return fx + c * cw, fy + r * ch, fx + (c + 1) * cw, fy + (r + 1) * ch

    def clear(folio: Path, side: int, r: int, c: int) -> bool:
        x0, y0, x1, y1 = cell_box(folio, side, r, c)
        return all(bx + bw <= x0 or bx >= x1 or by + bh <= y0 or by >= y1 for bx, by, bw, bh in boxes.get(folio, []))

    def grid(side: int) -> list[tuple[Path, int, int]]:
        cells = [(f, r, c) for f in folios for r in range(side) for c in range(side)]
        return [cell for cell in cells if clear(cell[0], side, *cell[1:])]

    side = 3
    cells = grid(3)
    if count > len(cells):
        side, cells = 4, grid(4)
    if count > len(cells):
        raise SystemExit(f"{count} crops asked for, the folios give {len(cells)}")
    chosen = [cells[k] for k in rng.permutation(len(cells))[:count]]
    crops, opened = [], {}
    for folio, r, c in chosen:
        if folio not in opened:
            opened.clear()
            opened[folio] = Image.open(folio).convert("RGB")
        x0, y0, x1, y1 = cell_box(folio, side, r, c)
        cw, ch = x1 - x0, y1 - y0
        w, h = int(cw * rng.uniform(0.6, 1.0)), int(ch * rng.uniform(0.6, 1.0))
        x0 += int(rng.integers(0, cw - w + 1))
        y0 += int(rng.integers(0, ch - h + 1))
        crops.append(opened[folio].crop((x0, y0, x0 + w, y0 + h)))
    return crops


def make_pair(
    n0: int, n1: int, seed: int, difficulty: str = "moderate", shared: int | None = None
) -> tuple[list[Image.Image], list[Image.Image], np.ndarray, np.ndarray]:
    """Two manuscripts of n0 and n1 illustrations, their ground-truth pairs ``(G, 2)`` row-major, and
    ``(G,)`` bool: True where the pair's subject is a drawing (whole or quadrant), False for a page crop.

    With ``moderate`` the data is exactly the first scale benchmark's (same draws, same images). ``shared``
    sets G (default: ``GT_SHARE`` of n1): with 30 or fewer outside ``moderate``, every true pair is a
    drawing, hidden among page crops (issue 38's "hard copies among page-crop distractors").
    """
    if difficulty not in DIFFICULTIES:
        raise SystemExit(f"difficulty must be one of {', '.join(DIFFICULTIES)}")
    rng = np.random.default_rng(seed)
    g = min(round(GT_SHARE * n1), n1) if shared is None else min(shared, n1)
    if difficulty == "moderate":  # the first benchmark: the 15 real pairs, then restyled page crops
        subjects = drawing_subjects()[:15]
        n_real = n_draw = min(len(subjects), g)
        crops = page_crops(g - n_real + (n0 - g) + (n1 - g), rng)
        shared = [subjects[k] for k in range(n_real)]
        shared += [(im, restyle_moderate(im, rng)) for im in crops[: g - n_real]]
        rest = crops[g - n_real :]
    else:  # drawings first (whole, then parts), then page crops; every copy restyled
        subjects = drawing_subjects()
        n_draw = min(len(subjects), g)
        crops = page_crops(g - n_draw + (n0 - g) + (n1 - g), rng, distractors_only=True)
        shared = [(a, copy_of(b, difficulty, rng)) for a, b in subjects[:n_draw]]
        shared += [(im, copy_of(im, difficulty, rng)) for im in crops[: g - n_draw]]
        rest = [copy_of(im, difficulty, rng) if k % 2 else im for k, im in enumerate(crops[g - n_draw :])]
    only0, only1 = rest[: n0 - g], rest[n0 - g :]
    # First manuscript: shared and distractors shuffled. Second: the shared ones in the same order up
    # to local swaps (5% of neighbours), distractors inserted at random places.
    order0 = rng.permutation(n0)  # position of item k of [shared..., only0...]
    items0 = [None] * n0
    for k, image in enumerate([s[0] for s in shared] + only0):
        items0[order0[k]] = image
    shared_by_pos = sorted(range(g), key=lambda k: order0[k])
    for k in range(len(shared_by_pos) - 1):
        if rng.random() < 0.05:
            shared_by_pos[k], shared_by_pos[k + 1] = shared_by_pos[k + 1], shared_by_pos[k]
    slots = np.sort(rng.choice(n1, size=g, replace=False))
    items1, gt = [None] * n1, []
    for slot, k in zip(slots, shared_by_pos, strict=True):
        items1[slot] = shared[k][1]
        gt.append((int(order0[k]), int(slot), k < n_draw))
    free = iter(only1)
    items1 = [im if im is not None else next(free) for im in items1]
    gt.sort()
    return items0, items1, np.array([p[:2] for p in gt], dtype=np.int64), np.array([p[2] for p in gt], dtype=bool)
