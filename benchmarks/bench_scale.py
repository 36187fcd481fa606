"""Scale benchmark: a synthetic manuscript pair of the D1 x D2 shape, at a chosen difficulty.

The pair comes from ``benchmarks/copies.py`` (the shared Physiologus data, never committed): shared
subjects shown in the first manuscript and as copies in the second, hidden among distractors, in
the same order up to local swaps. ``--difficulty`` picks the copyist: ``moderate`` (the first scale
benchmark's), ``hard``, ``paper`` (calibrated on De Materia Medica's S_features) or ``extreme``
(hard, and mirrored, turned or cut copies; use ``--transpositions`` and ``--partial`` there).

Prints, for the candidate stage of the defaults (``collation.engine.cascade``) and for the global top-K that
preceded it: the recall of the ground-truth pairs inside the scored set, its size and the time; the
top-1 accuracy (S, N_S, P_S) on the pruned matrix; with ``--unpruned``, the same on every pair (the
pruned scores are then read from the full matrix: a pair's score does not depend on the pairs
scored with it); S_features' top-1 (the paper's Table 2 first column) with ``--s-features``; wall
time per stage and peak RSS.

    .venv/bin/python benchmarks/bench_scale.py --size 200x100 --difficulty hard --unpruned
    .venv/bin/python benchmarks/bench_scale.py --size 816x405 --difficulty paper --keep /tmp/d1d2
    # then time `collate match A=/tmp/d1d2/A B=/tmp/d1d2/B --out OUT` on the kept images
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from copies import DIFFICULTIES, make_pair

from collation.core import defaults
from collation.core.vocabulary import TRANSPOSITION_SETS
from collation.engine.backbones import BACKBONES, load_backbone
from collation.engine.candidates import UNSCORED, recall, top_k_pairs
from collation.engine.cascade import cascade_scores, select_candidates
from collation.engine.correspondences import mutual_best, normalize, propagate
from collation.engine.evaluation import accuracy
from collation.engine.features import extract_features, extract_square_features
from collation.engine.illustrations import folder_illustrations
from collation.engine.similarity import all_pairs, score_pairs
from collation.engine.transpositions import extract_transposed_features, transposed_global_scores, transposition_names


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


def top1(s: np.ndarray, gt: np.ndarray) -> dict[str, float]:
    """Top-1 accuracy of S, N_S ("max") and P_S (2-cycle seeds), the pipeline's defaults."""
    n = normalize(s, defaults.NORMALIZATION)
    p = propagate(n, mutual_best(n))
    return {name: accuracy(m, gt) for name, m in (("S", s), ("N_S", n), ("P_S", p))}


def restricted(full: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    out = np.full(full.shape, UNSCORED)
    out[pairs[:, 0], pairs[:, 1]] = full[pairs[:, 0], pairs[:, 1]]
    return out


def line(name: str, values: dict[str, float]) -> str:
    return f"  {name:<34} " + ", ".join(f"{k} {v:.3f}" for k, v in values.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="200x100", help="N0xN1, e.g. 816x405")
    parser.add_argument("--difficulty", default="moderate", choices=DIFFICULTIES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backbone", default="efficientnet-lite0", choices=BACKBONES)
    parser.add_argument("--candidates", type=int, default=defaults.CANDIDATES, help="K of the cascade")
    parser.add_argument(
        "--transpositions", nargs="+", default=["none"], choices=tuple(TRANSPOSITION_SETS), help="one or more options"
    )
    parser.add_argument("--partial", default="off", choices=("off", "on", "both"), help="the partial option")
    parser.add_argument("--unpruned", action="store_true", help="also score every pair (slow beyond 200 x 100)")
    parser.add_argument("--s-features", action="store_true", help="also S_features' top-1 (square features)")
    parser.add_argument("--keep", help="write the two manuscripts' images here (for timing `collate match`)")
    parser.add_argument("--data-only", action="store_true", help="write the data (--keep) and stop")
    args = parser.parse_args()
    n0, n1 = (int(v) for v in args.size.lower().split("x"))
    print(
        f"scale benchmark {n0} x {n1}, {args.difficulty}, seed {args.seed}, {args.backbone}, "
        f"{torch.get_num_threads()} threads",
        flush=True,
    )
    stages: dict[str, float] = {}
    t = time.perf_counter()
    images0, images1, gt, drawn = make_pair(n0, n1, args.seed, args.difficulty)
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp())
    for name, images in (("A", images0), ("B", images1)):
        (folder / name).mkdir(parents=True, exist_ok=True)
        for k, im in enumerate(images):
            im.save(folder / name / f"{k:04d}.jpg", quality=92)
    (folder / "gt.json").write_text(str(gt.tolist()))
    print(f"  data: {time.perf_counter() - t:.1f} s, {len(gt)} ground-truth pairs, in {folder}", flush=True)
    if args.data_only:
        return
    images0 = [ill.image.convert("RGB") for ill in folder_illustrations(folder / "A")]
    images1 = [ill.image.convert("RGB") for ill in folder_illustrations(folder / "B")]

    model, weights = backbone_for(args.backbone)
    t = time.perf_counter()
    feats0 = extract_features(images0, model, dtype=torch.float16)
    feats1 = extract_features(images1, model, dtype=torch.float16)
    widest = max(args.transpositions, key=lambda option: len(transposition_names(option)))
    turned1 = extract_transposed_features(images1, model, widest, plain=feats1, dtype=torch.float16)
    stages["features"] = time.perf_counter() - t
    if args.s_features:
        square = [extract_square_features(ims, model, dtype=torch.float16) for ims in (images0, images1)]
        every = all_pairs(n0, n1)
        s_features = score_pairs(*square, every, similarity="s_features")[0].numpy().reshape(n0, n1)
        print(line("S_features (every pair)", top1(s_features, gt)))
    del model

    for partial in {"off": [False], "on": [True], "both": [False, True]}[args.partial]:
        every_t = None
        if args.unpruned:  # each pair under each transposition once; an option's S is the max over its first T
            t = time.perf_counter()
            turns = len(transposition_names(widest))
            expanded = all_pairs(n0, turns * n1).numpy()
            every_t = score_pairs(feats0, turned1, expanded, seed=defaults.SEED, partial=partial)[0].numpy()
            every_t = every_t.reshape(n0, turns, n1)
            stages[f"S_trans, every pair x {turns} transpositions{', partial' if partial else ''}"] = (
                time.perf_counter() - t
            )
        for option in args.transpositions:
            t_count = len(transposition_names(option))
            sub = turned1.select(range(t_count * n1))
            title = f"transpositions {option}{', partial' if partial else ''}"
            print(f"  {title}:", flush=True)
            t = time.perf_counter()
            glob = top_k_pairs(transposed_global_scores(feats0, sub, t_count), args.candidates)
            cheap = cascade_scores(feats0, sub, args.candidates, t_count, seed=defaults.SEED, partial=partial)
            cascade = select_candidates(cheap, args.candidates)
            stages[f"cascade, {title}"] = time.perf_counter() - t
            for name, pairs in ((f"global top-{args.candidates} (before)", glob), ("cascade (default)", cascade)):
                print(
                    f"  {name:<34} {len(pairs):7d} pairs ({len(pairs) / (n0 * n1):.1%}), recall "
                    f"{recall(pairs, gt):.4f} (drawings {recall(pairs, gt[drawn]):.4f} of {drawn.sum()}, "
                    f"page crops {recall(pairs, gt[~drawn]):.4f})"
                )
            if every_t is not None:
                full = every_t[:, :t_count].max(axis=1)
                print(line("unpruned", top1(full, gt)))
                print(line("pruned, global top-K (before)", top1(restricted(full, glob), gt)))
                print(line("pruned, cascade (default)", top1(restricted(full, cascade), gt)))
            else:
                t = time.perf_counter()
                sparse = np.full((n0, n1), UNSCORED)
                best, _ = score_pairs(
                    feats0, sub, cascade, n_transpositions=t_count, seed=defaults.SEED, partial=partial
                )
                sparse[cascade[:, 0], cascade[:, 1]] = best.numpy()
                stages[f"S_trans, cascade pairs, {title}"] = time.perf_counter() - t
                print(line("pruned, cascade (default)", top1(sparse, gt)))
    for name, seconds in stages.items():
        print(f"  {name:<34} {seconds:8.1f} s")
    print(f"  peak RSS {peak_rss_gb():.2f} GB ({weights} backbone)", flush=True)


if __name__ == "__main__":
    main()
