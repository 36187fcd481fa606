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
from PIL import Image

from collation.core.errors import InputError
from collation.core.options import check_option
from collation.core.vocabulary import TRANSPOSITION_NAMES, TRANSPOSITION_SETS, TURNS
from collation.engine.backbones import Backbone
from collation.engine.candidates import global_scores
from collation.engine.features import MultiScaleFeatures, ProgressCallback, extract_features
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


def transpose_image(image: Image.Image, name: str) -> Image.Image:
    """``image`` transposed by ``name``, one of ``TRANSPOSITION_NAMES``: a mirror or a quarter turn moves
    pixels only; a small turn (``TURNS``) turns the picture in its own frame, the corners it uncovers
    filled with the picture's paper colour (its median), so the drawing keeps its size in cells."""
    check_option("transposition", name, TRANSPOSITION_NAMES)
    if name == "identity":
        return image
    if name in TURNS:
        rgb = image.convert("RGB")
        paper = tuple(int(v) for v in np.median(np.asarray(rgb).reshape(-1, 3), axis=0))
        return rgb.rotate(int(name[3:]), Image.Resampling.BICUBIC, expand=False, fillcolor=paper)
    return image.transpose(_PIL_METHODS[name])


class TransposedImages(Sequence[Image.Image]):
    """``images`` under each transposition of ``names``, transposition-major (item ``t * n + j`` is image
    j transposed by ``names[t]``), each made when asked for: a view that holds no image."""

    def __init__(self, images: Sequence[Image.Image], names: Sequence[str]) -> None:
        self.images, self.names = images, tuple(names)

    def __len__(self) -> int:
        return len(self.names) * len(self.images)

    def __getitem__(self, index: int | slice) -> Image.Image | list[Image.Image]:  # type: ignore[override]
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(len(self)))]
        t, j = divmod(index, len(self.images))
        return transpose_image(self.images[j], self.names[t])


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


def transposed_global_scores(
    feats0: MultiScaleFeatures,
    transposed1: MultiScaleFeatures,
    n_transpositions: int,
    *,
    grid: int | None = None,
    power: float | None = None,
) -> np.ndarray:
    """``(n0, n1)`` float32 global scores (``candidates.global_scores``) of every pair, each the best
    over the transpositions of the second illustration: a mirrored copy's descriptor is compared
    with the original's as drawn, not as mirrored. With one transposition, ``global_scores`` itself.
    """
    t, n1 = transposition_count(transposed1, n_transpositions)
    return global_scores(feats0, transposed1, grid=grid, power=power).reshape(len(feats0), t, n1).max(axis=1)


def winner_names(winner: np.ndarray, transpositions: str) -> np.ndarray:
    """The names of T's entries as an array of strings of the same shape."""
    names = np.array(transposition_names(transpositions))
    return names[np.asarray(winner, dtype=np.int64)]
