"""What turning and mirroring back would give: an oracle of the transpositions on the extreme copies.

The true pairs of an ``extreme`` set (``benchmarks/copies.py``: each copy mirrored 30% of the time, turned in
±30°, half of them cut) that are wrong at top-1 by P_S under the default options (``bench_concordance.py``'s
collation, read from or written to its ``--cache``) are scored again by S_trans with the copy under the exact
inverse of the generator's own turn and mirror (``copies.undo_transpose``; the cut stays). Where that S still
falls below the S of the illustration that won, no choice of transposition can make the pair right: the copy
itself, not its turn or mirror, is what is lost (issue 38, tenth round, docs/transpositions.md).

    COLLATION_TEST_DATA=../shared/data/physiologus .venv/bin/python benchmarks/bench_inverse.py \\
        --cache /tmp/cc --set 35x40:extreme:21 35x40:extreme:22
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_concordance import load_set, options_of, run
from copies import undo_transpose

from collation.engine.backbones import load_backbone
from collation.engine.pipeline import correspond, describe, score_candidates


def report(spec: str, cache: Path) -> None:
    options, as_drawn = options_of(""), options_of('{"transpositions": "none"}')
    images0, images1, gt, styles = load_set(spec)
    data = run(spec, options, cache, "default")
    s = data["S"]
    p_s = correspond({(0, 1): s}, options)[(0, 1)].P_S
    wrong = [(k, i, j, int(np.argmax(p_s[i]))) for k, (i, j) in enumerate(gt.tolist()) if np.argmax(p_s[i]) != j]
    print(f"{spec}: {len(wrong)} of {len(gt)} true pairs wrong at top-1 by P_S (first manuscript to second)")
    if not wrong:
        return
    model = load_backbone(options.backbone, device="cpu")
    feats0 = describe([images0[i] for _, i, _, _ in wrong], model, as_drawn)
    feats1 = describe([undo_transpose(images1[j]) for _, _, j, _ in wrong], model, as_drawn)
    undone, _ = score_candidates(feats0, feats1, np.stack([np.arange(len(wrong))] * 2, axis=1), as_drawn)
    for (k, i, j, won), u in zip(wrong, undone, strict=True):
        done = images1[j].info["transposed"]
        how = ("mirrored, " if done["mirrored"] else "") + f"turned {done['angle']:+.0f}°"
        how += f", cut {done['cut'][1]:.0%} from the {done['cut'][0]}" if done["cut"] else ""
        subject = images0[i].info.get("subject", "page crop")
        print(
            f"  {i:3d} -> {j:3d}: {subject}, {styles[k]}, {how}: S {s[i, j]:.3f} as scored, {u:.3f} under the exact"
            f" inverse; the winner {won}: {s[i, won]:.3f}"
        )
    rescued = sum(u > s[i, won] for (_, i, _, won), u in zip(wrong, undone, strict=True))
    print(f"  {rescued} of {len(wrong)} would beat their winner's S under the exact inverse")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", nargs="+", required=True, help="N0xN1:extreme:seed[:shared]")
    parser.add_argument("--cache", type=Path, required=True, help="bench_concordance.py's cache of matrices")
    args = parser.parse_args()
    torch.manual_seed(0)
    for spec in args.set:
        if spec.split(":")[1] != "extreme":
            raise SystemExit(f"{spec}: only extreme copies are turned and mirrored")
        report(spec, args.cache)


if __name__ == "__main__":
    main()
