"""S_trans, interleaved A/B: tasks side by side on one intra-op thread each, against one task on every thread.

Both sides score the same candidate pairs (the cascade's, at the default options) of a manuscript pair of
``benchmarks/bench_scale.py --keep`` with ``score_pairs``, alternately ``--repeats`` times in one process, so
a machine loaded by others slows both; prints wall time, the process's CPU time and pairs/s of each run,
the ratios, the load average, torch's threads and the CPU's SIMD flags, and whether the scores are
identical (they must be: RANSAC draws are keyed by the pair, not by the order of work).

    .venv/bin/python benchmarks/bench_scale.py --size 400x200 --difficulty hard --keep /tmp/d400hard --data-only
    .venv/bin/python benchmarks/bench_strans.py /tmp/d400hard --pairs 2000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collation.core.options import CollationOptions
from collation.engine.backbones import NATIVE_BF16_FLAGS, load_backbone, read_cpu_flags
from collation.engine.features import extract_features
from collation.engine.illustrations import folder_illustrations
from collation.engine.pipeline import candidate_pairs
from collation.engine.similarity import score_pairs

SIMD_FLAGS = ("avx2", "avx512f", "avx512_vnni", *NATIVE_BF16_FLAGS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="a --keep folder of bench_scale.py (A/ and B/)")
    parser.add_argument("--pairs", type=int, default=2000, help="candidate pairs scored (an even sample)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    flags = read_cpu_flags()
    threads = torch.get_num_threads()
    print(f"torch {torch.__version__}, {threads} threads, capability {torch.backends.cpu.get_cpu_capability()}")
    print(f"CPU flags: {' '.join(f for f in SIMD_FLAGS if f in flags) or 'none of ' + ', '.join(SIMD_FLAGS)}")
    backbone = load_backbone(device="cpu", precision="float32")
    feats = [extract_features([i.image for i in folder_illustrations(args.data / s)], backbone) for s in "AB"]
    pairs = candidate_pairs(*feats, CollationOptions())
    sample = pairs[np.linspace(0, len(pairs) - 1, min(args.pairs, len(pairs))).astype(int)]
    print(f"{len(sample)} of the {len(pairs)} candidate pairs of {len(feats[0])} x {len(feats[1])}")
    score_pairs(*feats, sample[:32])  # warm-up: oneDNN's first primitives

    sides = {"one task, every thread": 1, f"{threads} tasks side by side": threads}
    wall: dict[str, list[float]] = {name: [] for name in sides}
    scores = {}
    for repeat in range(args.repeats):
        print(f"repeat {repeat}, load average {os.getloadavg()[0]:.2f}:")
        for name, workers in sides.items():
            cpu, start = time.process_time(), time.perf_counter()
            scores[name], _ = score_pairs(*feats, sample, workers=workers)
            seconds = time.perf_counter() - start
            wall[name].append(seconds)
            rate = len(sample) / seconds
            print(f"  {name}: {seconds:.2f} s, CPU {time.process_time() - cpu:.2f} s, {rate:.0f} pairs/s")
        one, many = (wall[name][-1] for name in sides)
        print(f"  ratio {one / many:.2f}")
    one, many = (min(wall[name]) for name in sides)
    print(f"fastest runs: {len(sample) / one:.0f} against {len(sample) / many:.0f} pairs/s, ratio {one / many:.2f}")
    same = torch.equal(*scores.values())
    print(f"scores: {'identical' if same else 'DIFFERENT'} ({len(sample)} pairs)")


if __name__ == "__main__":
    main()
