"""S_trans's bookkeeping (collation.engine.matching): mutual matches by reductions, work sized by the device."""

from __future__ import annotations

import pytest
import torch
from engine_grid import NO_CUDA

from collation.core.errors import OptionError
from collation.engine import matching
from collation.engine.matching import (
    QUERY_CELLS_PER_PRODUCT,
    mutual_slots,
    product_dtype,
    query_cells_per_product,
    query_columns,
    ransac_batch,
    row_maxima,
)


def reference_slots(cos, lengths, tpos, sizes, lq):
    """The mutual matches cell by cell, in plain loops: for every scale and query cell, the first target cell
    of that scale with the column's largest positive cosine that is also the best of its row within the query."""
    n_queries, n_scales = len(sizes), len(lengths)
    valid = torch.zeros((n_queries, n_scales * lq), dtype=torch.bool)
    sim = torch.zeros((n_queries, n_scales * lq))
    index = torch.full((n_queries, n_scales * lq), cos.shape[0] - 1)
    starts = [sum(sizes[:j]) for j in range(n_queries)]
    for s in range(n_scales):
        first = sum(lengths[:s])
        for j, size in enumerate(sizes):
            block = cos[first : first + lengths[s], starts[j] : starts[j] + size]
            row_best = cos[first : first + lengths[s], starts[j] : starts[j] + size].amax(dim=1)
            for c in range(size):
                column = block[:, c]
                top = column.max()
                for p in range(lengths[s]):
                    if column[p] == top and top > 0 and column[p] >= row_best[p]:
                        valid[j, s * lq + c] = True
                        sim[j, s * lq + c] = top
                        index[j, s * lq + c] = first + p
                        break
    return valid, sim, tpos[index]


@pytest.mark.parametrize("levels", [None, 4], ids=["continuous", "many-ties"])
def test_mutual_slots_are_those_of_the_cell_by_cell_rule(levels):
    generator = torch.Generator().manual_seed(3)
    lengths, sizes, lq = [6, 7, 9], [5, 3, 8, 1], 8
    cos = torch.rand((sum(lengths), sum(sizes)), generator=generator) * 2 - 1
    if levels:  # blank paper: equal descriptors give equal cosines, ties everywhere
        cos = (cos * levels).round() / levels
    tpos = torch.rand((sum(lengths), 2), generator=generator)
    seg, cell = query_columns(torch.tensor(sizes))
    before = cos.clone()
    valid, sim, pos = mutual_slots(cos, lengths, tpos, seg, seg * lq + cell, sizes, lq)
    expected = reference_slots(before, lengths, tpos, sizes, lq)
    assert torch.equal(cos, before)  # the product is given back as it came
    assert valid.any() and (~valid).any()
    for got, want in zip((valid, sim, pos), expected, strict=True):
        assert torch.equal(got, want)


def test_row_maxima_by_scatter_equal_those_by_blocks():
    sizes = [4, 1, 7]
    cos = torch.randn((9, sum(sizes)), generator=torch.Generator().manual_seed(1))
    seg, _ = query_columns(torch.tensor(sizes))
    by_blocks = row_maxima(cos, seg, len(sizes), sizes, scatter=False)  # a CPU's way
    assert torch.equal(row_maxima(cos, seg, len(sizes), sizes, scatter=True), by_blocks)  # a GPU's way
    assert torch.equal(by_blocks[:, 1], cos[:, 4]) and torch.equal(by_blocks[:, 2], cos[:, 5:].amax(dim=1))


def test_query_columns_pack_queries_one_after_another():
    seg, cell = query_columns(torch.tensor([2, 0, 3]))
    assert seg.tolist() == [0, 0, 2, 2, 2] and cell.tolist() == [0, 1, 0, 1, 2]


def fake_gpu(monkeypatch, free: int) -> torch.device:
    """A CUDA device with ``free`` bytes: only its memory is asked for (``torch.cuda.mem_get_info``)."""
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (free, 80 << 30))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device: 0)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device: 0)
    return torch.device("cuda", 0)


def test_products_and_ransac_batches_are_sized_by_the_free_gpu_memory(monkeypatch):
    cpu = torch.device("cpu")
    assert query_cells_per_product(cpu, 2420, 1024) == QUERY_CELLS_PER_PRODUCT
    assert ransac_batch(cpu, 2000, 100) == 16
    big = fake_gpu(monkeypatch, 40 << 30)
    cells = query_cells_per_product(big, 2420, 1024)
    assert cells == int(0.25 * (40 << 30) // (12 * 2420 + 4 * 1024 + 64))  # about 320,000: every query of D2
    assert ransac_batch(big, 2000, 100) == int(0.25 * (40 << 30) // (48 * 2000 * 100))  # 1,118 scores of 2,000 slots
    assert ransac_batch(fake_gpu(monkeypatch, 140 << 30), 200, 25) == matching.MAX_RANSAC_BATCH
    small = fake_gpu(monkeypatch, 1 << 20)  # a nearly full card still works, at the CPU's sizes
    assert query_cells_per_product(small, 2420, 1024) == QUERY_CELLS_PER_PRODUCT
    assert ransac_batch(small, 2000, 100) == 16


def test_product_precision_is_float32_on_a_cpu_and_checked():
    cpu, gpu = torch.device("cpu"), torch.device("cuda", 0)
    assert product_dtype(cpu, torch.bfloat16, "bfloat16") == torch.float32
    assert product_dtype(gpu, torch.float16, "float32") == torch.float16
    assert product_dtype(gpu, torch.float32, "bfloat16") == torch.bfloat16
    with pytest.raises(OptionError, match="product_precision"):
        product_dtype(cpu, torch.float32, "fp8")


@NO_CUDA
@pytest.mark.parametrize("precision", ["float32", "tf32"])
def test_mutual_slots_on_cuda_equal_the_cpu(precision):
    generator = torch.Generator().manual_seed(5)
    lengths, sizes, lq = [30, 40], [20, 25, 11], 25
    target = torch.nn.functional.normalize(torch.randn((sum(lengths), 64), generator=generator), dim=1)
    packed = torch.nn.functional.normalize(torch.randn((sum(sizes), 64), generator=generator), dim=1)
    tpos = torch.rand((sum(lengths), 2), generator=generator)
    seg, cell = query_columns(torch.tensor(sizes))
    want = mutual_slots(target @ packed.T, lengths, tpos, seg, seg * lq + cell, sizes, lq)
    cuda = torch.device("cuda")
    with matching.products_in(cuda, precision):
        cos = target.to(cuda) @ packed.to(cuda).T
    got = mutual_slots(cos, lengths, tpos.to(cuda), seg.to(cuda), (seg * lq + cell).to(cuda), sizes, lq)
    same = (got[0].cpu() == want[0]).float().mean()
    assert same == 1 if precision == "float32" else same > 0.97  # TF32 may swap a near tie
    assert torch.allclose(got[1].cpu()[want[0]], want[1][want[0]], atol=1e-5 if precision == "float32" else 5e-3)
