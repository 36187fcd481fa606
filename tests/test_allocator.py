"""The allocator setting of collate's processes: freed tensors are reused, not mapped again."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

SCRIPT = """
import resource, sys
import torch
from collation.allocator import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(100):
    blocks = [torch.ones(1_000_000) for _ in range(4)]  # 4 x 4 MB, then all freed, as a forward pass does
    del blocks
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")
def test_freed_blocks_of_a_few_megabytes_are_reused_without_page_faults():
    def faults(mode: str) -> int:
        out = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, check=True)
        return int(out.stdout.strip().splitlines()[-1])

    default, kept = faults("default"), faults("keep")
    assert default > 100 * 1000  # the heap trimmed and grown again: about 1000 faults per 4 MB
    assert kept < default / 20
