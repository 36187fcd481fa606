"""Weak matches: scores no true copy would have, and regions with nothing drawn.

N_S, P_S and the concordance's confidence are relative by design (A.3): an illustration's best candidate
scores high whatever its raw S, so all-different random images still close 2-cycles and form groups of
high confidence. Raw S is absolute, and true copies score far above the best match of an unrelated image:
a match is *weak* when its raw S is below the collation's floor (``CollationOptions.floor``,
``defaults.WEAK_BELOW``), or when one of its two regions is blank. Blank pages need the second rule:
against each other they score as high as copies (a uniform page 1.99, a noisy one 0.6-0.9), so no floor
on S can tell them apart. The figures are in docs/concordance.md ("Weak matches").

Weak matches change no score: they are flagged where results are read, and never join a concordance group.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

from collation.core import defaults


def is_blank(image: Image.Image) -> bool:
    """Whether nothing is drawn in ``image``: the grey levels of its thumbnail (``defaults.BLANK_THUMBNAIL``
    pixels on the long side, each the mean of its block, which averages scanner noise and JPEG away) spread
    less than ``defaults.BLANK_SPREAD`` (standard deviation). Every real illustration of the Physiologus data
    spreads 19 or more; a uniform page 0, one with noise of 15 grey levels about 1."""
    thumbnail = image.convert("L")
    thumbnail.thumbnail((defaults.BLANK_THUMBNAIL, defaults.BLANK_THUMBNAIL), Image.Resampling.BOX)
    return bool(np.asarray(thumbnail, dtype=np.float64).std() < defaults.BLANK_SPREAD)


def weak_matches(
    scores: np.ndarray,
    floor: float,
    blank0: Sequence[bool] | np.ndarray | None = None,
    blank1: Sequence[bool] | np.ndarray | None = None,
) -> np.ndarray:
    """Which pairs of a manuscript pair are weak matches.

    Args:
        scores: ``(n0, n1)`` raw S (-inf where unscored: weak, but such a pair is never a match).
        floor: raw S under it is weak; 0 makes no score weak.
        blank0, blank1: ``(n0,)`` and ``(n1,)`` whether each region is blank (``is_blank``); None: none is.

    Returns:
        ``(n0, n1)`` bool.
    """
    s = np.asarray(scores, dtype=np.float64)
    weak = ~(s >= floor)
    if blank0 is not None and len(blank0):
        weak |= np.asarray(blank0, dtype=bool)[:, None]
    if blank1 is not None and len(blank1):
        weak |= np.asarray(blank1, dtype=bool)[None, :]
    return weak
