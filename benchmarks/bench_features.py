"""Features stage, interleaved A/B: the backbone of a baseline commit against this tree's, in one process.

The baseline's ``collation/engine/backbones.py`` is read from git (``--baseline``) and loaded as a module of
its own; both backbones then run this tree's ``extract_features`` on the same images, alternately
``--repeats`` times, so a machine loaded by others slows both alike. Prints images/s of each run, the ratio of
the fastest runs and of each side-by-side pair, torch's threads and the CPU's SIMD flags, then the largest
difference of the features and, with ``--pair``, the top-1 decisions (S both ways, 2-cycles of P_S) of the two
feature sets on a manuscript pair of ``benchmarks/bench_scale.py --keep``.

    .venv/bin/python benchmarks/bench_scale.py --size 200x100 --difficulty moderate --keep /tmp/feat200 --data-only
    .venv/bin/python benchmarks/bench_features.py /tmp/feat200 --pair
    COLLATION_FEATURE_PRECISION=bfloat16 .venv/bin/python benchmarks/bench_features.py /tmp/feat200 --pair
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collation.core.options import CollationOptions
from collation.core.settings import Settings
from collation.engine.backbones import NATIVE_BF16_FLAGS, load_backbone, read_cpu_flags
from collation.engine.correspondences import collate
from collation.engine.features import MultiScaleFeatures, extract_features
from collation.engine.illustrations import folder_illustrations
from collation.engine.pipeline import assemble, candidate_pairs, score_candidates

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "0e5ca33"
"""main before issue 28's features work."""

SIMD_FLAGS = ("avx2", "avx512f", "avx512_vnni", *NATIVE_BF16_FLAGS)


def baseline_backbone(commit: str, device: str) -> torch.nn.Module:
    """The efficientnet-lite0 backbone as ``commit``'s ``collation/engine/backbones.py`` builds it."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:collation/engine/backbones.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "baseline_backbones.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("baseline_backbones", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load_backbone("efficientnet-lite0", device=device)


def timed(images: list, backbone: torch.nn.Module) -> tuple[float, MultiScaleFeatures]:
    start = time.perf_counter()
    feats = extract_features(images, backbone)
    return time.perf_counter() - start, feats


def decisions(feats0: MultiScaleFeatures, feats1: MultiScaleFeatures) -> dict[str, np.ndarray]:
    """Top-1 of S both ways and the 2-cycles of P_S, with the default options (cascade, S_trans) but as drawn
    only (features, not images, are compared here)."""
    options = CollationOptions(transpositions="none")
    pairs = candidate_pairs(feats0, feats1, options)
    scores, winners = score_candidates(feats0, feats1, pairs, options)
    matrix, _ = assemble((len(feats0), len(feats1)), pairs, scores, winners)
    result = collate({(0, 1): matrix}, normalization=options.normalization, propagation=options.propagation)[(0, 1)]
    return {"rows": matrix.argmax(1), "cols": matrix.argmax(0), "two_cycles": result.two_cycles}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="a --keep folder of bench_scale.py (A/ and B/)")
    parser.add_argument("--limit", type=int, default=200, help="images of A/ timed")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", default=BASELINE, help="commit whose backbones.py is the baseline")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--pair", action="store_true", help="also compare the top-1 decisions on A x B")
    args = parser.parse_args()

    precision = Settings.from_env().feature_precision
    old = baseline_backbone(args.baseline, args.device)
    new = load_backbone(device=args.device, precision=precision)
    flags = read_cpu_flags()
    capability = torch.backends.cpu.get_cpu_capability()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, capability {capability}")
    print(f"CPU flags: {' '.join(f for f in SIMD_FLAGS if f in flags) or 'none of ' + ', '.join(SIMD_FLAGS)}")
    print(f"precision setting {precision}: new backbone computes in {new.compute_dtype}; baseline {args.baseline}")

    images = [ill.image for ill in folder_illustrations(args.data / "A")][: args.limit]
    extract_features(images[:8], old), extract_features(images[:8], new)  # warm-up: oneDNN's first primitives
    times: dict[str, list[float]] = {"baseline": [], "new": []}
    for repeat in range(args.repeats):
        for name, backbone in (("baseline", old), ("new", new)):
            seconds, _ = timed(images, backbone)
            times[name].append(seconds)
        base, now = times["baseline"][-1], times["new"][-1]
        print(f"repeat {repeat}: baseline {len(images) / base:.2f} images/s, new {len(images) / now:.2f}", end="")
        print(f", ratio {base / now:.2f}")
    best = {name: min(values) for name, values in times.items()}
    rate = {name: len(images) / seconds for name, seconds in best.items()}
    print(f"fastest runs: baseline {rate['baseline']:.2f} images/s, new {rate['new']:.2f}", end="")
    print(f", ratio {best['baseline'] / best['new']:.2f}")

    feats = {}
    for name, backbone in (("baseline", old), ("new", new)):
        feats[name] = [
            extract_features([i.image for i in folder_illustrations(args.data / side)], backbone) for side in "AB"
        ]
    diff = max(float((feats["baseline"][k].desc - feats["new"][k].desc).abs().max()) for k in range(2))
    print(f"features: max abs difference {diff:.3g} over A and B")
    if args.pair:
        before, after = decisions(*feats["baseline"]), decisions(*feats["new"])
        for key in before:
            same = np.array_equal(before[key], after[key])
            print(f"top-1 {key}: {'identical' if same else 'DIFFERENT'} ({len(before[key])} entries)")


if __name__ == "__main__":
    main()
