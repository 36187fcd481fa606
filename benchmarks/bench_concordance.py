"""What the concordance keeps: true pairs grouped against unrelated pairs grouped, per weak rule.

Runs a collation's stages as ``collate match`` does (``collation.engine.pipeline``: features, the
cascade, S_trans, N_S, 2-cycles, P_S) on a generated manuscript pair (``benchmarks/copies.py``) or on
a control set with no true pair at all (``random``: all-different noise images; ``blank``: pages of
paper colour with scanner noise, and drawings), stores S, the candidate pairs and the ground truth in
``--cache`` (one ``.npz`` per data set and options), and prints the issue's columns: pairs scored,
recall of the true pairs inside them, top-1 S / N_S / P_S, true pairs grouped in the concordance,
unrelated pairs grouped, and time; then, for every weak rule (``--rules``), true pairs kept against
unrelated pairs grouped; then, on generated copies, the true pairs lost at each stage by the copy's style
(``copies.HARSH_STYLES``) and by its subject (a whole drawing, a quarter of one, a page crop): where the losses
are.

    flock /work/bench.lock .venv/bin/python benchmarks/bench_concordance.py --set 400x200:hard:1 --cache /tmp/cc
    .venv/bin/python benchmarks/bench_concordance.py --set random:40:0 blank:20:0 --cache /tmp/cc
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from copies import make_pair, page_crops

from collation.core.options import CollationOptions
from collation.engine.backbones import load_backbone
from collation.engine.candidates import recall
from collation.engine.concordance import PairEvidence, build_groups
from collation.engine.correspondences import PairResult
from collation.engine.evaluation import accuracy
from collation.engine.pipeline import (
    assemble,
    choose_transpositions,
    correspond,
    describe,
    describe_transposed,
    find_candidates,
    score_candidates,
    suspects,
)
from collation.engine.transpositions import picks_transpositions
from collation.engine.weak import is_blank, weak_matches


def control_set(kind: str, n: int, seed: int) -> tuple[list[Image.Image], list[Image.Image], np.ndarray, list[str]]:
    """Two witnesses with no true pair: ``random`` (n noise images of 48-160 px each) or ``blank`` (n blank
    pages with 2-15 grey levels of noise, and n page crops of script, each witness its own)."""
    rng = np.random.default_rng(seed)

    def noise() -> Image.Image:
        w, h = (int(v) for v in rng.integers(48, 160, 2))
        return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))

    def blank() -> Image.Image:
        w, h = (int(v) for v in rng.integers(120, 400, 2))
        paper = rng.uniform(170, 235, 3)
        pixels = paper + rng.normal(0, rng.uniform(2, 15), (h, w, 1))
        return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))

    if kind == "random":
        return [noise() for _ in range(n)], [noise() for _ in range(n)], np.zeros((0, 2), dtype=np.int64), []
    crops = page_crops(2 * n, rng)
    return (
        [blank() for _ in range(n)] + crops[:n],
        [blank() for _ in range(n)] + crops[n:],
        np.zeros((0, 2), dtype=np.int64),
        [],
    )


def load_set(spec: str) -> tuple[list[Image.Image], list[Image.Image], np.ndarray, list[str]]:
    """``N0xN1:difficulty:seed[:shared]`` (``copies.make_pair``; shared: the true pairs, e.g. 30), or
    ``random:n:seed`` / ``blank:n:seed`` (``control_set``): both witnesses, the true pairs and the style of
    each true pair's copy ("" where it has none)."""
    parts = spec.split(":")
    if parts[0] in ("random", "blank"):
        return control_set(parts[0], int(parts[1]), int(parts[2]))
    n0, n1 = (int(v) for v in parts[0].lower().split("x"))
    shared = int(parts[3]) if len(parts) > 3 else None
    images0, images1, gt, _ = make_pair(n0, n1, int(parts[2]), parts[1], shared)
    return images0, images1, gt, [images1[j].info.get("style", "") for j in gt[:, 1]]


def options_of(text: str) -> CollationOptions:
    return CollationOptions.parse(json.loads(text) if text else {})


def run(spec: str, options: CollationOptions, cache: Path, tag: str) -> dict:
    """The stages of ``run_collation`` on one data set, timed; S, candidates and ground truth cached."""
    path = cache / f"{spec.replace(':', '_')}.{tag}.npz"
    if path.exists():
        data = dict(np.load(path, allow_pickle=False))
        return {k: (v if v.ndim else v.item()) for k, v in data.items()}
    images0, images1, gt, styles = load_set(spec)
    subjects = [images0[i].info.get("subject", "page crop") for i in gt[:, 0]] if len(gt) else []
    model = load_backbone(options.backbone, device="cpu")
    t0 = time.perf_counter()
    f0 = describe(images0, model, options)
    f1 = describe(images1, model, options)
    picks = picks_transpositions(options.transpositions)
    second = f1 if picks else describe_transposed(images1, model, options, f1)
    t1 = time.perf_counter()
    found = find_candidates(f0, second, options)
    pairs = found.pairs
    turned1, turned_s = None, 0.0
    if picks:  # as run_collation: the suspected illustrations described transposed, then each pair's choice
        suspected = suspects(found)
        t = time.perf_counter()
        pairs, turns = choose_transpositions(f0, images1, model, pairs, suspected, options)
        t_choice = time.perf_counter()
        turned1 = describe_transposed(images1, model, options, f1, turns=turns)
        turned_s = time.perf_counter() - t_choice
    t2 = time.perf_counter()
    s, t = score_candidates(f0, second, pairs, options, turned=turned1)
    t3 = time.perf_counter()
    matrix, turned = assemble((len(images0), len(images1)), pairs, s, t)
    out = {
        "S": matrix,
        "T": turned,
        "pairs": pairs[:, :2],
        "gt": gt,
        "styles": np.array(styles, dtype=str),
        "subjects": np.array(subjects, dtype=str),
        "blank0": np.array([is_blank(im) for im in images0]),
        "blank1": np.array([is_blank(im) for im in images1]),
        "features_s": t1 - t0 + turned_s,
        "candidates_s": t2 - t1 - turned_s,
        "turned": np.count_nonzero(pairs[:, 2]) if picks else 0,
        "strans_s": t3 - t2,
    }
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, **out)
    return out


def grouped(data: dict, pr: PairResult, weak: np.ndarray) -> set[tuple[int, int]]:
    """The pairs the concordance of the two witnesses puts in one row (``pr``: their ``correspond`` result)."""
    evidence = {(0, 1): PairEvidence(pr.P_S, pr.two_cycles, {}, weak)}
    rows = build_groups({0: data["S"].shape[0], 1: data["S"].shape[1]}, evidence)
    return {(g.members[0].position, g.members[1].position) for g in rows if len(g.members) == 2}


RULES = ("fixed", "learned")


def weak_of(rule: str, data: dict, options: CollationOptions, pr: PairResult) -> np.ndarray:
    """The weak matches by the fixed floor, or the learned one (``collation.engine.weak``)."""
    cycles = pr.two_cycles if rule == "learned" else None
    return weak_matches(data["S"], options.floor, data["blank0"], data["blank1"], cycles=cycles)


def report(spec: str, data: dict, options: CollationOptions, rules: list[str]) -> None:
    gt = data["gt"]
    pr = correspond({(0, 1): data["S"]}, options)[(0, 1)]
    truth = {tuple(p) for p in gt.tolist()}
    top = {
        name: accuracy(m, gt) if len(gt) else float("nan")
        for name, m in (("S", pr.S), ("N_S", pr.N_S), ("P_S", pr.P_S))
    }
    scored = int(np.isfinite(data["S"][gt[:, 0], gt[:, 1]]).sum()) if len(gt) else 0
    seconds = float(data["features_s"] + data["candidates_s"] + data["strans_s"])
    head = (
        f"{spec}: pairs {len(data['pairs'])}, true scored {scored}/{len(gt)}, recall "
        f"{recall(data['pairs'], gt) if len(gt) else float('nan'):.3f}, top-1 S/N_S/P_S "
        f"{top['S']:.3f}/{top['N_S']:.3f}/{top['P_S']:.3f}, time {seconds:.1f} s (features "
        f"{float(data['features_s']):.1f}, candidates {float(data['candidates_s']):.1f}, "
        f"S_trans {float(data['strans_s']):.1f}; {int(data.get('turned', 0))} pairs also scored transposed)"
    )
    print(head)
    groups = {rule: grouped(data, pr, weak_of(rule, data, options, pr)) for rule in {*rules, "learned"}}
    for rule in rules:
        kept, unrelated = len(groups[rule] & truth), len(groups[rule] - truth)
        print(f"  {rule:<10} true grouped {kept:4d}/{len(truth)}, unrelated grouped {unrelated:4d}")
    for name, key in (("style", "styles"), ("subject", "subjects")):
        kinds = [str(v) for v in data.get(key, [])]  # caches of earlier runs have none
        if any(kinds):
            print(f"  by {name:<8}" + by_kind(kinds, gt, data["S"], pr.P_S, groups["learned"]))


def by_kind(kinds: list[str], gt: np.ndarray, s: np.ndarray, p_s: np.ndarray, together: set) -> str:
    """Per kind of true pair (the copy's style, or its subject: a whole drawing, a quarter of one, a page crop):
    its true pairs, and how many of them are unscored (the candidates lost them), wrong at top-1 by P_S, and not
    grouped by the learned floor."""
    parts = []
    for kind in sorted(set(kinds)):
        pairs = [(i, j) for (i, j), k in zip(gt.tolist(), kinds, strict=True) if k == kind]
        unscored = sum(not np.isfinite(s[i, j]) for i, j in pairs)
        wrong = sum(int(np.argmax(p_s[i])) != j for i, j in pairs)
        apart = sum((i, j) not in together for i, j in pairs)
        parts.append(f"{kind or 'none'} {len(pairs)}: {unscored} unscored, {wrong} wrong, {apart} not grouped")
    return "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--set", nargs="+", required=True, help="N0xN1:difficulty:seed[:shared], random:n:seed, blank:n:seed"
    )
    parser.add_argument("--options", default="", help="the collation's options as JSON (default: the defaults)")
    parser.add_argument("--tag", default="default", help="names the cached matrices of these options")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--rules", nargs="+", default=list(RULES), choices=RULES)
    args = parser.parse_args()
    torch.manual_seed(0)
    options = options_of(args.options)
    for spec in args.set:
        report(spec, run(spec, options, args.cache, args.tag), options, args.rules)


if __name__ == "__main__":
    main()
