"""Speed and memory of the engine: feature extraction images/s, S_trans pairs/s, peak memory.

Prints figures; asserts nothing. Illustrations are synthetic drawings with the aspect ratios and
sizes of real crops. ResNet-50 runs with random weights when its file is absent: the cost of a
forward pass and of matching 1024-channel features does not depend on the weights.

    .venv/bin/python benchmarks/bench_engine.py                       # both backbones, CPU (+ CUDA if any)
    .venv/bin/python benchmarks/bench_engine.py --backbone efficientnet-lite0 --device cpu
"""

from __future__ import annotations

import argparse
import functools
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collation.core import defaults
from collation.core.errors import WeightsNotFoundError
from collation.core.settings import Settings
from collation.engine.backbones import BACKBONES, load_backbone
from collation.engine.features import extract_features
from collation.engine.similarity import all_pairs, score_pairs

D1, D2 = 816, 405  # the paper's D1-D2: 80 minutes on a GPU with the authors' code


def synthetic_illustrations(n: int, seed: int) -> list[Image.Image]:
    rng = np.random.default_rng(seed)
    images = []
    for _ in range(n):
        long_side = int(rng.integers(380, 700))
        ratio = float(rng.uniform(0.6, 1.6))  # width / height, as the Physiologus boxes
        w, h = (long_side, int(long_side / ratio)) if ratio >= 1 else (int(long_side * ratio), long_side)
        image = Image.new("RGB", (w, h), (232, 220, 190))
        draw = ImageDraw.Draw(image)
        for _ in range(40):
            x0, y0 = int(rng.integers(0, w - 20)), int(rng.integers(0, h - 20))
            x1, y1 = x0 + int(rng.integers(10, w // 3)), y0 + int(rng.integers(10, h // 3))
            colour = tuple(int(v) for v in rng.integers(0, 180, 3))
            (draw.ellipse if rng.random() < 0.5 else draw.rectangle)([x0, y0, x1, y1], outline=colour, width=3)
        images.append(image)
    return images


def backbone_for(name: str, device: str, weights_dir: Path | None):
    try:
        return load_backbone(name, device=device, weights_dir=weights_dir), "pretrained"
    except WeightsNotFoundError:
        from torchvision.models import resnet50

        folder = Path(tempfile.mkdtemp())
        torch.save(resnet50(weights=None).state_dict(), folder / "resnet50-0676ba61.pth")
        return load_backbone(name, device=device, weights_dir=folder), "random weights (same cost)"


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def run(
    name: str,
    device: str,
    rows: int,
    cols: int,
    max_pairs: int,
    dtype: torch.dtype,
    weights_dir: Path | None,
    scales: tuple[int, ...] = defaults.SCALES,
) -> None:
    model, weights = backbone_for(name, device, weights_dir)
    images0, images1 = synthetic_illustrations(rows, 0), synthetic_illustrations(cols, 1)
    extract = functools.partial(extract_features, backbone=model, dtype=dtype, scales=scales)
    extract(images0[:8])  # warm-up: per-shape kernel compilation
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    feats0, feats1 = extract(images0), extract(images1)
    if device == "cuda":
        torch.cuda.synchronize()
    extract_s = time.perf_counter() - t
    images_per_s = (rows + cols) / extract_s

    pairs = all_pairs(rows, cols)
    if max_pairs and len(pairs) > max_pairs:
        pairs = pairs[torch.randperm(len(pairs), generator=torch.Generator().manual_seed(0))[:max_pairs]]
    score_pairs(feats0, feats1, pairs[:16])  # warm-up
    t = time.perf_counter()
    scores, _ = score_pairs(feats0, feats1, pairs)
    if device == "cuda":
        torch.cuda.synchronize()
    score_s = time.perf_counter() - t
    pairs_per_s = len(pairs) / score_s
    assert torch.isfinite(scores).all()

    memory = (
        f"peak GPU memory {torch.cuda.max_memory_allocated() / 1e9:.2f} GB"
        if device == "cuda"
        else f"peak RSS {peak_rss_gb():.2f} GB"
    )
    projected = (D1 + D2) / images_per_s + D1 * D2 / pairs_per_s
    print(
        f"{name} on {device} ({weights}, {str(dtype).removeprefix('torch.')} features, "
        f"{torch.get_num_threads()} threads)"
    )
    print(
        f"  features : {rows + cols} illustrations x scales {list(scales)} in {extract_s:.1f} s "
        f"= {images_per_s:.1f} images/s"
    )
    print(
        f"  S_trans  : {len(pairs)} pairs of {rows} x {cols} (both directions) in {score_s:.1f} s "
        f"= {pairs_per_s:.1f} pairs/s"
    )
    print(f"  memory   : {memory}; features {(feats0.desc.nbytes + feats1.desc.nbytes) / 1e6:.0f} MB")
    print(
        f"  projected: D1 x D2 ({D1} x {D2}) in {projected / 60:.1f} min "
        f"(paper: 80 min on a GPU with the authors' code)"
    )
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backbone", action="append", choices=BACKBONES)
    parser.add_argument("--device", action="append", choices=["cpu", "cuda"])
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--cols", type=int, default=200)
    parser.add_argument(
        "--max-pairs", type=int, default=0, help="time a random sample of this many pairs (0: all rows x cols)"
    )
    parser.add_argument("--float16", action="store_true", help="store features as float16")
    parser.add_argument(
        "--scales", default=",".join(map(str, defaults.SCALES)), help="scales to describe (what each one costs)"
    )
    args = parser.parse_args()
    scales = tuple(int(v) for v in args.scales.split(","))
    weights_dir = Settings.from_env().weights_dir  # COLLATION_WEIGHTS_DIR, read in the one place settings are
    devices = args.device or (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    for device in devices:
        for name in args.backbone or BACKBONES:
            run(
                name,
                device,
                args.rows,
                args.cols,
                args.max_pairs,
                torch.float16 if args.float16 else torch.float32,
                weights_dir,
                scales,
            )


if __name__ == "__main__":
    main()
