"""Illustration detection on the shared Physiologus folios: recall, stray boxes, speed, collation.

Every folio of P2 and P3 in the shared data (covers, flyleaves and pages of script included) is
run through the detector. The authors' VIA boxes are the truth; folios without a VIA box are pages
without illustrations. Prints recall at IoU >= 0.5, stray boxes per folio (detections matching no
true box), seconds per folio, and, with ``--collate``, the P2 x P3 collation from the detected
regions against the ground truth (the 15 usable pairs, as tests/engine/test_physiologus.py).

    .venv/bin/python benchmarks/bench_detect.py                   # detection figures
    .venv/bin/python benchmarks/bench_detect.py --collate         # and the collation from detected regions
    .venv/bin/python benchmarks/bench_detect.py --model det.pt    # a TorchScript detector instead
    .venv/bin/python benchmarks/bench_detect.py --generated set-aside --pages 50  # composed pages (detect_pages.py)

``--generated tuned|set-aside`` measures on pages composed by ``benchmarks/detect_pages.py`` instead
(made in memory, never written): recall, stray boxes, seconds a page (mean and median), recall per
kind of drawing and per condition (what lies beside the drawing, what the page holds: issue 21's
failure kinds), drawings split into several boxes, and how many boxes at each score are real
illustrations (the score's calibration).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from physiologus import data_dir, truth

from collation.core.options import CollationOptions
from collation.engine.detection import detect_illustrations, load_detector
from collation.engine.illustrations import open_image

REPO = Path(__file__).resolve().parent.parent


def intersection(a, b) -> int:
    """The area common to boxes a and b (x, y, w, h)."""
    iw = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    ih = max(0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    return iw * ih


def iou(a, b) -> float:
    inter = intersection(a, b)
    return inter / (a[2] * a[3] + b[2] * b[3] - inter) if inter else 0.0


def inside(a, b) -> float:
    """The share of box a (x, y, w, h) that lies within box b."""
    return intersection(a, b) / max(1, a[2] * a[3])


def evaluate(root: Path, detector, *, threshold: float = 0.5, verbose: bool = False) -> dict:
    """Recall, stray boxes and seconds per folio over the P2 and P3 folios."""
    found = missed = stray = folios = 0
    seconds = 0.0
    per_folio = {}
    for alias in ("P2", "P3"):
        for name, boxes in truth(root, alias).items():
            image = open_image(root / alias / "folios" / name)
            start = time.perf_counter()
            detections = detect_illustrations(image, detector=detector)
            seconds += time.perf_counter() - start
            folios += 1
            hit = [any(iou(t, d.xywh) >= threshold for d in detections) for t in boxes]
            extra = [d for d in detections if not any(iou(t, d.xywh) >= threshold for t in boxes)]
            found, missed, stray = found + sum(hit), missed + hit.count(False), stray + len(extra)
            per_folio[f"{alias}/{name}"] = [list(d.xywh) for d in detections]
            if verbose and (not all(hit) or extra):
                best = [max((round(iou(t, d.xywh), 2) for d in detections), default=0) for t in boxes]
                print(
                    f"{alias}/{name}: truth {boxes} best IoU {best}; detected "
                    f"{[(d.xywh, d.score) for d in detections]}",
                    file=sys.stderr,
                )
    return {
        "folios": folios,
        "true_boxes": found + missed,
        "recall": found / max(1, found + missed),
        "stray_boxes": stray,
        "stray_per_folio": stray / max(1, folios),
        "seconds_per_folio": seconds / folios,
        "detections": per_folio,
    }


def evaluate_generated(part: str, n: int, detector, *, threshold: float = 0.5, verbose: bool = False) -> dict:
    """Recall, stray boxes, seconds a page and (score, real) per box on n composed pages of a part."""
    from detect_pages import pages

    found, total, stray, seconds, scored = {}, {}, 0, [], []
    by_condition, split = {}, 0
    for name, image, truths in pages(part, n):
        start = time.perf_counter()
        detections = detect_illustrations(image, detector=detector)
        seconds.append(time.perf_counter() - start)
        for t in truths:
            hit = any(iou(t["xywh"], d.xywh) >= threshold for d in detections)
            found[t["kind"]] = found.get(t["kind"], 0) + hit
            total[t["kind"]] = total.get(t["kind"], 0) + 1
            for condition in [f"beside a {t['near']}" if t["near"] else "nothing beside", *t["page"]]:
                counts = by_condition.setdefault(condition, [0, 0])
                counts[0], counts[1] = counts[0] + hit, counts[1] + 1
            split += sum(inside(d.xywh, t["xywh"]) >= 0.5 for d in detections) >= 2
            if verbose and not hit:
                best = max((round(iou(t["xywh"], d.xywh), 2) for d in detections), default=0)
                print(f"{name}: missed {t} best IoU {best}; {[(d.xywh, d.score) for d in detections]}", file=sys.stderr)
        for d in detections:
            real = any(iou(t["xywh"], d.xywh) >= threshold for t in truths)
            stray += not real
            scored.append((d.score, real))
            if verbose and not real:
                print(f"{name}: stray {d.xywh} score {d.score:.2f}", file=sys.stderr)
    return {
        "pages": n,
        "true_boxes": sum(total.values()),
        "recall": sum(found.values()) / max(1, sum(total.values())),
        "found_per_kind": {k: (found[k], total[k]) for k in sorted(total)},
        "found_per_condition": {c: tuple(counts) for c, counts in sorted(by_condition.items())},
        "split_drawings": split,
        "stray_boxes": stray,
        "stray_per_page": stray / max(1, n),
        "seconds_per_page": sum(seconds) / max(1, n),
        "median_seconds": sorted(seconds)[len(seconds) // 2] if seconds else 0.0,
        "scored": scored,
    }


def calibration(scored: list[tuple[float, bool]], edges=(0.5, 0.6, 0.7, 0.8, 0.9)) -> list[tuple[float, int, float]]:
    """(threshold, boxes at or above it, share of them that are real illustrations) per threshold."""
    out = []
    for e in edges:
        above = [real for score, real in scored if score >= e]
        out.append((e, len(above), sum(above) / max(1, len(above))))
    return out


def collate_detected(root: Path, detector, backbone: str) -> dict:
    """P2 x P3 from the detected regions of the illustrated folios, scored against the ground truth."""
    import numpy as np

    from collation.engine.evaluation import accuracy, check_ground_truth, load_ground_truth
    from collation.engine.illustrations import detected_illustrations
    from collation.engine.pipeline import Manuscript, run_collation

    manuscripts, truth_index = [], []
    for alias in ("P2", "P3"):
        # The folios that hold illustrations 0-14: the regions the ground truth can be checked on.
        folios = {name: boxes for name, boxes in truth(root, alias).items() if boxes}
        ills = detected_illustrations([root / alias / "folios" / n for n in folios], detector=detector)
        manuscripts.append(Manuscript(alias, ills))
        # Each detected region stands for the annotated illustration it overlaps (IoU >= 0.5), if any.
        order = [(name, box) for name, boxes in folios.items() for box in boxes]
        index = {}
        for i, ill in enumerate(ills):
            hits = [
                k
                for k, (name, box) in enumerate(order)
                if name == ill.source["folio"] and iou(box, ill.source["xywh"]) >= 0.5
            ]
            if hits:
                index[hits[0]] = i
        truth_index.append(index)
    result = run_collation(manuscripts, CollationOptions(backbone=backbone), device="cpu")
    pr = result.pairs[(0, 1)]
    gt = check_ground_truth(load_ground_truth(root / "ground_truth" / "P2-P3.json"), (15, 15), restrict=True)
    gt_detected = np.array(
        [
            (truth_index[0][a], truth_index[1][b])
            for a, b in np.asarray(gt).tolist()
            if a in truth_index[0] and b in truth_index[1]
        ],
        dtype=np.int64,
    )
    n = [len(m.illustrations) for m in manuscripts]
    scores = {name: accuracy(np.asarray(getattr(pr, name)), gt_detected) for name in ("S", "N_S", "P_S")}
    return {"illustrations": n, "n_gt": len(gt_detected), "accuracy": scores}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=data_dir(), help="the Physiologus folder ($COLLATION_TEST_DATA)")
    parser.add_argument("--model", help="a TorchScript detector (default: the built-in one)")
    parser.add_argument("--collate", action="store_true", help="also collate P2 x P3 from the detected regions")
    parser.add_argument("--backbone", default="efficientnet-lite0")
    parser.add_argument("--verbose", action="store_true", help="print every folio with a miss or a stray box")
    parser.add_argument("--generated", choices=("tuned", "set-aside"), help="composed pages (detect_pages.py)")
    parser.add_argument("--pages", type=int, default=50, help="how many composed pages")
    args = parser.parse_args()
    if not (args.data / "annotations" / "P2.via.json").is_file():
        sys.exit(f"no Physiologus data at {args.data} (set COLLATION_TEST_DATA)")
    detector = load_detector(args.model)
    print(
        f"load average before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs, "
        f"torch threads {__import__('torch').get_num_threads()}"
    )
    if args.generated:
        r = evaluate_generated(args.generated, args.pages, detector, verbose=args.verbose)
        print(f"detector {detector.name}: {args.generated} part, {r['pages']} pages, {r['true_boxes']} drawings")
        per_kind = {k: f"{f}/{t}" for k, (f, t) in r["found_per_kind"].items()}
        per_condition = {c: f"{f}/{t}" for c, (f, t) in r["found_per_condition"].items()}
        print(f"  recall at IoU >= 0.5   {r['recall']:.3f}  per kind {per_kind}")
        print(f"  recall per condition   {per_condition}")
        print(f"  drawings split in two or more boxes: {r['split_drawings']}")
        print(f"  stray boxes            {r['stray_boxes']} ({r['stray_per_page']:.3f} per page)")
        print(f"  seconds per page       {r['seconds_per_page']:.3f} (median {r['median_seconds']:.3f})")
        for e, n, share in calibration(r["scored"]):
            print(f"  score >= {e:.1f}: {n} boxes, {share:.3f} real illustrations")
        print(f"load average after: {os.getloadavg()[0]:.2f} (1 min)")
        return
    report = evaluate(args.data, detector, verbose=args.verbose)
    print(f"detector {detector.name}: {report['folios']} folios, {report['true_boxes']} true boxes")
    print(f"  recall at IoU >= 0.5   {report['recall']:.3f}")
    print(f"  stray boxes            {report['stray_boxes']} ({report['stray_per_folio']:.3f} per folio)")
    print(f"  seconds per folio      {report['seconds_per_folio']:.3f}")
    if args.collate:
        c = collate_detected(args.data, detector, args.backbone)
        acc = c["accuracy"]
        print(
            f"  P2 x P3 from detected regions ({c['illustrations'][0]} x {c['illustrations'][1]}, "
            f"{c['n_gt']} of 15 ground-truth pairs detected): top-1 S {acc['S']:.3f}  N_S {acc['N_S']:.3f}  "
            f"P_S {acc['P_S']:.3f}; over all 15 (a missed illustration counts as wrong): "
            f"P_S {acc['P_S'] * c['n_gt'] / 15:.3f}"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
