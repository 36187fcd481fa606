"""Which copies to suspect of being transposed: by the cheap score (the engine's rule) or by S_trans as drawn.

With ``turns`` (the default) the cost on copies as drawn is the *suspected* second illustrations: each is
described under seven transpositions at the query scale, its pairs get seven cheap scores each, and the
chosen turn is described at five scales and scored (docs/transpositions.md). The engine suspects from the
cascade's cheap scores, before S_trans, because its plan step must store the pairs to score; this script
measures what suspecting from S_trans as drawn would give instead (the same rule, ``suspect_transposed``, on
S rather than on the cheap score; the choice of turn and its margin unchanged): how many illustrations each
rule suspects, the time their transpositions take, and top-1 P_S.

    COLLATION_TEST_DATA=../shared/data/physiologus .venv/bin/python benchmarks/bench_suspects.py \\
        --set 400x200:moderate:7 35x40:extreme:35
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

from bench_concordance import load_set, options_of

from collation.engine import pipeline
from collation.engine.backbones import load_backbone
from collation.engine.cascade import Suspects, suspect_transposed
from collation.engine.evaluation import accuracy
from collation.engine.similarity import score_pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", nargs="+", required=True, help="N0xN1:difficulty:seed[:shared]")
    args = parser.parse_args()
    torch.manual_seed(0)
    options = options_of("")
    settings = {"seed": options.seed, "partial": options.partial, "kernel": options.kernel}
    model = load_backbone(options.backbone, device="cpu")
    for spec in args.set:
        images0, images1, gt, _ = load_set(spec)
        feats0, feats1 = pipeline.describe(images0, model, options), pipeline.describe(images1, model, options)
        found = pipeline.find_candidates(feats0, feats1, options)
        t = time.perf_counter()
        drawn = score_pairs(feats0, feats1, found.pairs, **settings)[0].numpy()
        drawn_s = time.perf_counter() - t
        by_s = suspect_transposed(found.pairs, drawn, found.shape).columns
        row = [f"{spec}: S_trans as drawn {drawn_s:.1f} s;"]
        for name, columns in (("cheap", pipeline.suspects(found).columns), ("S_trans", by_s)):
            t = time.perf_counter()
            chosen, turns = pipeline.choose_transpositions(
                feats0, images1, model, found.pairs, Suspects(columns, found.cheap), options
            )
            turned = pipeline.describe_transposed(images1, model, options, feats1, turns=turns)
            asked = chosen[:, 2] > 0  # score_candidates, with S as drawn computed once for both rules
            s = drawn.copy()
            s[asked] = np.maximum(s[asked], score_pairs(feats0, turned, chosen[asked, :2], **settings)[0].numpy())
            spent = time.perf_counter() - t
            matrix, _ = pipeline.assemble(found.shape, found.pairs, s, np.zeros(len(s), np.int8))
            p_s = accuracy(pipeline.correspond({(0, 1): matrix}, options)[(0, 1)].P_S, gt)
            row.append(
                f"by {name}: {int(columns.sum())} suspected, {np.count_nonzero(chosen[:, 2])} pairs transposed, "
                f"{spent:.1f} s, P_S {p_s:.3f};"
            )
        print(" ".join(row), flush=True)


if __name__ == "__main__":
    main()
