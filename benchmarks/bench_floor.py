"""The floor of raw S: what true copies score, and what the best match of an unrelated image scores.

The normalized scores (N_S, P_S) and the concordance's confidence are relative: an illustration's best
candidate gets a high one whatever its raw S. ``weak_below`` (docs/concordance.md, "Weak matches") is an
absolute floor on raw S, and this benchmark measures the two distributions it must separate, per data set:

- ``true``: S of a true pair (an illustration and its copy);
- ``unrelated best``: for each illustration with no copy on the other side, its best S there: what a
  cycle-consistent pair of unrelated images can score at most.

Data sets (the floor is chosen on the first, checked on the others):

- ``synthetic``: the tests' drawings and shapes (``tests/synthetic.py``) against their restyled copies
  (``restyled_copy``) and redrawn copies (``hard_copy``); unrelated: random-noise images of several sizes
  against each other and against the copies, and drawings against the other drawings' copies.
- ``physiologus``: the 15 real P2-P3 pairs (P3's copy is a real copyist's); unrelated: each P2 illustration
  against the 14 other P3 illustrations, and page crops (script, margins, initials) against the P3
  illustrations and against other page crops.
- ``copies-moderate``, ``copies-hard``: the scale benchmark's pairs (``benchmarks/copies.py``, real
  drawings and page crops, restyled): true pairs of drawings, true pairs of page crops, and the best
  non-partner of every illustration.
- ``blank``: blank pages (paper colour, with and without noise and JPEG) against other blank pages: why a
  floor on S cannot catch them (docs/concordance.md).

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/bench_floor.py
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from collation.core.options import CollationOptions  # noqa: E402
from collation.engine.backbones import load_backbone  # noqa: E402
from collation.engine.illustrations import via_illustrations  # noqa: E402
from collation.engine.pipeline import assemble, describe, describe_transposed, score_manuscripts  # noqa: E402
from collation.engine.transpositions import picks_transpositions  # noqa: E402
from collation.engine.weak import is_blank  # noqa: E402

QUANTILES = (0.0, 0.01, 0.05, 0.5, 0.95, 0.99, 1.0)


def noise(k: int, size: tuple[int, int]) -> Image.Image:
    """All-different random images, as in the attack's 32 witnesses."""
    return Image.fromarray(np.random.default_rng(k).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def blank_page(k: int, sigma: float, jpeg: int | None, size: tuple[int, int] = (400, 560)) -> Image.Image:
    """A page of one paper colour, with grey noise of ``sigma`` levels and JPEG at ``jpeg`` quality."""
    grey = np.random.default_rng(k).normal(0, sigma, (size[1], size[0], 1)) if sigma else 0.0
    pixels = np.clip(np.array((232, 220, 190), np.float32) + grey, 0, 255).astype(np.uint8)
    image = Image.fromarray(np.broadcast_to(pixels, (size[1], size[0], 3)).copy())
    if jpeg:
        out = io.BytesIO()
        image.save(out, "JPEG", quality=jpeg)
        image = Image.open(io.BytesIO(out.getvalue())).convert("RGB")
    return image


class Scorer:
    """S of every pair of two image lists under the options (``score_manuscripts`` on all pairs)."""

    def __init__(self, options: CollationOptions) -> None:
        self.options = options.replace(candidates=None)
        self.model = load_backbone(options.backbone, device="cpu")

    def __call__(self, images0: list[Image.Image], images1: list[Image.Image]) -> np.ndarray:
        feats0 = describe(images0, self.model, self.options)
        plain1 = describe(images1, self.model, self.options)
        picks = picks_transpositions(self.options.transpositions)
        feats1 = plain1 if picks else describe_transposed(images1, self.model, self.options, plain1)
        pairs, s, _ = score_manuscripts(feats0, feats1, images1, self.model, self.options)
        return assemble((len(images0), len(images1)), pairs, s, np.zeros(len(s), dtype=np.int8))[0]


def best_unrelated(s: np.ndarray, truth: np.ndarray | None = None) -> np.ndarray:
    """Each row's best score among the columns that are not its partner (``truth``: ``(G, 2)``)."""
    s = s.copy()
    if truth is not None and len(truth):
        s[truth[:, 0], truth[:, 1]] = -np.inf
    return s.max(axis=1)


def synthetic(score: Scorer, n: int) -> dict[str, np.ndarray]:
    from synthetic import drawing, hard_copy, restyled_copy, shapes

    drawings, figures = [drawing(k) for k in range(n)], [shapes(k) for k in range(n)]
    originals = drawings + figures
    s = score(originals, [restyled_copy(x) for x in originals])
    hard = score(drawings, [hard_copy(x, k) for k, x in enumerate(drawings)])
    sizes = [(64, 64), (96, 72), (160, 120), (320, 256)]
    random0 = [noise(k, sizes[k % 4]) for k in range(n)]
    random1 = [noise(1000 + k, sizes[k % 4]) for k in range(n)]
    eye = np.stack([np.arange(2 * n)] * 2, axis=1)
    return {
        "true: restyled copies": np.diag(s),
        "true: hard copies (drawings)": np.diag(hard),
        "unrelated best: drawings/shapes vs others' copies": best_unrelated(s, eye),
        "unrelated best: random vs random": best_unrelated(score(random0, random1)),
        "unrelated best: random vs copies": best_unrelated(score(random0, [restyled_copy(x) for x in originals])),
    }


def physiologus(score: Scorer, data: Path, crops: int) -> dict[str, np.ndarray]:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from copies import page_crops

    p2, p3 = (
        [
            ill.image.convert("RGB")
            for ill in via_illustrations(data / "annotations" / f"{m}.via.json", data / m / "folios", skip_missing=True)
        ]
        for m in ("P2", "P3")
    )
    real = score(p2[:15], p3[:15])
    eye = np.stack([np.arange(15)] * 2, axis=1)
    pages = page_crops(2 * crops, np.random.default_rng(0))
    return {
        "true: real P2-P3 copies": np.diag(real),
        "unrelated best: P2 vs other P3 illustrations": best_unrelated(real, eye),
        "unrelated best: page crops vs P3 illustrations": best_unrelated(score(pages[:crops], p3[:15])),
        "unrelated best: page crops vs other page crops": best_unrelated(score(pages[:crops], pages[crops:])),
    }


def copies(score: Scorer, difficulty: str, n0: int, n1: int) -> dict[str, np.ndarray]:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from copies import make_pair

    images0, images1, truth, drawn = make_pair(n0, n1, seed=0, difficulty=difficulty)
    s = score(images0, images1)
    unpaired = np.setdiff1d(np.arange(n0), truth[:, 0])
    return {
        f"true: {difficulty} copies of drawings": s[truth[drawn, 0], truth[drawn, 1]],
        f"true: {difficulty} copies of page crops": s[truth[~drawn, 0], truth[~drawn, 1]],
        "unrelated best: illustrations without a copy": s[unpaired].max(axis=1),
    }


def blank(score: Scorer) -> dict[str, np.ndarray]:
    out = {}
    for sigma, jpeg in ((0, None), (0, 75), (2, 75), (5, None), (15, None)):
        pages0 = [blank_page(k, sigma, jpeg) for k in range(4)]
        pages1 = [blank_page(10 + k, sigma, jpeg) for k in range(4)]
        blanks = sum(is_blank(p) for p in pages0 + pages1)
        out[f"blank vs blank, noise {sigma}, jpeg {jpeg} ({blanks}/8 is_blank)"] = best_unrelated(score(pages0, pages1))
    return out


def line(name: str, values: np.ndarray, floor: float) -> str:
    q = np.quantile(values, QUANTILES)
    below = float(np.mean(values < floor))
    return f"| {name} | {len(values)} | " + " | ".join(f"{v:.3f}" for v in q) + f" | {100 * below:.1f}% |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", default=os.environ.get("COLLATION_TEST_DATA", str(REPO.parent / "shared" / "data" / "physiologus"))
    )
    parser.add_argument("--backbone", default="efficientnet-lite0")
    parser.add_argument("--similarity", default="s_trans")
    parser.add_argument("--transpositions", default="none")
    parser.add_argument("--partial", action="store_true")
    parser.add_argument("--floor", type=float, default=None, help="the floor to count below (default: the option's)")
    parser.add_argument("--n", type=int, default=16, help="drawings and shapes of the synthetic set")
    parser.add_argument("--crops", type=int, default=30, help="page crops per side")
    parser.add_argument("--sets", default="synthetic,physiologus,copies-moderate,copies-hard,blank")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    options = CollationOptions(
        backbone=args.backbone, similarity=args.similarity, transpositions=args.transpositions, partial=args.partial
    )
    floor = options.floor if args.floor is None else args.floor
    score = Scorer(options)
    started = time.perf_counter()
    setting = f"transpositions {args.transpositions}, partial {args.partial}"
    print(f"{args.backbone}, {args.similarity}, {setting}; floor {floor}")
    print("| Set | n | min | 1% | 5% | median | 95% | 99% | max | below floor |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.sets.split(","):
        if name == "synthetic":
            found = synthetic(score, args.n)
        elif name == "physiologus":
            found = physiologus(score, Path(args.data), args.crops)
        elif name.startswith("copies-"):
            found = copies(score, name.removeprefix("copies-"), 60, 40)
        else:
            found = blank(score)
        for label, values in found.items():
            if not len(values):
                continue
            print(line(f"{name}: {label}", values, floor), flush=True)
        print(f"{name}: done at {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
