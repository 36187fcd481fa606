"""Keys of cached features: what the features of a manuscript's images depend on, the backbone's arithmetic
included.

``COLLATION_FEATURE_PRECISION=auto`` computes the backbone in bfloat16 where the hardware has it and in
float32 elsewhere (``collation.engine.backbones.compute_dtype``); the two give features that differ by up
to 0.2 on a normalized cell. So the setting is resolved once, to ``float32`` or ``bfloat16``
(``resolve_precision``), and the resolved value enters the key (``features_key``): two workers of different
hardware never share a cache entry, and a key says what its features are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from collation.core import defaults
from collation.core.options import RESOLVED_PRECISIONS, CollationOptions, check_option


def backbone_features_key(
    digests: Sequence[str],
    backbone: str,
    *,
    precision: str,
    scales: Sequence[int] = defaults.SCALES,
    query_scale: int = defaults.QUERY_SCALE,
    storage: str = "float32",
) -> str:
    """Key of a manuscript's cached features: its images' content, the backbone and every parameter that
    changes them (the backbone's arithmetic, the scales, the storage type, the frames' bucket and the
    normalization's epsilon).

    Args:
        precision: one of ``RESOLVED_PRECISIONS`` (``resolve_precision``), never ``auto``: a key says
            what its features are, whichever worker computes them.
        storage: the features' storage type, a torch dtype's name (``float32``, ``float16``).
    """
    check_option("precision", precision, RESOLVED_PRECISIONS)
    # v3: the precision entered the key; a key of an older release (no precision) is never computed again,
    # so features of unknown arithmetic are never reused. v4: uniform cells are zero (``features.uniform_cells``).
    # v5: the network sees grey images (``features.image_to_tensor``).
    h = hashlib.sha256(
        f"{backbone}|{precision}|{list(scales)}|{query_scale}|torch.{storage}|{defaults.FEATURES_BUCKET}|"
        f"{defaults.L2_EPS}|{defaults.UNIFORM_CELL_STD}|{defaults.UNIFORM_BARE_SHARE}|v5".encode()
    )
    for d in digests:
        h.update(d.encode())
    return h.hexdigest()[:32]


def features_key(digests: Sequence[str], options: CollationOptions, *, precision: str, storage: str = "float32") -> str:
    """Key of the features ``engine.pipeline.describe`` gives for images of these content digests, with a
    backbone computing in ``precision`` (``float32`` or ``bfloat16``: ``resolve_precision``, never ``auto``):
    the one features key of the command line and the service."""
    if options.similarity == "s_features":
        cells = defaults.FEATURES_SIZE // defaults.PIXELS_PER_CELL
        return backbone_features_key(
            digests,
            f"{options.backbone}|square",
            precision=precision,
            scales=(cells,),
            query_scale=cells,
            storage=storage,
        )
    return backbone_features_key(digests, options.backbone, precision=precision, storage=storage)
