"""The partial-copy normalizer of S_trans: the query cells inside the matched area (docs/transpositions.md).

S_trans divides each directional score by N_Q, every cell of the query (B.5). A copy of half a scene
then scores at most about one half in the direction where the full scene is the query, and loses to
a full-size distractor that matches everywhere a little. With ``partial=True`` the divisor is instead
the number of query cells inside the *matched area*: the image of the target's frame (0, 1)² under
the winning RANSAC affine map (target → query), intersected with the query's frame. When the query is
the larger side this counts only the part the smaller one covers; when the query is the smaller side
the whole query is covered and nothing changes. The divisor is floored at ``min_area`` · N_Q, so that
a collapsed transform (a sliver of area) cannot inflate a few chance matches, and each directional
score is capped at 1, so S stays in [0, 2].
"""

from __future__ import annotations

import torch

from collation.core import defaults
from collation.core.errors import InputError
from collation.engine.checks import check_positive_float, check_shape


def matched_cells(affine: torch.Tensor, query_pos: torch.Tensor, query_cells: torch.Tensor) -> torch.Tensor:
    """Query cells whose centre lies inside the affine image of the target's unit frame.

    The frame (0, 1)² maps to the parallelogram o + a·u + b·v, a, b in [0, 1], with u, v, o the rows
    of ``affine``; a degenerate (zero-area) map covers nothing.

    Args:
        affine: ``(B, 3, 2)`` maps [x, y, 1] @ A from target to query coordinates.
        query_pos: ``(B, Lq, 2)`` query cell centres, real cells first.
        query_cells: ``(B,)`` real cells of each query.

    Returns:
        ``(B,)`` float counts in [0, query_cells].
    """
    dims = check_shape("affine", affine, ("B", 3, 2))
    check_shape("query_pos", query_pos, ("B", "Lq", 2), dims)
    check_shape("query_cells", query_cells, ("B",), dims)
    u, v, o = (affine[:, k].float().unsqueeze(1) for k in range(3))  # (B, 1, 2) each
    d = query_pos.float() - o
    det = u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0]  # (B, 1)
    safe = torch.where(det.abs() > 1e-9, det, 1.0)
    a = (d[..., 0] * v[..., 1] - d[..., 1] * v[..., 0]) / safe
    b = (u[..., 0] * d[..., 1] - u[..., 1] * d[..., 0]) / safe
    inside = (a >= 0) & (a <= 1) & (b >= 0) & (b <= 1) & (det.abs() > 1e-9)
    real = torch.arange(query_pos.shape[1], device=query_pos.device) < query_cells.unsqueeze(1)
    return (inside & real).sum(dim=1).float()


def partial_normalizer(
    affine: torch.Tensor,
    query_pos: torch.Tensor,
    query_cells: torch.Tensor,
    *,
    min_area: float = defaults.PARTIAL_MIN_AREA,
) -> torch.Tensor:
    """The divisor of a partial directional score: matched cells, at least ``min_area`` · N_Q (and 1).

    Args as ``matched_cells``; min_area: in (0, 1].

    Returns:
        ``(B,)`` float divisors.
    """
    check_positive_float("min_area", min_area)
    if min_area > 1:
        raise InputError(f"min_area must be at most 1, not {min_area!r}", field="min_area")
    cells = query_cells.float()
    return torch.maximum(matched_cells(affine, query_pos, query_cells), cells * min_area).clamp(min=1)
