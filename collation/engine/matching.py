"""Mutual nearest neighbours of one target against many packed queries: S_trans's bookkeeping.

``collation.engine.similarity.directional_pairs`` multiplies one target's real cells (all its scales, one
after the other) with the real cells of many queries packed side by side, and needs, for every (scale,
query cell) slot of every query, the target cell that is that cell's mutual nearest neighbour. This module
finds them with whole-matrix reductions: one scatter-reduce (amax) keyed by (target cell, query) for each
target cell's best match within each query (on a GPU; a CPU reduces each query's block of columns), one max
per scale for each query cell's best target cell, and one more to find ties. Every shape is known before
the product (no ``nonzero`` on the large matrix), and the host waits for the device once per product, to
ask whether ties need settling: on a GPU the work of one product is a few large kernels.

It also sizes the work from the device: products and RANSAC batches from the free GPU memory
(``torch.cuda.mem_get_info``), the CPU's figures where there is no GPU; and the precision of the product
(``PRODUCT_PRECISIONS``: float32 everywhere by default; TF32 or bfloat16 on a GPU where measured to keep
the decisions).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from collation.core import defaults
from collation.core.options import check_option

QUERY_CELLS_PER_PRODUCT = 16384
"""Query cells multiplied with one target at once on a CPU: a (5 x 484) x 16384 float32 product is 160 MB."""

GPU_MEMORY_SHARE = 0.25
"""Share of the free GPU memory one product (or one RANSAC batch) may take: the rest stays for the
features a worker keeps, the allocator's cache and a second worker on the same card."""

MAX_QUERY_CELLS_PER_PRODUCT = 1 << 20
"""Upper bound of a product's query cells on a GPU: about 2,600 queries of 400 cells, every query of a
large manuscript against one target."""

MAX_RANSAC_BATCH = 2048
"""Upper bound of the directional scores of one RANSAC batch on a GPU (2,048 of 2,000 slots x 100 hypotheses
take about 16 GB at their peak)."""

PRODUCT_PRECISIONS = ("float32", "tf32", "bfloat16")
"""Arithmetic of the large product of S_trans (``directional_pairs``): ``float32`` (the default, and always
on a CPU), ``tf32`` (float32 storage, the GPU's matrix units with 10-bit mantissas) or ``bfloat16``
(operands rounded to 8-bit mantissas). Only float32 is known to keep every decision; the others are for the
GPU checks (``benchmarks/gpu_checks.sh``) to measure."""


def free_gpu_bytes(device: torch.device) -> int | None:
    """Free memory of a CUDA device in bytes, counting what torch's allocator holds unused; None on a CPU."""
    if device.type != "cuda":
        return None
    free, _ = torch.cuda.mem_get_info(device)
    return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)


def query_cells_per_product(device: torch.device, rows: int, channels: int) -> int:
    """Query cells of one product of a target of ``rows`` cells: ``QUERY_CELLS_PER_PRODUCT`` on a CPU; on a
    GPU as many as ``GPU_MEMORY_SHARE`` of the free memory holds (a float32 cosine per target cell, the
    packed query cell, and the bookkeeping's temporaries: about 12 bytes per target cell and column)."""
    free = free_gpu_bytes(device)
    if free is None:
        return QUERY_CELLS_PER_PRODUCT
    per_column = 12 * max(rows, 1) + 4 * channels + 64
    return int(min(max(GPU_MEMORY_SHARE * free // per_column, QUERY_CELLS_PER_PRODUCT), MAX_QUERY_CELLS_PER_PRODUCT))


def ransac_batch(device: torch.device, slots: int, iterations: int) -> int:
    """Directional scores per RANSAC batch: ``defaults.RANSAC_BATCH`` on a CPU (where larger batches gain
    nothing); on a GPU as many as ``GPU_MEMORY_SHARE`` of the free memory holds, at about twelve float32
    values per (match slot, hypothesis): the mapped points, their residuals and the weights of
    ``ransac.cell_scores`` live at once. Scores do not depend on it."""
    free = free_gpu_bytes(device)
    if free is None:
        return defaults.RANSAC_BATCH
    per_score = 48 * max(slots, 1) * max(iterations, 1)
    return int(min(max(GPU_MEMORY_SHARE * free // per_score, defaults.RANSAC_BATCH), MAX_RANSAC_BATCH))


def product_dtype(device: torch.device, features: torch.dtype, precision: str) -> torch.dtype:
    """Type the product's operands are cast to: float32 on a CPU (bfloat16 or float16 storage included: the
    CPU has no fast half-precision product that keeps the decisions), the features' own type on a GPU,
    or bfloat16 when asked for."""
    check_option("product_precision", precision, PRODUCT_PRECISIONS)
    if device.type == "cpu":
        return torch.float32
    return torch.bfloat16 if precision == "bfloat16" else features


@contextlib.contextmanager
def products_in(device: torch.device, precision: str) -> Iterator[None]:
    """TF32 for float32 products on a CUDA device while inside, when ``precision`` is "tf32"; nothing else.

    The setting is process-wide, so it is restored on the way out; a GPU's scoring runs on one thread
    (``threads.default_workers``), so no other product sees it.
    """
    check_option("product_precision", precision, PRODUCT_PRECISIONS)
    if precision != "tf32" or device.type != "cuda":
        yield
        return
    matmul = torch.backends.cuda.matmul
    name, value = ("fp32_precision", "tf32") if hasattr(matmul, "fp32_precision") else ("allow_tf32", True)
    before = getattr(matmul, name)
    setattr(matmul, name, value)
    try:
        yield
    finally:
        setattr(matmul, name, before)


def query_columns(sizes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The packed layout of queries of ``sizes`` ``(J,)`` real cells (on the CPU): seg ``(Q,)``, the query
    of each column, and cell ``(Q,)``, its cell within that query; Q = sizes.sum()."""
    seg = torch.repeat_interleave(torch.arange(len(sizes)), sizes)
    starts = torch.cumsum(sizes, 0) - sizes
    return seg, torch.arange(len(seg)) - starts[seg]


def row_maxima(
    cos: torch.Tensor, seg: torch.Tensor, n_queries: int, sizes: list[int], scatter: bool | None = None
) -> torch.Tensor:
    """``(R, J)`` largest cosine of each target cell (row) within each of the J packed queries.

    On a GPU one scatter-reduce (amax) keyed by (row, query): one kernel whatever J. On a CPU a reduction per
    query's contiguous block of columns, which measured 2.7x faster there than the scatter (25 against 68 ms
    for a 1,306 x 12,080 product of 40 queries, one thread; docs/benchmarks.md, "Issue 42"). ``scatter``
    forces one way (for the tests); the maxima are the same.
    """
    if not (cos.device.type != "cpu" if scatter is None else scatter):
        return torch.stack([block.amax(dim=1) for block in cos.split(sizes, dim=1)], dim=1)
    columns = seg.expand(cos.shape[0], -1)
    return cos.new_full((cos.shape[0], n_queries), -torch.inf).scatter_reduce_(1, columns, cos, "amax")


def mutual_slots(
    cos: torch.Tensor,
    lengths: list[int],
    tpos: torch.Tensor,
    seg: torch.Tensor,
    flat: torch.Tensor,
    sizes: list[int],
    lq: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mutual matches of one target against packed queries, laid out as ``(J, S * lq)`` slots.

    A couple (p, c) is mutual at scale s when cos[p, c] is the largest of column c within scale s and of
    row p within c's query; a match needs a positive cosine. Where several target cells tie for a column's
    maximum, the first of them that is mutual is kept (``argmax``'s rule for the first, extended to ties).

    Args:
        cos: ``(R, Q)`` float cosines of the target's R real cells (scales one after the other, ``lengths``
            cells each) with Q packed query cells; modified while working and restored.
        tpos: ``(R, 2)`` target cell positions.
        seg: ``(Q,)`` int64 query of each column, in [0, J); flat ``(Q,)`` its slot, seg * lq + cell.
        sizes: the J packed queries' cell counts (host integers, summing to Q); lq: slots per query and scale.

    Returns:
        valid ``(J, S * lq)`` bool, sim ``(J, S * lq)`` the cosines (0 where not valid) and target positions
        ``(J, S * lq, 2)`` of the matches, scale-major within each query.
    """
    r, q = cos.shape
    n_scales, n_queries = len(lengths), len(sizes)
    row_best = row_maxima(cos, seg, n_queries, sizes)  # (R, J)
    offsets = torch.tensor([0, *lengths[:-1]], device=cos.device).cumsum(0).view(-1, 1)  # (S, 1)
    best = [part.max(dim=0) for part in cos.split(lengths)]  # the first of equal maxima
    colmax = torch.stack([b.values for b in best])  # (S, Q)
    rows = torch.stack([b.indices for b in best]) + offsets  # (S, Q) first best target cell
    flat_cos = cos.view(-1)
    best_at = (rows * q + torch.arange(q, device=cos.device)).view(-1)  # (S * Q,) each column's first best
    flat_cos.index_fill_(0, best_at, -torch.inf)  # the runner-up of each column says whether the best is tied
    second = torch.stack([part.amax(dim=0) for part in cos.split(lengths)])
    flat_cos.index_copy_(0, best_at, colmax.view(-1))
    positive = colmax > 0
    valid = positive & (colmax >= row_best.view(-1)[rows * n_queries + seg])
    tied = positive & ~valid & (second == colmax)
    if bool(tied.any()):  # rare: another cell of equal cosine may be mutual where the first is not
        scale, col = tied.nonzero(as_tuple=True)
        sub = cos[:, col]  # (R, k)
        row_scale = torch.repeat_interleave(torch.arange(n_scales), torch.tensor(lengths)).to(cos.device)
        ok = (sub == colmax[scale, col]) & (sub >= row_best[:, seg[col]]) & (row_scale.view(-1, 1) == scale)
        valid[scale, col] = ok.any(dim=0)
        rows[scale, col] = ok.to(torch.uint8).argmax(dim=0)  # the first mutual one
    slots = n_queries * lq
    out_valid = torch.zeros((n_scales, slots), dtype=torch.bool, device=cos.device).index_copy_(1, flat, valid)
    sim = torch.zeros((n_scales, slots), dtype=cos.dtype, device=cos.device)
    sim.index_copy_(1, flat, torch.where(valid, colmax, 0.0))
    index = torch.full((n_scales, slots), r - 1, dtype=torch.long, device=cos.device)
    index.index_copy_(1, flat, torch.where(valid, rows, r - 1))
    pos = tpos[index]

    def per_query(x: torch.Tensor) -> torch.Tensor:
        return x.view(n_scales, n_queries, lq, *x.shape[2:]).transpose(0, 1).reshape(n_queries, -1, *x.shape[2:])

    return per_query(out_valid), per_query(sim), per_query(pos)
