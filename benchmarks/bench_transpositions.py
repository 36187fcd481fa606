"""Transposed and partial copies: top-1 accuracy (S, P_S) per option and kind of copy, and pairs/s.

Built from the shared Physiologus crops whose folios are present (illustrations 0-14 of P2 and of
P3). For each source manuscript (P2, then P3) the first ``--n`` crops are the originals; for each kind
of copy a second "manuscript" holds a copy of every original, made by a transformation and a random
restyle (colour, contrast, blur), with distractors inserted at seeded places: the source's remaining
crops under the same transformation and restyle, and the other manuscript's remaining crops restyled.
Kinds: ``plain`` (restyle only), ``mirror`` (horizontal mirror), ``rot30`` (±30°, alternating),
``rot90`` (90° counter-clockwise), ``partial`` (left or right half of the scene), and ``real`` (the
other manuscript's actual copies of the originals, distractors as above; no synthetic change).

Every (original, copy, transposition) score is computed once, with the transposed features of the
copies; the options "none", "mirror" and "all" are maxima over the first 1, 2 and 6 transpositions,
which equals ``score_pairs`` with ``n_transpositions`` exactly (RANSAC draws are keyed by the transposed index). The
partial-copy variant is a second pass. Speed is timed separately per option on a sub-matrix.

Candidate pruning with transpositions: the recall of the ground-truth pairs inside the candidate set
of K (``candidate_pairs``) built from the global scores as drawn only ("none") and from the best over
the transpositions of each option (``transposed_global_scores``); ``--recall-only`` skips S_trans.

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/bench_transpositions.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageEnhance, ImageFilter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collation.core.vocabulary import TRANSPOSITION_NAMES as TRANSPOSITIONS
from collation.core.vocabulary import TRANSPOSITION_SETS
from collation.engine.backbones import load_backbone
from collation.engine.candidates import recall, top_k_pairs
from collation.engine.correspondences import collate
from collation.engine.evaluation import accuracy
from collation.engine.features import extract_features
from collation.engine.illustrations import via_illustrations
from collation.engine.similarity import all_pairs, score_pairs
from collation.engine.transpositions import extract_transposed_features, transposed_global_scores

KINDS = ("plain", "mirror", "rot30", "rot90", "partial", "real")
RECALL_K = (1, 2, 5)
OPTIONS = tuple(TRANSPOSITION_SETS)
PAPER = (232, 220, 190)


def restyle(image: Image.Image, rng: np.random.Generator) -> Image.Image:
    """Another hand: channels mixed, contrast and brightness changed, strokes softened."""
    pixels = np.asarray(image.convert("RGB"), dtype=np.float32)
    mix = np.eye(3) * rng.uniform(0.6, 1.0) + rng.uniform(0.0, 0.3, (3, 3))
    pixels = np.clip(pixels @ mix.T / mix.sum(axis=1).max() + rng.uniform(-15, 25), 0, 255).astype(np.uint8)
    out = ImageEnhance.Contrast(Image.fromarray(pixels)).enhance(rng.uniform(0.7, 1.3))
    return out.filter(ImageFilter.GaussianBlur(rng.uniform(0.6, 1.6)))


def transform(image: Image.Image, kind: str, k: int) -> Image.Image:
    """The copyist's change of kind ``kind`` to the k-th illustration (before the restyle)."""
    if kind == "mirror":
        return image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    if kind == "rot90":
        return image.transpose(Image.Transpose.ROTATE_90)
    if kind == "rot30":
        fill = tuple(int(v) for v in np.median(np.asarray(image.convert("RGB")).reshape(-1, 3), axis=0))
        return image.convert("RGB").rotate(
            30 if k % 2 == 0 else -30, Image.Resampling.BICUBIC, expand=True, fillcolor=fill
        )
    if kind == "partial":
        w, h = image.size
        if w >= h:
            return image.crop((0, 0, w // 2, h) if k % 2 == 0 else (w - w // 2, 0, w, h))
        return image.crop((0, 0, w, h // 2) if k % 2 == 0 else (0, h - h // 2, w, h))
    return image


def build_case(
    source: list, other: list, n: int, kind: str, seed: int, base: str = "source"
) -> tuple[list, np.ndarray]:
    """The copies' manuscript of one kind and its ground truth (original k, column of its copy).

    The copies keep the originals' order (a copyist follows the text); distractors sit at seeded places.
    With ``base="real"`` the synthetic copies are made from the other manuscript's actual copies of the
    originals (a real copyist's changes, then the transformation and the restyle): the harder setting.
    """
    rng = np.random.default_rng(seed)
    if kind == "real":
        copies = list(other[:n])
    else:
        bases = other[:n] if base == "real" else source[:n]
        copies = [restyle(transform(im, kind, k), rng) for k, im in enumerate(bases)]
    distractors = [
        restyle(transform(im, "plain" if kind == "real" else kind, k), rng) for k, im in enumerate(source[n:])
    ]
    distractors += [restyle(im, rng) for im in other[n:]]
    total = len(copies) + len(distractors)
    copy_columns = np.sort(rng.choice(total, size=n, replace=False))
    rest = iter(distractors)
    copy_at = dict(zip(copy_columns.tolist(), copies, strict=True))
    columns = [copy_at[c] if c in copy_at else next(rest) for c in range(total)]
    return columns, np.stack([np.arange(n), copy_columns], axis=1)


def accuracies(s: np.ndarray, gt: np.ndarray) -> tuple[float, float, float]:
    """Top-1 accuracy of S and of P_S, and the mean margin of S: the true pair's score minus the best
    other score of its row and column (negative: a wrong winner)."""
    p_s = collate({(0, 1): s}, normalization="max", propagation="2-cycles")[(0, 1)].P_S
    a, b = gt[:, 0], gt[:, 1]
    others = s.copy()
    others[a, b] = -np.inf
    margin = s[a, b] - np.maximum(others[a].max(axis=1), others[:, b].max(axis=0))
    return accuracy(s, gt), accuracy(p_s, gt), float(margin.mean())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("COLLATION_TEST_DATA", "../shared/data/physiologus"))
    parser.add_argument("--backbone", default="efficientnet-lite0")
    parser.add_argument("--n", type=int, default=10, help="originals per source (the rest are distractors)")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--sources", default="P2,P3")
    parser.add_argument(
        "--base",
        choices=("source", "real"),
        default="source",
        help="make the synthetic copies from the originals (source) or from their real copies",
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (1: OpenMP threads spin badly on a loaded machine)"
    )
    parser.add_argument("--time-rows", type=int, default=6, help="rows of the timed sub-matrix")
    parser.add_argument("--recall-only", action="store_true", help="only the candidates' recall (no S_trans)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    data = Path(args.data)
    crops = {
        m: [
            ill.image.convert("RGB")
            for ill in via_illustrations(data / "annotations" / f"{m}.via.json", data / m / "folios", skip_missing=True)
        ]
        for m in ("P2", "P3")
    }
    model = load_backbone(args.backbone, device="cpu")
    t_all = len(TRANSPOSITIONS)
    results: dict[tuple[str, str, bool], list[tuple[float, float]]] = {}
    recalls: dict[tuple[str, str, int], list[float]] = {}
    timing_case = None
    started = time.perf_counter()
    for source in args.sources.split(","):
        other = crops["P3" if source == "P2" else "P2"]
        feats0 = extract_features(crops[source][: args.n], model)
        for kind in args.kinds.split(","):
            columns, gt = build_case(
                crops[source], other, args.n, kind, seed=zlib.crc32(f"{source}-{kind}".encode()), base=args.base
            )
            transposed = extract_transposed_features(columns, model, "all")
            for option in OPTIONS:  # the first T transpositions of "all" are the option's (index t * n + j)
                t = len(TRANSPOSITION_SETS[option])
                best = transposed_global_scores(feats0, transposed.select(range(t * len(columns))), t)
                for k in RECALL_K:
                    recalls.setdefault((kind, option, k), []).append(recall(top_k_pairs(best, k), gt))
            for partial in () if args.recall_only else (False, True):
                every = all_pairs(len(feats0), len(transposed))
                s = score_pairs(feats0, transposed, every, partial=partial)[0].numpy()  # (n0 * T * n1,)
                s = s.reshape(len(feats0), t_all, len(columns))
                for option in OPTIONS:
                    best = s[:, : len(TRANSPOSITION_SETS[option])].max(axis=1)
                    results.setdefault((kind, option, partial), []).append(accuracies(best, gt))
            if timing_case is None:
                timing_case = (feats0, columns)
            print(f"{source} {kind}: done at {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)

    kinds = args.kinds.split(",")
    print(f"\nRecall of the ground truth in the candidates (K per row and column), {len(columns)} columns")
    print("| Kind | " + " | ".join(f"{o}, K = {k}" for o in OPTIONS for k in RECALL_K) + " |")
    print("|" + "---|" * (1 + len(OPTIONS) * len(RECALL_K)))
    for kind in [*kinds, "mean"]:
        cells = []
        for option in OPTIONS:
            for k in RECALL_K:
                chosen = kinds if kind == "mean" else [kind]
                values = [v for c in chosen for v in recalls[(c, option, k)]]
                cells.append(f"{100 * np.mean(values):.0f}")
        print(f"| {kind} | " + " | ".join(cells) + " |")
    if args.recall_only:
        return 0

    print(
        f"\nTop-1 accuracy (both directions), {args.backbone}, n = {args.n} originals per source, "
        f"sources {args.sources}, copies made from {args.base}; S / P_S / mean margin of S"
    )
    header = "| Kind | " + " | ".join(f"{o}{' + partial' if p else ''}" for p in (False, True) for o in OPTIONS) + " |"
    print(header)
    print("|" + "---|" * (1 + 2 * len(OPTIONS)))
    for kind in [*args.kinds.split(","), "mean"]:
        cells = []
        for partial in (False, True):
            for option in OPTIONS:
                if kind == "mean":
                    values = [v for k in args.kinds.split(",") for v in results[(k, option, partial)]]
                else:
                    values = results[(kind, option, partial)]
                s_acc, p_acc, margin = np.mean(values, axis=0)
                cells.append(f"{100 * s_acc:.0f} / {100 * p_acc:.0f} / {margin:.2f}")
        print(f"| {kind} | " + " | ".join(cells) + " |")

    feats0, columns = timing_case
    rows = feats0.select(torch.arange(min(args.time_rows, len(feats0))))
    print(
        f"\nSpeed: {len(rows)} x {len(columns)} pairs, {torch.get_num_threads()} threads, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print("| Option | extraction of the copies (s) | pairs/s | pairs/s, partial |")
    print("|---|---|---|---|")
    for option in OPTIONS:
        t0 = time.perf_counter()
        transposed = extract_transposed_features(columns, model, option)
        extraction = time.perf_counter() - t0
        rates = []
        for partial in (False, True):
            t0 = time.perf_counter()
            t = len(TRANSPOSITION_SETS[option])
            score_pairs(rows, transposed, all_pairs(len(rows), len(columns)), n_transpositions=t, partial=partial)
            rates.append(len(rows) * len(columns) / (time.perf_counter() - t0))
        print(f"| {option} | {extraction:.1f} | {rates[0]:.1f} | {rates[1]:.1f} |")
    print(f"load average at the end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
