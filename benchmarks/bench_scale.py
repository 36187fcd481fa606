"""Scale benchmark: a synthetic manuscript pair of the D1 x D2 shape, stage by stage.

The pair is made from the shared Physiologus data (never committed): the real P2-P3 illustration
pairs whose folios are present, plus crops of folio pages, each shown in the first manuscript and as
a restyled copy (affine warp, other colours, blur) in the second, hidden among page-crop
distractors that appear on one side only. The second manuscript keeps the first one's order up to a
few local swaps. Ground-truth pairs: 73% of the second manuscript, as D1-D2 (295 of 405).

Prints wall time per stage (images, features, candidates, S_trans, normalization, propagation),
pairs/s, peak RSS, the recall of the ground-truth pairs inside the candidate set, and top-1 accuracy
(S, N_S, P_S) with pruning, and without it when ``--unpruned`` is given (only sensible at small sizes).

    .venv/bin/python benchmarks/bench_scale.py --size 200x100 --unpruned
    .venv/bin/python benchmarks/bench_scale.py --size 816x405 --keep /tmp/d1d2   # then time `collate match`
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageFilter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collation.backbones import BACKBONES, load_backbone
from collation.candidates import candidate_pairs, global_scores, recall, sparse_score_matrix
from collation.correspondences import mutual_best, normalize, propagate
from collation.evaluation import accuracy, load_ground_truth
from collation.features import extract_features
from collation.illustrations import folder_illustrations, via_illustrations

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "physiologus"
GT_SHARE = 295 / 405
"""Ground-truth pairs per illustration of the smaller manuscript in D1-D2."""


def restyle(image: Image.Image, rng: np.random.Generator) -> Image.Image:
    """Another 'copyist': a small random affine warp, other colours, softer strokes."""
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


def page_crops(count: int, rng: np.random.Generator) -> list[Image.Image]:
    """``count`` crops of folio pages, from disjoint cells of a 3 x 3 grid per folio (no two overlap)."""
    folios = sorted((DATA / "P2" / "folios").glob("*.jpg")) + sorted((DATA / "P3" / "folios").glob("*.jpg"))
    cells = [(f, r, c) for f in folios for r in range(3) for c in range(3)]
    if count > len(cells):
        raise SystemExit(f"{count} crops asked for, the folios give {len(cells)}")
    chosen = [cells[k] for k in rng.permutation(len(cells))[:count]]
    crops, opened = [], {}
    for folio, r, c in chosen:
        if folio not in opened:
            opened.clear()
            opened[folio] = Image.open(folio).convert("RGB")
        page = opened[folio]
        cw, ch = page.width // 3, page.height // 3
        w, h = int(cw * rng.uniform(0.6, 1.0)), int(ch * rng.uniform(0.6, 1.0))
        x0 = c * cw + int(rng.integers(0, cw - w + 1))
        y0 = r * ch + int(rng.integers(0, ch - h + 1))
        crops.append(page.crop((x0, y0, x0 + w, y0 + h)))
    return crops


def make_pair(n0: int, n1: int, seed: int) -> tuple[list[Image.Image], list[Image.Image], np.ndarray]:
    """Two manuscripts of n0 and n1 illustrations and their ground-truth pairs ``(G, 2)``."""
    rng = np.random.default_rng(seed)
    p2 = via_illustrations(DATA / "annotations" / "P2.via.json", DATA / "P2" / "folios", skip_missing=True)
    p3 = via_illustrations(DATA / "annotations" / "P3.via.json", DATA / "P3" / "folios", skip_missing=True)
    real = [
        (a, b)
        for a, b in load_ground_truth(DATA / "ground_truth" / "P2-P3.json").tolist()
        if a < len(p2) and b < len(p3)
    ]
    g = min(round(GT_SHARE * n1), n1)
    n_real = min(len(real), g)
    crops = page_crops(g - n_real + (n0 - g) + (n1 - g), rng)
    shared = [(p2[a].image, p3[b].image) for a, b in real[:n_real]]
    shared += [(im, restyle(im, rng)) for im in crops[: g - n_real]]
    rest = crops[g - n_real :]
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
        gt.append((int(order0[k]), int(slot)))
    free = iter(only1)
    items1 = [im if im is not None else next(free) for im in items1]
    return items0, items1, np.array(sorted(gt), dtype=np.int64)


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def backbone_for(name: str):
    try:
        return load_backbone(name, device="cpu"), "pretrained"
    except Exception:  # resnet50 without its weights file: random weights, same cost
        from torchvision.models import resnet50

        folder = Path(tempfile.mkdtemp())
        torch.save(resnet50(weights=None).state_dict(), folder / "resnet50-0676ba61.pth")
        return load_backbone(name, device="cpu", weights_dir=folder), "random weights (same cost)"


def collate_pair(s: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    t = time.perf_counter()
    n = normalize(s, "max")
    t_norm = time.perf_counter() - t
    t = time.perf_counter()
    p = propagate(n, mutual_best(n))
    return {"S": s, "N_S": n, "P_S": p}, {"normalization": t_norm, "propagation": time.perf_counter() - t}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="200x100", help="N0xN1, e.g. 816x405")
    parser.add_argument("--backbone", default="efficientnet-lite0", choices=BACKBONES)
    parser.add_argument(
        "--candidates", type=int, nargs="+", default=[10], help="K values: recall for each, S_trans with the first"
    )
    parser.add_argument("--unpruned", action="store_true", help="also score every pair (slow beyond 200 x 100)")
    parser.add_argument("--float32", action="store_true", help="features in float32 (default float16)")
    parser.add_argument("--keep", help="write the two manuscripts' images here (for timing `collate match`)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    n0, n1 = (int(v) for v in args.size.lower().split("x"))
    print(f"scale benchmark {n0} x {n1}, {args.backbone}, {torch.get_num_threads()} threads", flush=True)
    stages: dict[str, float] = {}

    t = time.perf_counter()
    images0, images1, gt = make_pair(n0, n1, args.seed)
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp())
    for name, images in (("A", images0), ("B", images1)):
        (folder / name).mkdir(parents=True, exist_ok=True)
        for k, im in enumerate(images):
            im.save(folder / name / f"{k:04d}.jpg", quality=92)
    np.savetxt(folder / "gt.txt", gt, fmt="%d")
    (folder / "gt.json").write_text(str(gt.tolist()))
    stages["make data (not timed below)"] = time.perf_counter() - t
    t = time.perf_counter()
    ills0, ills1 = folder_illustrations(folder / "A"), folder_illustrations(folder / "B")
    images0, images1 = [ill.image for ill in ills0], [ill.image for ill in ills1]
    for im in images0 + images1:
        im.load()
    stages["images"] = time.perf_counter() - t

    model, weights = backbone_for(args.backbone)
    dtype = torch.float32 if args.float32 else torch.float16
    t = time.perf_counter()
    feats0, feats1 = extract_features(images0, model, dtype=dtype), extract_features(images1, model, dtype=dtype)
    stages["features"] = time.perf_counter() - t
    print(f"  features done: {stages['features']:.1f} s, {(n0 + n1) / stages['features']:.1f} images/s", flush=True)
    del model

    t = time.perf_counter()
    g = global_scores(feats0, feats1)
    candidates = {k: candidate_pairs(g, k) for k in args.candidates}
    stages["candidates"] = time.perf_counter() - t
    k = args.candidates[0]
    t = time.perf_counter()
    s = sparse_score_matrix(feats0, feats1, candidates[k])
    stages["S_trans"] = time.perf_counter() - t
    matrices, times = collate_pair(s)
    stages.update(times)

    print(
        f"  backbone {weights}; features {str(dtype).removeprefix('torch.')}, "
        f"{(feats0.desc.nbytes + feats1.desc.nbytes) / 1e6:.0f} MB; {len(gt)} ground-truth pairs"
    )
    for name, seconds in stages.items():
        print(f"  {name:<28} {seconds:8.1f} s")
    timed = sum(v for key, v in stages.items() if not key.startswith("make"))
    print(f"  {'total (images to P_S)':<28} {timed:8.1f} s")
    scored = len(candidates[k])
    print(
        f"  features: {(n0 + n1) / stages['features']:.1f} images/s; S_trans: {scored} pairs "
        f"({scored / (n0 * n1):.1%} of {n0 * n1}) at {scored / stages['S_trans']:.1f} pairs/s"
    )
    for kk, pairs in candidates.items():
        print(f"  candidates K={kk:<3} {len(pairs):7d} pairs, recall of ground truth {recall(pairs, gt):.4f}")
    print(f"  top-1 accuracy, pruned (K={k}): " + ", ".join(f"{m} {accuracy(v, gt):.4f}" for m, v in matrices.items()))
    print(f"  peak RSS {peak_rss_gb():.2f} GB", flush=True)
    if args.unpruned:
        t = time.perf_counter()
        full = sparse_score_matrix(feats0, feats1, np.argwhere(np.ones((n0, n1), bool)))
        seconds = time.perf_counter() - t
        dense, _ = collate_pair(full)
        print(f"  unpruned S_trans: {n0 * n1} pairs in {seconds:.1f} s = {n0 * n1 / seconds:.1f} pairs/s")
        print("  top-1 accuracy, unpruned: " + ", ".join(f"{m} {accuracy(v, gt):.4f}" for m, v in dense.items()))
        print(f"  peak RSS {peak_rss_gb():.2f} GB")
    print(
        f"  data in {folder}: collate match A={folder / 'A'} B={folder / 'B'} --out OUT; "
        f"collate evaluate OUT --ground-truth {folder / 'gt.json'} --pair A,B"
    )


if __name__ == "__main__":
    main()
