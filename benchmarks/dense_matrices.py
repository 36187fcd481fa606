"""Every pair's scores of a generated manuscript pair, for studying the candidate stage offline.

Generates a pair with ``benchmarks/copies.py`` (``--size``, ``--difficulty``, ``--seed``), extracts the
features (float16, on ``--device``), and writes one ``.npz`` with the ``(n0, n1)`` matrices of every pair:

- ``glob``: the global score (``candidates.global_scores``);
- ``cheap``: the cascade's cheap score (``cascade.cheap_scores``, coarse maps, 25 hypotheses);
- ``s``: S_trans itself (``similarity.score_pairs``, the defaults);

and ``gt`` (the true pairs) and ``drawn`` (which of them are drawings, not page crops). A pair's
scores do not depend on the pairs computed with it (RANSAC draws are keyed by the pair), so any candidate
stage built on ``glob`` and ``cheap`` can be replayed on these matrices and its pruned top-1 read from
``s`` exactly: ``benchmarks/replay_candidates.py``. Every pair of 816 x 405 is about an hour of S_trans on
a 2-core CPU and under three minutes on one H100, hence ``--device cuda`` (``benchmarks/gpu_checks.sh``).

    python3 benchmarks/dense_matrices.py --size 816x405 --difficulty hard --seed 1 --device cuda --out /tmp/d

The shared Physiologus data is found beside the repository, or under ``$COLLATION_TEST_DATA``. The
``.npz`` files are derived from it: never commit them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from copies import DIFFICULTIES, make_pair

from collation.core import defaults
from collation.engine.backbones import BACKBONES, load_backbone
from collation.engine.candidates import global_scores
from collation.engine.cascade import cheap_scores, coarse_features
from collation.engine.features import extract_features
from collation.engine.similarity import all_pairs, score_pairs


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def dense(size: str, difficulty: str, seed: int, backbone: str, device: str) -> dict[str, np.ndarray]:
    """The matrices of one generated pair (the module docstring), with the seconds of each stage printed."""
    n0, n1 = (int(v) for v in size.lower().split("x"))
    t = time.perf_counter()
    images0, images1, gt, drawn = make_pair(n0, n1, seed, difficulty)
    print(f"{size} {difficulty} seed {seed}: data {time.perf_counter() - t:.1f} s, {len(gt)} true pairs", flush=True)
    model = load_backbone(backbone, device=device)
    t = time.perf_counter()
    feats0 = extract_features([im.convert("RGB") for im in images0], model, dtype=torch.float16)
    feats1 = extract_features([im.convert("RGB") for im in images1], model, dtype=torch.float16)
    synchronize(device)
    print(f"  features {time.perf_counter() - t:.1f} s", flush=True)
    pairs = all_pairs(n0, n1).numpy()
    t = time.perf_counter()
    glob = global_scores(feats0, feats1)
    cheap = cheap_scores(
        coarse_features(feats0), coarse_features(feats1), pairs, 1, seed=defaults.SEED, partial=defaults.PARTIAL
    )
    synchronize(device)
    print(f"  global and cheap scores {time.perf_counter() - t:.1f} s", flush=True)
    t = time.perf_counter()
    s, _ = score_pairs(feats0, feats1, pairs)
    synchronize(device)
    print(f"  S_trans, {len(pairs)} pairs {time.perf_counter() - t:.1f} s", flush=True)
    return {
        "glob": np.asarray(glob, np.float32),
        "cheap": cheap.reshape(n0, n1).astype(np.float32),
        "s": s.numpy().reshape(n0, n1).astype(np.float32),
        "gt": np.asarray(gt, np.int64),
        "drawn": np.asarray(drawn, bool),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", action="append", required=True, help="N0xN1; repeat with --difficulty, --seed")
    parser.add_argument("--difficulty", action="append", required=True, choices=DIFFICULTIES)
    parser.add_argument("--seed", action="append", type=int, required=True)
    parser.add_argument("--backbone", default="efficientnet-lite0", choices=BACKBONES)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", required=True, help="folder of the .npz files")
    args = parser.parse_args()
    if not len(args.size) == len(args.difficulty) == len(args.seed):
        parser.error("give --size, --difficulty and --seed the same number of times")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for size, difficulty, seed in zip(args.size, args.difficulty, args.seed, strict=True):
        matrices = dense(size, difficulty, seed, args.backbone, args.device)
        np.savez_compressed(out / f"{size}-{difficulty}-{seed}.npz", **matrices)


if __name__ == "__main__":
    main()
