"""Transposed copies: S_trans against mirrored and turned queries, the best kept, the winner reported.

Local features are not mirror- or rotation-invariant, so a mirrored copy finds almost no mutual
nearest neighbours in the original and RANSAC has nothing to verify. The second illustration of each
pair is therefore also described transposed (its own features, extracted once per manuscript in one
batched call), and every pair is scored against each transposition inside the same S_trans: one call
of ``score_pairs`` over the pairs x transpositions, no Python loop over either. The best score is S,
and the index of the transposition that gave it is T (int8, 0 = as drawn; ties go to the lower index,
so as drawn wins a tie).

Transposed features are stored transposition-major: index ``t * n + j`` of a transposed set is
illustration j of the n transposed by ``names[t]``; ``names[0]`` is always "identity", whose features
are the plain ones. RANSAC draws are keyed by (i, t * n + j), so with "none" (or t = 0) the scores are
exactly those of ``score_pairs`` on the plain features. With candidate pruning, the global score of a
pair is the best over the transpositions of its second illustration (``transposed_global_scores``),
and each candidate pair is scored as drawn and under its likeliest other transposition (all of them for
"mirror": ``pipeline.score_candidates``). See docs/transpositions.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from PIL import Image

from collation.core import defaults
from collation.core.errors import InputError
from collation.core.options import check_option
from collation.core.vocabulary import TRANSPOSITION_NAMES, TRANSPOSITION_SETS, TURNS
from collation.engine.backbones import Backbone
from collation.engine.candidates import global_scores
from collation.engine.features import MultiScaleFeatures, ProgressCallback, extract_features, image_sizes
from collation.engine.similarity import transposition_count

_PIL_METHODS = {
    "mirror": Image.Transpose.FLIP_LEFT_RIGHT,
    "rot90": Image.Transpose.ROTATE_90,
    "rot180": Image.Transpose.ROTATE_180,
    "rot270": Image.Transpose.ROTATE_270,
    "flip": Image.Transpose.FLIP_TOP_BOTTOM,
}


def transposition_names(option: str) -> tuple[str, ...]:
    """The transpositions of an option value ("none", "mirror", "all"), "identity" first.

    Raises:
        OptionError: an unknown value.
    """
    return TRANSPOSITION_SETS[check_option("transpositions", option, tuple(TRANSPOSITION_SETS))]


def transpose_image(image: Image.Image, name: str, paper: tuple[int, ...] | None = None) -> Image.Image:
    """``image`` transposed by ``name``, one of ``TRANSPOSITION_NAMES``: a mirror or a quarter turn moves
    pixels only; a small turn (``TURNS``) turns the picture in its own frame, the corners it uncovers
    filled with the picture's paper colour (``paper_colour``; ``paper`` when already known), so the drawing
    keeps its size in cells."""
    check_option("transposition", name, TRANSPOSITION_NAMES)
    if name == "identity":
        return image
    if name in TURNS:
        rgb = image.convert("RGB")
        fill = paper_colour(rgb) if paper is None else paper
        return rgb.rotate(int(name[3:]), Image.Resampling.BICUBIC, expand=False, fillcolor=fill)
    return image.transpose(_PIL_METHODS[name])


def paper_colour(image: Image.Image) -> tuple[int, ...]:
    """The RGB median of ``image``'s pixels: the colour a small turn fills its uncovered corners with."""
    return tuple(int(v) for v in np.median(np.asarray(image.convert("RGB")).reshape(-1, 3), axis=0))


def transposed_size(size: tuple[int, int], name: str) -> tuple[int, int]:
    """(width, height) of an image of ``size`` transposed by ``name``: a quarter turn swaps them, the rest
    (mirrors, a half turn, small turns in their own frame) keep them."""
    return (size[1], size[0]) if name in ("rot90", "rot270") else size


class TransposedImages(Sequence[Image.Image]):
    """``images`` under each transposition of ``names``, transposition-major (item ``t * n + j`` is image
    j transposed by ``names[t]``), each made when asked for: a view that holds no image, only each image's
    paper colour once known (the small turns of one image share it: its median is taken once)."""

    def __init__(self, images: Sequence[Image.Image], names: Sequence[str]) -> None:
        self.images, self.names = images, tuple(names)
        self.papers: dict[int, tuple[int, ...]] = {}

    def __len__(self) -> int:
        return len(self.names) * len(self.images)

    def __getitem__(self, index: int | slice) -> Image.Image | list[Image.Image]:  # type: ignore[override]
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(len(self)))]
        t, j = divmod(index, len(self.images))
        name, image = self.names[t], self.images[j]
        if name in TURNS and j not in self.papers:
            self.papers[j] = paper_colour(image)
        return transpose_image(image, name, self.papers.get(j))

    def sizes(self) -> list[tuple[int, int]]:
        """(width, height) of every item, from the images' sizes (``features.image_sizes``), none transposed."""
        plain = image_sizes(self.images)
        return [transposed_size(size, name) for name in self.names for size in plain]


def extract_transposed_features(
    images: Sequence[Image.Image],
    backbone: Backbone,
    transpositions: str,
    *,
    plain: MultiScaleFeatures | None = None,
    progress: ProgressCallback | None = None,
    **extract_options,
) -> MultiScaleFeatures:
    """Features of ``images`` under every transposition of an option, transposition-major.

    Args:
        images: n illustrations.
        transpositions: option value, one of ``TRANSPOSITION_SETS``.
        plain: the features of ``images`` as drawn if already extracted (they are reused, not redone).
        extract_options: passed to ``extract_features`` (scales, query_scale, dtype, batch_size).

    Returns:
        ``(T * n)`` illustrations: index ``t * n + j`` is image j transposed by ``names[t]``. All the
        transposed images go through one ``extract_features`` call, batched by input size.
    """
    names = transposition_names(transpositions)
    if plain is not None and len(plain) != len(images):
        raise InputError(f"plain holds {len(plain)} illustrations for {len(images)} images", field="plain")
    if plain is None:
        plain = extract_features(images, backbone, progress=progress, **extract_options)
    if len(names) == 1:
        return plain
    turned = TransposedImages(images, names[1:])
    return MultiScaleFeatures.concat([plain, extract_features(turned, backbone, progress=progress, **extract_options)])


def picks_transpositions(transpositions: str) -> bool:
    """True when an option has more transpositions than ``defaults.TRANSPOSITIONS_SCORED`` (``all``, ``turns``):
    S_trans then scores a pair transposed only where the cheap score suspects it, under its illustration's
    likeliest transposition (``cascade.likely_transpositions``), and only those are described transposed."""
    return len(transposition_names(transpositions)) > defaults.TRANSPOSITIONS_SCORED


def cheap_turned_features(
    images: Sequence[Image.Image],
    backbone: Backbone,
    transpositions: str,
    only: np.ndarray,
    *,
    progress: ProgressCallback | None = None,
    **extract_options,
) -> MultiScaleFeatures:
    """The maps the cheap score compares transposed: ``images`` ``only`` ``(n,)`` bool under every transposition
    of an option but as drawn, at the query scale only (the cheap score pools that map, ``cascade.coarse_features``).

    Returns:
        ``((T - 1) * n)`` illustrations at the one scale ``query_scale``: index ``(t - 1) * n + j`` is image j
        transposed by ``names[t]``, t >= 1; empty maps (no cell) for the images not in ``only``.
    """
    names = transposition_names(transpositions)[1:]
    wanted = _flags("only", only, len(images))
    query_scale = extract_options.pop("query_scale", defaults.QUERY_SCALE)
    extract_options["scales"], extract_options["query_scale"] = (query_scale,), query_scale
    chosen = np.flatnonzero(np.tile(wanted, len(names)))  # transposition-major indices described
    turned = TransposedImages(images, names)
    return _describe_some(turned, chosen, backbone, progress=progress, **extract_options)


def chosen_turned_features(
    images: Sequence[Image.Image],
    backbone: Backbone,
    transpositions: str,
    turns: np.ndarray,
    *,
    progress: ProgressCallback | None = None,
    **extract_options,
) -> MultiScaleFeatures:
    """Illustration j of ``images`` under the transposition ``names[turns[j]]`` chosen for it, at every scale
    (what S_trans scores it with), for the j whose ``turns`` ``(n,)`` int is above 0; empty maps elsewhere.

    Returns:
        ``(n)`` illustrations, index j the image j transposed (one ``extract_features`` call).
    """
    names = transposition_names(transpositions)
    turns = np.asarray(turns, dtype=np.int64)
    if turns.shape != (len(images),) or (turns < 0).any() or (turns >= len(names)).any():
        raise InputError(f"turns must be {len(images)} indices below {len(names)}", field="turns")
    chosen = np.flatnonzero(turns)
    turned = [transpose_image(images[int(j)], names[int(turns[j])]) for j in chosen]
    features = _describe_some(
        _Placed(turned, chosen, len(images)), chosen, backbone, progress=progress, **extract_options
    )
    return features


def _flags(name: str, flags: np.ndarray, n: int) -> np.ndarray:
    flags = np.asarray(flags, dtype=bool)
    if flags.shape != (n,):
        raise InputError(f"{name} must be {n} booleans, not shape {flags.shape}", field=name)
    return flags


def _describe_some(
    images: Sequence[Image.Image], indices: np.ndarray, backbone: Backbone, **extract_options
) -> MultiScaleFeatures:
    """``extract_features`` of ``images[indices]`` only, placed at ``indices`` of a set of ``len(images)``
    whose other maps are empty (no cell: never scored). Features do not depend on which others are described."""
    if len(indices):
        return extract_features(_Subset(images, indices), backbone, **extract_options).scatter(
            torch.as_tensor(indices), len(images)
        )
    scales = tuple(extract_options.get("scales", defaults.SCALES))
    shape = (len(images), len(scales), 1)
    return MultiScaleFeatures(
        torch.zeros((*shape, backbone.channels), dtype=extract_options.get("dtype", torch.float32)),
        torch.zeros((*shape, 2)),
        torch.zeros(shape, dtype=torch.bool),
        scales,
        extract_options.get("query_scale", defaults.QUERY_SCALE),
        backbone.name,
    ).to(backbone.mean.device)


class _Subset(Sequence[Image.Image]):
    """Items ``indices`` of a sequence, read when asked for."""

    def __init__(self, items: Sequence[Image.Image], indices: np.ndarray) -> None:
        self.items, self.indices = items, indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index: int | slice) -> Image.Image | list[Image.Image]:  # type: ignore[override]
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(len(self)))]
        return self.items[int(self.indices[index])]

    def sizes(self) -> list[tuple[int, int]]:
        """(width, height) of each item, from the sequence's own ``sizes()`` when it has one (no image made)."""
        sizes = getattr(self.items, "sizes", None)
        if callable(sizes):
            every = sizes()
            return [every[int(i)] for i in self.indices]
        return [self.items[int(i)].size for i in self.indices]


class _Placed(Sequence[Image.Image]):
    """``n`` slots holding ``images`` at ``indices`` (the others are never read)."""

    def __init__(self, images: list[Image.Image], indices: np.ndarray, n: int) -> None:
        self.slot = {int(j): k for k, j in enumerate(indices)}
        self.images, self.n = images, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> Image.Image:  # type: ignore[override]
        return self.images[self.slot[int(index)]]


def transposed_global_scores(
    feats0: MultiScaleFeatures,
    transposed1: MultiScaleFeatures,
    n_transpositions: int,
    *,
    grid: int | None = None,
    power: float | None = None,
    whitening: float | None = defaults.CANDIDATES_WHITENING,
) -> np.ndarray:
    """``(n0, n1)`` float32 global scores (``candidates.global_scores``) of every pair, each the best
    over the transpositions of the second illustration: a mirrored copy's descriptor is compared
    with the original's as drawn, not as mirrored. With one transposition, ``global_scores`` itself.
    """
    t, n1 = transposition_count(transposed1, n_transpositions)
    scores = global_scores(feats0, transposed1, grid=grid, power=power, whitening=whitening)
    return scores.reshape(len(feats0), t, n1).max(axis=1)


def winner_names(winner: np.ndarray, transpositions: str) -> np.ndarray:
    """The names of T's entries as an array of strings of the same shape."""
    names = np.array(transposition_names(transpositions))
    return names[np.asarray(winner, dtype=np.int64)]
