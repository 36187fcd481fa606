"""Replay the candidate stage on every pair's scores (``benchmarks/dense_matrices.py``): recall, pairs, top-1.

For each ``.npz`` given, the cascade of ``collation.engine.cascade`` is run on the stored global and cheap
scores (a pair's scores do not depend on the pairs computed with it, so this is the cascade's own candidate
set), the share of the true pairs that P_S over every pair gets right (in their row or column) that
the candidates keep, and its pruned top-1 (S / N_S / P_S) is read from the stored S_trans of every pair, next to the
unpruned top-1: the comparison is exact. ``--wide`` and ``--candidates`` take several values to compare.

    .venv/bin/python benchmarks/replay_candidates.py /tmp/dense/*.npz --wide 30 60 --candidates 10
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collation.core import defaults
from collation.engine.candidates import UNSCORED, recall, top_k_pairs
from collation.engine.cascade import order_corridor, select_candidates
from collation.engine.correspondences import mutual_best, normalize, propagate
from collation.engine.evaluation import accuracy


def top1(s: np.ndarray, gt: np.ndarray) -> tuple[float, float, float]:
    n = normalize(s, defaults.NORMALIZATION)
    return accuracy(s, gt), accuracy(n, gt), accuracy(propagate(n, mutual_best(n)), gt)


def replay(glob: np.ndarray, cheap_all: np.ndarray, wide: int, k: int, corridor: float) -> tuple[np.ndarray, int]:
    """The cascade's candidates ``(P, 2)`` and the number of cheap scores it computed."""
    cheap = np.full(cheap_all.shape, UNSCORED)
    wide_pairs = top_k_pairs(glob, max(wide, k))
    cheap[wide_pairs[:, 0], wide_pairs[:, 1]] = cheap_all[wide_pairs[:, 0], wide_pairs[:, 1]]
    along = order_corridor(cheap, dataclasses.replace(defaults.CASCADE, corridor=corridor))
    cheap[along[:, 0], along[:, 1]] = cheap_all[along[:, 0], along[:, 1]]
    return select_candidates(cheap, k), int(np.isfinite(cheap).sum())


def matchable(s: np.ndarray, gt: np.ndarray) -> np.ndarray:
    """``(G,)`` bool: true pairs that P_S over every pair gets right in their row or their column."""
    n = normalize(s, defaults.NORMALIZATION)
    p = propagate(n, mutual_best(n))
    return (p[gt[:, 0]].argmax(axis=1) == gt[:, 1]) | (p[:, gt[:, 1]].argmax(axis=0) == gt[:, 0])


def restricted(full: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    out = np.full(full.shape, UNSCORED)
    out[pairs[:, 0], pairs[:, 1]] = full[pairs[:, 0], pairs[:, 1]]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--wide", type=int, nargs="+", default=[defaults.CANDIDATES_WIDE])
    parser.add_argument("--candidates", type=int, nargs="+", default=[defaults.CANDIDATES])
    parser.add_argument("--corridor", type=float, nargs="+", default=[defaults.CANDIDATES_CORRIDOR])
    args = parser.parse_args()
    for file in args.files:
        d = np.load(file)
        s, gt = d["s"].astype(np.float64), d["gt"]
        right = gt[matchable(s, gt)]
        print(
            f"{Path(file).stem} ({len(gt)} true pairs, {len(right)} matched by P_S over every pair): "
            "every pair S / N_S / P_S " + " / ".join(f"{v:.3f}" for v in top1(s, gt))
        )
        for wide in args.wide:
            for k in args.candidates:
                for corridor in args.corridor:
                    pairs, cheap = replay(d["glob"], d["cheap"].astype(np.float64), wide, k, corridor)
                    acc = top1(restricted(s, pairs), gt)
                    print(
                        f"  wide {wide} k {k} corridor {corridor}: cheap {cheap}, S_trans {len(pairs)} pairs, recall "
                        f"{recall(pairs, gt):.3f} (of the matched {recall(pairs, right):.3f}), S / N_S / P_S "
                        + " / ".join(f"{v:.3f}" for v in acc)
                    )


if __name__ == "__main__":
    main()
