"""Top-1 decisions of the GPU path against the CPU float32 path, on generated sets that chose no parameter.

For each ``--set SIZE:DIFFICULTY:SEED`` (``benchmarks/copies.py``), runs the default pipeline (features,
the candidate cascade, S_trans of the candidates) once per variant and prints one table: the top-1
accuracy of S, N_S and P_S, the cascade's recall, the rows whose top-1 S differs from the CPU float32 run,
and the seconds of features and S_trans. The variants:

- ``cpu-float32``: the reference (backbone and products in float32 on the CPU);
- ``cuda``: the GPU with the default settings (feature precision ``auto``: bfloat16 under autocast);
- ``cuda-float32``: the GPU with a float32 backbone;
- ``cuda-seed1``: the default GPU run with RANSAC seed 1: the run-to-run noise of RANSAC's draws, the yardstick
  for the differences above;
- ``cuda-tf32``, ``cuda-bf16``: the default GPU run with S_trans's products in TF32 or bfloat16
  (``collation.engine.matching.PRODUCT_PRECISIONS``).

    python3 benchmarks/gpu_top1.py --set 400x200:moderate:0 --set 400x200:hard:0 --out /tmp/top1

The shared Physiologus data is found beside the repository, or under ``$COLLATION_TEST_DATA``.
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

from copies import make_pair

from collation.core import defaults
from collation.core.options import CollationOptions
from collation.engine.backbones import load_backbone
from collation.engine.candidates import UNSCORED, recall
from collation.engine.correspondences import mutual_best, normalize, propagate
from collation.engine.evaluation import accuracy
from collation.engine.features import extract_features
from collation.engine.pipeline import find_candidates
from collation.engine.similarity import score_pairs

VARIANTS = {
    # name: (device, feature precision, RANSAC seed, product precision)
    "cpu-float32": ("cpu", "float32", defaults.SEED, "float32"),
    "cuda": ("cuda", "auto", defaults.SEED, "float32"),
    "cuda-float32": ("cuda", "float32", defaults.SEED, "float32"),
    "cuda-seed1": ("cuda", "auto", 1, "float32"),
    "cuda-tf32": ("cuda", "auto", defaults.SEED, "tf32"),
    "cuda-bf16": ("cuda", "auto", defaults.SEED, "bfloat16"),
}


def synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def decisions(images: tuple[list, list], device: str, precision: str, seed: int, product: str, cache: dict) -> dict:
    """The sparse S of the default pipeline, and the seconds of its two stages (features cached per
    (device, precision): the seed and the product change S_trans only)."""
    key = (device, precision)
    if key not in cache:
        model = load_backbone(device=device, precision=precision)
        t = time.perf_counter()
        cache[key] = [extract_features(ims, model) for ims in images]
        synchronize()
        cache[(*key, "seconds")] = time.perf_counter() - t
    feats = cache[key]
    pairs = find_candidates(*feats, CollationOptions()).pairs
    t = time.perf_counter()
    s, _ = score_pairs(*feats, pairs, seed=seed, product_precision=product)
    synchronize()
    seconds = time.perf_counter() - t
    sparse = np.full((len(images[0]), len(images[1])), UNSCORED)
    sparse[pairs[:, 0], pairs[:, 1]] = s.numpy()
    return {"s": sparse, "pairs": pairs, "features": cache[(*key, "seconds")], "s_trans": seconds}


def table(name: str, variants: list[str], out: Path | None) -> None:
    size, difficulty, seed = name.split(":")
    n0, n1 = (int(v) for v in size.lower().split("x"))
    images0, images1, gt, _ = make_pair(n0, n1, int(seed), difficulty)
    images = ([im.convert("RGB") for im in images0], [im.convert("RGB") for im in images1])
    print(f"\n{size} {difficulty} seed {seed} ({len(gt)} true pairs)", flush=True)
    print("| variant | S / N_S / P_S | recall | rows whose top-1 S moved (true rows) | features s | S_trans s |")
    print("|---|---|---|---|---|---|")
    cache: dict = {}
    reference = None
    true_rows = np.zeros(n0, bool)
    true_rows[gt[:, 0]] = True
    for variant in variants:
        device, precision, ransac_seed, product = VARIANTS[variant]
        if device == "cuda" and not torch.cuda.is_available():
            continue
        run = decisions(images, device, precision, ransac_seed, product, cache)
        n = normalize(run["s"], defaults.NORMALIZATION)
        p = propagate(n, mutual_best(n))
        top = [accuracy(m, gt) for m in (run["s"], n, p)]
        choice = run["s"].argmax(axis=1)
        reference = choice if reference is None else reference
        moved = choice != reference
        print(
            f"| {variant} | {top[0]:.3f} / {top[1]:.3f} / {top[2]:.3f} | {recall(run['pairs'], gt):.3f} | "
            f"{moved.sum()} ({(moved & true_rows).sum()}) | {run['features']:.1f} | {run['s_trans']:.1f} |",
            flush=True,
        )
        if out:
            np.save(out / f"{size}-{difficulty}-{seed}-{variant}.npy", run["s"].astype(np.float32))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", action="append", required=True, help="SIZE:DIFFICULTY:SEED, e.g. 400x200:hard:0")
    parser.add_argument("--variant", action="append", choices=list(VARIANTS), help="default: all")
    parser.add_argument("--out", type=Path, help="a folder for each run's sparse S (.npy)")
    args = parser.parse_args()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    for name in args.set:
        table(name, args.variant or list(VARIANTS), args.out)


if __name__ == "__main__":
    main()
