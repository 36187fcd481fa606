"""Which transpositions of a suspected copy S_trans should score: rules compared on the same scores.

With ``turns`` (the default) a second illustration the cheap score does not match well as drawn is *suspected*,
and S_trans also scores its pairs under the one transposition of highest cheap score, where that beats as
drawn ``TRANSPOSE_CHEAP_MARGIN`` times (docs/transpositions.md). This script scores every candidate pair of a
generated set (``bench_concordance.load_set``; the candidates and suspects of ``collation.engine.pipeline``)
under every transposition of ``turns`` and under the *mirrored turns* (mirrored, then turned by ±15°, ±30°,
±45°; not in the engine), by S_trans and by the cheap score, stores both in ``--cache``, and gives top-1 P_S
for each rule of choice, and the S_trans pairs it adds to as drawn:

- ``today``: ``turns``' eight, the likeliest by cheap score, where it beats as drawn by the margin (the engine's);
- ``gated2-of-8``: the two likeliest of the eight, each where it beats as drawn by the margin (issue 38's eleventh
  round built it in the engine too: docs/benchmarks.md);
- ``+mirrored``: the likeliest of the fourteen, where it beats as drawn by the margin;
- ``top1``, ``top2``: the fourteen, the one or two likeliest by cheap score, every pair of the suspect;
- ``gated2``: the two likeliest of the fourteen, each where it beats as drawn by the margin;
- ``suspects-all`` / ``all``: every transposition for the suspects' pairs / for every pair.

Every rule picks as the engine does since issue 38's eleventh round, from each suspect's pairs likeliest by the
manuscripts' order (``cascade.by_order``); the tenth round's tables were made when it picked over all its pairs.
Every rule reads the same scores, so they differ by the rule only. The RANSAC draws of transposition t are keyed
by t · n1 + j here, by the pair alone in the engine, so the scores differ from the engine's by a pair or so a set:
compare rules here with each other, not with bench_concordance.

    COLLATION_TEST_DATA=../shared/data/physiologus .venv/bin/python benchmarks/bench_choice.py \\
        --cache /tmp/choice --set 35x40:extreme:20 35x40:extreme:21
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_concordance import load_set, options_of

from collation.core import defaults
from collation.core.vocabulary import TURNS
from collation.engine.backbones import load_backbone
from collation.engine.candidates import scattered
from collation.engine.cascade import by_order, cheap_scores, coarse_features
from collation.engine.evaluation import accuracy
from collation.engine.features import MultiScaleFeatures
from collation.engine.pipeline import assemble, correspond, describe, find_candidates, suspects
from collation.engine.similarity import score_pairs
from collation.engine.transpositions import transpose_image, transposition_names

TODAY = transposition_names("turns")
NAMES = (*TODAY, *(f"mirror-{turn}" for turn in TURNS))
"""``turns``' eight, then the six mirrored turns: index t of the stored scores."""


def transposed(image: Image.Image, name: str) -> Image.Image:
    """``image`` under one of ``NAMES``: the engine's ``transpose_image``, twice for a mirrored turn."""
    if name.startswith("mirror-"):
        return transpose_image(transpose_image(image, "mirror"), name.removeprefix("mirror-"))
    return transpose_image(image, name)


def scores_of(spec: str, cache: Path) -> dict[str, np.ndarray]:
    """The candidates, their S_trans and cheap scores ``(T, P)`` under each of ``NAMES``, the suspects, the truth."""
    path = cache / f"{spec.replace(':', '_')}.choice.npz"
    if path.exists():
        return dict(np.load(path))
    options = options_of("")
    images0, images1, gt, _ = load_set(spec)
    model = load_backbone(options.backbone, device="cpu")
    feats0, feats1 = describe(images0, model, options), describe(images1, model, options)
    found = find_candidates(feats0, feats1, options)
    turned = describe([transposed(im, name) for name in NAMES[1:] for im in images1], model, options)
    every = MultiScaleFeatures.concat([feats1, turned])  # index t * n1 + j: image j under NAMES[t]
    n1, pairs = len(images1), found.pairs
    expanded = np.concatenate([np.stack([pairs[:, 0], t * n1 + pairs[:, 1]], axis=1) for t in range(len(NAMES))])
    s, _ = score_pairs(
        feats0,
        every,
        expanded,
        seed=options.seed,
        partial=options.partial,
        similarity=options.similarity,
        kernel=options.kernel,
    )
    cheap = cheap_scores(
        coarse_features(feats0), coarse_features(every), expanded, 1, seed=options.seed, partial=options.partial
    )
    out = {
        "pairs": pairs,
        "S": s.numpy().reshape(len(NAMES), -1),
        "cheap": cheap.reshape(len(NAMES), -1),
        "suspected": suspects(found).columns,
        "gt": gt,
        "shape": np.array([len(images0), n1]),
    }
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, **out)
    return out


def chosen(data: dict[str, np.ndarray], t_count: int, k: int, gated: bool) -> tuple[np.ndarray, int]:
    """S of the candidates ``(P,)`` when each suspect's pairs are also scored under its ``k`` likeliest of the
    first ``t_count`` transpositions (each column's best cheap score per transposition, over its
    ``TRANSPOSE_PICK_FROM`` pairs likeliest by the order, ``cascade.by_order``, as the engine picks), each
    only where its cheap score beats as drawn ``TRANSPOSE_CHEAP_MARGIN`` times when ``gated``; and the S_trans
    pairs that adds to as drawn."""
    s, cheap = data["S"][:t_count], data["cheap"][:t_count]
    pairs, every = data["pairs"], np.arange(len(data["pairs"]))
    j = pairs[:, 1]
    suspect = data["suspected"][j]
    drawn = scattered(tuple(int(v) for v in data["shape"]), pairs, cheap[0])
    few = np.flatnonzero(suspect)[by_order(pairs[suspect], drawn, defaults.TRANSPOSE_PICK_FROM)]
    best = np.full((int(data["shape"][1]), t_count - 1), -np.inf)
    np.maximum.at(best, j[few], cheap[1:, few].T)  # over the suspect's pairs likeliest by order, as the engine
    likeliest = np.argsort(-best, axis=1, kind="stable") + 1  # (n1, T - 1) transpositions, likeliest first
    out, added = s[0].copy(), 0
    for rank in range(k):
        t = likeliest[j, rank]
        asked = suspect & (cheap[t, every] > defaults.TRANSPOSE_CHEAP_MARGIN * cheap[0] if gated else True)
        out = np.where(asked, np.maximum(out, s[t, every]), out)
        added += int(asked.sum())
    return out, added


def rules(data: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, int]]:
    """Each rule's S of the candidates ``(P,)`` and the S_trans pairs it adds to as drawn."""
    t_count = len(data["S"])
    suspect = data["suspected"][data["pairs"][:, 1]]
    return {
        "today": chosen(data, len(TODAY), 1, True),
        "gated2-of-8": chosen(data, len(TODAY), 2, True),
        "+mirrored": chosen(data, t_count, 1, True),
        "top1": chosen(data, t_count, 1, False),
        "top2": chosen(data, t_count, 2, False),
        "gated2": chosen(data, t_count, 2, True),
        "suspects-all": (np.where(suspect, data["S"].max(axis=0), data["S"][0]), (t_count - 1) * int(suspect.sum())),
        "all": (data["S"].max(axis=0), (t_count - 1) * len(data["pairs"])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", nargs="+", required=True, help="N0xN1:difficulty:seed[:shared]")
    parser.add_argument("--cache", type=Path, required=True)
    args = parser.parse_args()
    torch.manual_seed(0)
    options = options_of("")
    means: dict[str, list[float]] = {}
    for spec in args.set:
        data = scores_of(spec, args.cache)
        row = [f"{spec} ({len(data['pairs'])} pairs):"]
        for name, (s, added) in rules(data).items():
            matrix, _ = assemble(tuple(int(v) for v in data["shape"]), data["pairs"], s, np.zeros(len(s), np.int8))
            p_s = accuracy(correspond({(0, 1): matrix}, options)[(0, 1)].P_S, data["gt"])
            means.setdefault(name, []).append(p_s)
            row.append(f"{name} {p_s:.3f} (+{added})")
        print(" ".join(row), flush=True)
    print("mean top-1 P_S: " + ", ".join(f"{name} {np.mean(v):.3f}" for name, v in means.items()))


if __name__ == "__main__":
    main()
