"""Deep local features of illustrations: the paper's resize rule, multi-scale extraction, storage.

A backbone (``collation.engine.backbones``) maps an RGB image of 16k x 16l pixels to a map of k x l cells
(stride 16); it is given each illustration in grey (``image_to_tensor``: copies do not keep colours).
``extract_features`` describes each illustration at the scales of B.3 (long side = 18..22 cells) and packs
the maps into one padded tensor, ``MultiScaleFeatures``, that the similarity functions index by
illustration; ``save`` and ``load`` store it (``load`` checks every shape).

Longer than 400 lines because masked bucketed extraction and the checked storage format of
``MultiScaleFeatures`` share the same shapes, which a reader checks in one place.
"""

from __future__ import annotations

import pickle
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import torch
from PIL import Image

from collation.core import defaults
from collation.core.atomic import atomic_writer
from collation.core.errors import DTypeError, FeaturesFileError, IndexRangeError, InputError, ShapeError
from collation.core.formats import STORE_FORMAT, item_format
from collation.core.options import BACKBONES, check_option
from collation.engine.backbones import BACKBONE_CHANNELS, Backbone
from collation.engine.checks import check_dtype, check_positive_int, check_shape
from collation.engine.threads import cpu_cores, default_workers, prefetched, side_by_side

ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(done, total)`` while long work advances, between batches. It may raise to stop
the work (the service's cancellation check): the exception comes out once the batches running end."""


# --------------------------------------------------------------------------------------------------
# Resize rule and extraction


def cells_for_scale(width: int, height: int, scale: int) -> tuple[int, int]:
    """Cells (rows, cols) of an image of ``width`` x ``height`` px whose long side gets ``scale`` cells.

    The short side keeps the aspect ratio up to whole cells, with Python's half-to-even rounding (B.3).
    """
    ratio = width / height
    if ratio < 1:
        return scale, max(round(ratio * scale), 1)
    return max(round(scale / ratio), 1), scale


def bucket_shape(rows: int, cols: int, scale: int, bucket: int) -> tuple[int, int]:
    """The frame (rows, cols) an image of ``rows`` x ``cols`` cells is batched in: sides rounded up to ``bucket``."""

    def up(c: int) -> int:
        return min(-(-c // bucket) * bucket, scale) if c < scale else c

    return up(rows), up(cols)


def image_to_tensor(image: Image.Image, rows: int, cols: int) -> torch.Tensor:
    """Resizes (bicubic) to ``rows`` x ``cols`` cells and returns ``(3, 16 rows, 16 cols)`` in [0, 1], grey:
    each pixel the mean of its three channels, in all three.

    Copies do not keep colours: the copyist's pigments, fading, a restorer's retouching and the camera all
    change them, while the drawing's shape is what a copy keeps, and an ImageNet network's features follow a
    drawing's colours as much as its lines. The mean, not the luma, so that a copy whose pigments trade
    hues (its channels swapped) has the same grey. Measured on copies that chose nothing: docs/transpositions.md
    ("Grey input").
    """
    size = (defaults.PIXELS_PER_CELL * cols, defaults.PIXELS_PER_CELL * rows)
    resized = image.convert("RGB").resize(size, Image.Resampling.BICUBIC)
    grey = torch.from_numpy(np.asarray(resized, dtype=np.float32) / 255.0).mean(dim=2)  # (H, W)
    return grey.expand(3, -1, -1).contiguous()


def uniform_cells(pixels: torch.Tensor, rows: int, cols: int, below: float = defaults.UNIFORM_CELL_STD) -> torch.Tensor:
    """Cells of nothing but one colour: bare paper, a fill, a turned copy's corners, a lost patch.

    Deep features of such a cell describe its surroundings' texture more than anything drawn, and two
    uniform areas at the same place match each other as a copy would: a copy turned in an enlarged frame
    matched every picture turned so by its paper corners (docs/transpositions.md, "Uniform cells").

    Args:
        pixels: ``(3, 16 rows, 16 cols)`` in [0, 1] (``image_to_tensor``).
        below: standard deviation in grey levels of 255 under which, in every channel, a cell is uniform.

    Returns:
        ``(rows * cols,)`` bool, row-major like ``cell_positions``.
    """
    check_shape("pixels", pixels, (3, defaults.PIXELS_PER_CELL * rows, defaults.PIXELS_PER_CELL * cols))
    side = defaults.PIXELS_PER_CELL
    x = pixels.double() * 255  # float64: E[x²] - E[x]² of near-equal pixels keeps its few grey levels
    mean = torch.nn.functional.avg_pool2d(x, side)  # (3, rows, cols)
    var = (torch.nn.functional.avg_pool2d(x * x, side) - mean * mean) * side**2 / (side**2 - 1)  # unbiased
    return (var.clamp(min=0).amax(dim=0) < below**2).flatten()


def zeroed_cells(
    pixels: torch.Tensor,
    rows: int,
    cols: int,
    below: float = defaults.UNIFORM_CELL_STD,
    bare: float = defaults.UNIFORM_BARE_SHARE,
) -> torch.Tensor:
    """``(rows * cols,)`` bool: the cells whose descriptors extraction sets to zero, the uniform ones
    (``uniform_cells``), unless they are ``bare`` of the map or more: a map of bare paper keeps its cells, as
    its texture is all there is to describe it. Args as ``uniform_cells``."""
    flat = uniform_cells(pixels, rows, cols, below)
    return flat if float(flat.float().mean()) < bare else torch.zeros_like(flat)


FEATURE_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
"""Storage types of descriptors: float32, or half precision for large manuscripts."""

FEATURES_FILE_KEYS = ("desc", "pos", "mask", "scales", "query_scale", "backbone")
"""What ``MultiScaleFeatures.save`` writes (and ``"format"``, absent from format 1 files)."""


@dataclass
class MultiScaleFeatures:
    """Local features of n illustrations at S scales, padded to L cells per map.

    Construction checks shapes and types (no tensor values are read); ``load`` also checks the
    contents of a file.

    Attributes:
        desc: ``(n, S, L, C)`` L2-normalized cell descriptors, zero where padded and where the cell is
            uniform (``uniform_cells``).
        pos: ``(n, S, L, 2)`` cell centres (x, y) in the map's own normalized frame, (0, 1)².
        mask: ``(n, S, L)`` True for real cells, which come first in each map.
        scales: cells on the long side of each of the S maps.
        query_scale: the scale used as query (its index is ``query_index``).
        backbone: name of the backbone that produced the features.
    """

    desc: torch.Tensor
    pos: torch.Tensor
    mask: torch.Tensor
    scales: tuple[int, ...]
    query_scale: int
    backbone: str

    def __post_init__(self) -> None:
        dims = check_shape("desc", self.desc, ("n", "S", "L", "C"))
        check_shape("pos", self.pos, ("n", "S", "L", 2), dims)
        check_shape("mask", self.mask, ("n", "S", "L"), dims)
        if self.desc.dtype not in FEATURE_DTYPES:
            check_dtype("desc", self.desc, "floating")  # a floating type outside FEATURE_DTYPES still works
        check_dtype("pos", self.pos, "floating")
        check_dtype("mask", self.mask, "bool")
        if not isinstance(self.scales, tuple) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in self.scales
        ):
            raise InputError(f"scales must be a tuple of positive integers, not {self.scales!r}", field="scales")
        if len(self.scales) != dims["S"]:
            raise ShapeError(
                "desc",
                tuple(self.desc.shape),
                ("n", len(self.scales), "L", "C"),
                f"{len(self.scales)} scales {list(self.scales)}",
            )
        if isinstance(self.query_scale, bool) or self.query_scale not in self.scales:
            raise InputError(
                f"query scale {self.query_scale!r} is not one of the scales {list(self.scales)}", field="scales"
            )

    def __len__(self) -> int:
        return self.desc.shape[0]

    @property
    def query_index(self) -> int:
        return self.scales.index(self.query_scale)

    def select(self, indices: torch.Tensor | Sequence[int]) -> MultiScaleFeatures:
        """The features of the illustrations at ``indices`` ``(k,)``, in that order."""
        idx = torch.as_tensor(indices, device=self.desc.device)
        if idx.numel() == 0:
            idx = idx.long()
        check_shape("indices", idx, ("k",))
        check_dtype("indices", idx, "integer")
        if idx.numel() and bool(((idx < 0) | (idx >= len(self))).any()):
            raise IndexRangeError("indices", (len(self),))
        idx = idx.long()
        return MultiScaleFeatures(
            self.desc[idx], self.pos[idx], self.mask[idx], self.scales, self.query_scale, self.backbone
        )

    def scatter(self, indices: torch.Tensor, size: int) -> MultiScaleFeatures:
        """A set of ``size`` illustrations holding these k at ``indices`` ``(k,)`` and empty maps (no cell)
        elsewhere: the inverse of ``select`` for a set described in part."""
        check_shape("indices", indices, (len(self),))
        shape = (size, *self.desc.shape[1:])
        desc = self.desc.new_zeros(shape)
        pos = self.pos.new_zeros((size, *self.pos.shape[1:]))
        mask = self.mask.new_zeros((size, *self.mask.shape[1:]))
        idx = indices.to(self.desc.device).long()
        desc[idx], pos[idx], mask[idx] = self.desc, self.pos, self.mask
        return MultiScaleFeatures(desc, pos, mask, self.scales, self.query_scale, self.backbone)

    def to(self, device: torch.device | str) -> MultiScaleFeatures:
        return MultiScaleFeatures(
            self.desc.to(device),
            self.pos.to(device),
            self.mask.to(device),
            self.scales,
            self.query_scale,
            self.backbone,
        )

    @staticmethod
    def concat(parts: Sequence[MultiScaleFeatures]) -> MultiScaleFeatures:
        """Stacks the illustrations of several feature sets of the same backbone and scales."""
        if not parts:
            raise InputError("no feature sets to concatenate", field="features")
        first = parts[0]
        for p in parts:
            if (p.backbone, p.scales, p.query_scale) != (first.backbone, first.scales, first.query_scale):
                raise InputError(
                    f"cannot concatenate features of {p.backbone} at scales {list(p.scales)} with "
                    f"features of {first.backbone} at scales {list(first.scales)}",
                    field="features",
                )
            if p.desc.shape[3] != first.desc.shape[3] or p.desc.dtype != first.desc.dtype:
                raise ShapeError(
                    "desc",
                    tuple(p.desc.shape),
                    ("n", "S", "L", first.desc.shape[3]),
                    f"stored as {p.desc.dtype}, the first part as {first.desc.dtype}",
                )
        length = max(p.desc.shape[2] for p in parts)
        return MultiScaleFeatures(
            torch.cat([pad_cells(p.desc, length) for p in parts]),
            torch.cat([pad_cells(p.pos, length) for p in parts]),
            torch.cat([pad_cells(p.mask, length) for p in parts]),
            first.scales,
            first.query_scale,
            first.backbone,
        )

    def save(self, path: str | Path) -> None:
        """Writes atomically, so a reader never sees half a file, streamed to disk (no copy in memory)."""
        with atomic_writer(Path(path)) as f:
            self.write(f)

    def write(self, f: IO[bytes]) -> None:
        """Writes the file of ``save`` to an open binary file (a data store's writer)."""
        torch.save(
            {
                "format": STORE_FORMAT,  # collation.core.formats: format 1 files have none
                "desc": self.desc.cpu(),
                "pos": self.pos.cpu(),
                "mask": self.mask.cpu(),
                "scales": list(self.scales),
                "query_scale": self.query_scale,
                "backbone": self.backbone,
            },
            f,
        )

    @classmethod
    def load(cls, path: str | Path, device: torch.device | str = "cpu") -> MultiScaleFeatures:
        """Reads a file of ``save`` and checks it: keys, shapes, types, masks, cell counts, values.

        Raises:
            FeaturesFileError: naming the file, when it is unreadable, corrupt or not a features file.
        """
        try:
            # weights_only: a foreign pickle cannot run code, it fails to load.
            data = torch.load(path, map_location="cpu", weights_only=True)
        except FileNotFoundError:
            raise FeaturesFileError(path, "no such file") from None
        except (OSError, EOFError, RuntimeError, ValueError, pickle.UnpicklingError, zipfile.BadZipFile) as e:
            raise FeaturesFileError(path, f"not a readable features file ({e.__class__.__name__})") from None
        if not isinstance(data, dict) or any(key not in data for key in FEATURES_FILE_KEYS):
            keys = sorted(data) if isinstance(data, dict) else type(data).__name__
            raise FeaturesFileError(
                path, f"not a features file: expected keys {list(FEATURES_FILE_KEYS)}, found {keys}"
            )
        item_format(data.get("format"), str(path))  # a newer release's file: say which, and what to run
        if not all(isinstance(data[k], torch.Tensor) for k in ("desc", "pos", "mask")):
            raise FeaturesFileError(path, "desc, pos and mask must be tensors")
        if not isinstance(data["scales"], list | tuple) or not isinstance(data["backbone"], str):
            raise FeaturesFileError(path, "scales must be a list and backbone a name")
        try:
            feats = cls(
                data["desc"], data["pos"], data["mask"], tuple(data["scales"]), data["query_scale"], data["backbone"]
            )
            check_contents(feats)
        except InputError as e:
            raise FeaturesFileError(path, e.message) from None
        return feats.to(device)


def check_contents(feats: MultiScaleFeatures) -> None:
    """Checks what construction does not: backbone, dtype, masks and cell counts, finite values.

    Reads every value (one synchronization on a GPU): for files and other untrusted features, not
    for the hot path.

    Raises:
        OptionError: unknown backbone. ShapeError: channels, masks or cell counts inconsistent with
        the backbone and the scales. DTypeError: a storage type outside ``FEATURE_DTYPES``.
        InputError: values that are not finite or positions outside (0, 1).
    """
    check_option("backbone", feats.backbone, BACKBONES)
    length, channels = feats.desc.shape[2:]
    if channels != BACKBONE_CHANNELS[feats.backbone]:
        raise ShapeError(
            "desc",
            tuple(feats.desc.shape),
            ("n", "S", "L", BACKBONE_CHANNELS[feats.backbone]),
            f"{feats.backbone} has {BACKBONE_CHANNELS[feats.backbone]} channels",
        )
    if feats.desc.dtype not in FEATURE_DTYPES:
        raise DTypeError("desc", feats.desc.dtype, "one of " + ", ".join(map(str, FEATURE_DTYPES)))
    # Real cells come first in every map, and a map at scale s has s cells on its long side and
    # between 1 and s on the other: its count is a multiple of s, at most s²; or none, an illustration a set
    # leaves out (the transposed features of the illustrations a pair chose, ``engine.transpositions``).
    count = feats.mask.sum(dim=2)  # (n, S)
    prefix = torch.arange(length, device=feats.mask.device) < count.unsqueeze(-1)
    if not torch.equal(feats.mask, prefix):
        raise ShapeError("mask", tuple(feats.mask.shape), ("n", "S", "L"), "real cells must come first")
    scale = torch.tensor(feats.scales, device=count.device)
    short = count // scale
    if bool(((count % scale != 0) | ((short < 1) & (count > 0)) | (short > scale)).any()):
        raise ShapeError(
            "mask", tuple(feats.mask.shape), ("n", "S", "L"), f"cell counts do not fit the scales {list(feats.scales)}"
        )
    # The value checks run on 64 illustrations at a time: their temporaries (a boolean per value) stay
    # small next to the features themselves, which a worker holds several of.
    for start in range(0, len(feats), 64):
        desc, pos, mask = (x[start : start + 64] for x in (feats.desc, feats.pos, feats.mask))
        if not bool(torch.isfinite(desc).all()) or not bool(torch.isfinite(pos).all()):
            raise InputError("descriptors and positions must be finite", field="desc")
        if bool((desc[~mask] != 0).any()):
            raise InputError("padded cells must have zero descriptors", field="desc")
        real_pos = pos[mask]
        if bool(((real_pos <= 0) | (real_pos >= 1)).any()):
            raise InputError("cell positions must lie in (0, 1)", field="pos")


def pad_cells(x: torch.Tensor, length: int) -> torch.Tensor:
    """Pads dimension 2 (cells) of ``(n, S, L, ...)`` with zeros (False for masks) up to ``length``."""
    if x.shape[2] == length:
        return x
    pad = x.new_zeros((*x.shape[:2], length - x.shape[2], *x.shape[3:]))
    return torch.cat([x, pad], dim=2)


def cell_positions(rows: int, cols: int) -> torch.Tensor:
    """``(rows * cols, 2)`` cell centres (x, y) in (0, 1)², row-major, each axis normalized on its own."""
    y, x = torch.meshgrid((torch.arange(rows) + 0.5) / rows, (torch.arange(cols) + 0.5) / cols, indexing="ij")
    return torch.stack([x.reshape(-1), y.reshape(-1)], dim=-1)


def l2_normalize(desc: torch.Tensor) -> torch.Tensor:
    """Normalizes the last dimension: x / (‖x‖ + 1e-7), as the reference (B.4)."""
    return desc / (desc.norm(dim=-1, keepdim=True) + defaults.L2_EPS)


def _check_extraction(images: Sequence[Image.Image], dtype: torch.dtype) -> None:
    if not images:
        raise InputError("no images to describe")
    if dtype not in FEATURE_DTYPES:
        raise DTypeError("dtype", dtype, "one of " + ", ".join(map(str, FEATURE_DTYPES)))


def extract_features(
    images: Sequence[Image.Image],
    backbone: Backbone,
    *,
    scales: Sequence[int] = defaults.SCALES,
    query_scale: int = defaults.QUERY_SCALE,
    dtype: torch.dtype = torch.float32,
    batch_size: int | None = None,
    bucket: int = defaults.FEATURES_BUCKET,
    workers: int | None = None,
    loaders: int | None = None,
    progress: ProgressCallback | None = None,
) -> MultiScaleFeatures:
    """Describes every image at every scale with ``backbone``.

    Each image is resized by the rule of B.3, then placed at the top left of a frame whose short side
    is rounded up to a multiple of ``bucket`` cells, and frames of one shape are batched. The backbone
    masks what lies outside each image before every window (``Backbone.forward``), so a real cell's
    features equal those of one unpadded image per forward pass up to float rounding (tested to 1e-4),
    while the number of distinct shapes, and so of compiled convolutions, stays bounded whatever the
    images' sizes. Features stay on the backbone's device, stored as ``dtype`` (float16 halves the
    memory of large manuscripts).

    Args:
        images: n RGB images; a sequence read one image at a time (again for each scale, the scales of
            one image one after another), so a lazy one (the service reads each from its store when asked,
            ``collation.jobs.manuscripts.StoredImages``) need not hold them all decoded; its ``sizes()``,
            when it has one, gives their sizes (``image_sizes``).
        scales: cells on the long side of each map, positive integers; query_scale one of them.
        dtype: storage type of the descriptors, one of ``FEATURE_DTYPES``.
        batch_size: images per forward pass; by default ``defaults.FEATURES_BATCH_CPU`` on a CPU, 32 on a GPU.
        bucket: frames' short side is a multiple of this many cells (or the long side); 1 never pads.
        workers: forward passes run side by side, each on one intra-op thread (``collation.engine.threads``);
            by default as many as torch's intra-op threads on a CPU, 1 on a GPU. Features do not depend on it.
        loaders: on a GPU, threads that decode, resize and frame the next batches on the CPU while the device
            runs the current one (``threads.prefetched``); by default one per CPU core. Not used on a CPU.

    Returns:
        MultiScaleFeatures with ``desc`` of shape ``(n, len(scales), L, C)``, L the largest map.
    """
    _check_extraction(images, dtype)
    scales = tuple(check_positive_int("scales", scale) for scale in scales)
    if not scales or len(set(scales)) != len(scales):
        raise InputError(f"scales must be distinct positive integers, not {list(scales)}", field="scales")
    if isinstance(query_scale, bool) or query_scale not in scales:
        raise InputError(f"query scale {query_scale} is not one of the scales {list(scales)}", field="scales")
    device = backbone.mean.device
    if batch_size is None:
        batch_size = defaults.FEATURES_BATCH_CPU if device.type == "cpu" else 32
    if workers is None:
        workers = default_workers(device)
    check_positive_int("batch_size", batch_size)
    check_positive_int("bucket", bucket)
    check_positive_int("workers", workers)
    if loaders is not None:
        check_positive_int("loaders", loaders)
    n, n_scales = len(images), len(scales)
    sizes = image_sizes(images)
    jobs: dict[tuple[int, int], list[tuple[int, int, int, int]]] = {}  # bucket -> [(image, scale, rows, cols)]
    for i, size in enumerate(sizes):
        for s, scale in enumerate(scales):
            rows, cols = cells_for_scale(*size, scale)
            jobs.setdefault(bucket_shape(rows, cols, scale, bucket), []).append((i, s, rows, cols))
    length = max(rows * cols for members in jobs.values() for _, _, rows, cols in members)
    desc = torch.zeros((n, n_scales, length, backbone.channels), dtype=dtype, device=device)
    pos = torch.zeros((n, n_scales, length, 2), dtype=torch.float32, device=device)
    mask = torch.zeros((n, n_scales, length), dtype=torch.bool, device=device)

    Batch = tuple[tuple[int, int], list[tuple[int, int, int, int]]]  # frame (rows, cols), [(image, scale, rows, cols)]

    def prepare(item: Batch) -> tuple[torch.Tensor, torch.Tensor | None, list[torch.Tensor]]:
        """The batch's images decoded, resized and framed on the CPU: ``(B, 3, 16 rows, 16 cols)``, the
        ``(B, 2)`` pixel sizes of the images inside their frames (None where none is padded), and each
        image's cells to zero (``zeroed_cells``)."""
        (rows_b, cols_b), batch = item
        x = torch.zeros((len(batch), 3, 16 * rows_b, 16 * cols_b))
        uniform = []
        for k, (i, _, rows, cols) in enumerate(batch):
            x[k, :, : 16 * rows, : 16 * cols] = image_to_tensor(images[i], rows, cols)
            pixels = x[k, :, : 16 * rows, : 16 * cols]
            uniform.append(zeroed_cells(pixels, rows, cols))
        padded = any((rows, cols) != (rows_b, cols_b) for _, _, rows, cols in batch)
        valid = torch.tensor([[16 * rows, 16 * cols] for _, _, rows, cols in batch]) if padded else None
        return x, valid, uniform

    def describe(item: Batch, inputs: tuple[torch.Tensor, torch.Tensor | None, list[torch.Tensor]]) -> int:
        """Runs one prepared batch through the backbone and writes its cells (disjoint slots), zero where uniform."""
        (rows_b, cols_b), batch = item
        x, valid, uniform = inputs
        maps = backbone(x.to(device), valid)
        check_shape("backbone output", maps, (len(batch), backbone.channels, rows_b, cols_b))  # stride 16
        for (i, s, rows, cols), f, flat in zip(batch, maps, uniform, strict=True):
            cells = l2_normalize(f[:, :rows, :cols].flatten(1).T.float())  # (rows * cols, C)
            cells[flat.to(cells.device)] = 0
            desc[i, s, : rows * cols] = cells.to(dtype)
            pos[i, s, : rows * cols] = cell_positions(rows, cols).to(device)
            mask[i, s, : rows * cols] = True
        return len(batch)

    batches = [
        (frame, members[start : start + batch_size])
        for frame, members in jobs.items()
        for start in range(0, len(members), batch_size)
    ]
    # Image-major: the batches of an image's scales run one after another (with one image per batch, a
    # CPU's, every scale of image i before image i + 1), so a lazy sequence that keeps its last few images
    # decodes each once. Only the order changes, never a batch: the features are the same bit for bit.
    batches.sort(key=lambda item: item[1][0][0])
    done, total = 0, n * n_scales
    # On a CPU, forward passes side by side, each on one intra-op thread: one small image per pass leaves a
    # second core mostly idle inside a convolution (EfficientNet-Lite0 ran as fast on one thread as on two).
    if device.type == "cpu":
        counts = side_by_side(lambda item: describe(item, prepare(item)), batches, workers)
    else:  # the device runs the batches one after another while the CPU's cores prepare the next ones
        counts = map(describe, batches, prefetched(prepare, batches, loaders or cpu_cores()))
    for count in counts:
        done += count
        if progress:
            progress(done, total)

    return MultiScaleFeatures(desc, pos, mask, tuple(scales), query_scale, backbone.name)


def image_sizes(images: Sequence[Image.Image]) -> list[tuple[int, int]]:
    """(width, height) of each image: from the sequence's ``sizes()`` when it has one (the service's
    stored images read them from the files' headers, without decoding), else from each image."""
    sizes = getattr(images, "sizes", None)
    return list(sizes()) if callable(sizes) else [images[i].size for i in range(len(images))]


def extract_square_features(
    images: Sequence[Image.Image],
    backbone: Backbone,
    *,
    size: int = defaults.FEATURES_SIZE,
    dtype: torch.dtype = torch.float32,
    progress: ProgressCallback | None = None,
) -> MultiScaleFeatures:
    """Features for S_features: every image resized to ``size`` x ``size`` (aspect ratio broken, A.2).

    Returns:
        MultiScaleFeatures with one square map per image: ``desc`` ``(n, 1, N, C)`` L2-normalized cells,
        N = (size / 16)², at the one scale size / 16. Stored, loaded and scored (``score_pairs`` with
        similarity s_features) like every other feature set.
    """
    _check_extraction(images, dtype)
    if check_positive_int("size", size) % defaults.PIXELS_PER_CELL:
        raise InputError(f"size must be a multiple of {defaults.PIXELS_PER_CELL} pixels, not {size}", field="size")
    device = backbone.mean.device
    cells = size // defaults.PIXELS_PER_CELL
    out = []
    for start in range(0, len(images), 8):
        x = torch.stack([image_to_tensor(im, cells, cells) for im in images[start : start + 8]]).to(device)
        out.append(l2_normalize(backbone(x).flatten(2).transpose(1, 2).float()).to(dtype))
        if progress:
            progress(min(start + 8, len(images)), len(images))
    desc = torch.cat(out).unsqueeze(1)  # (n, 1, N, C)
    pos = cell_positions(cells, cells).to(device).expand(len(images), 1, -1, -1).contiguous()
    mask = torch.ones(desc.shape[:3], dtype=torch.bool, device=device)
    return MultiScaleFeatures(desc, pos, mask, (cells,), cells, backbone.name)
