"""The allocator setting of collate's processes: freed tensors are reused, not mapped again."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

# S_trans in a fresh process, as the engine runs it: after one warm-up scoring, the page faults of each of
# five scorings of four drawings' 16 pairs, counted apart. S_trans's RANSAC temporaries are what the
# setting is for (since the padding mask zeroes in place, issue 28, extraction allocates too little to
# show it). The steady state is counted, not a total with the warm-up in it: the warm-up's faults (the
# heap growing once, lazy initialisation) vary from machine to machine and made the ratio of totals
# fall to 9.5 in CI (21,850 against 2,307; 49 in an earlier run on the same kind of machine). With the
# setting, one scoring in eight or so still grows the heap once (2,201 to 3,106 faults): the median counts.
SCRIPT = """
import resource, sys
from PIL import Image, ImageDraw
from collation.core.allocator import keep_freed_memory
from collation.engine.backbones import load_backbone
from collation.engine.features import extract_features
from collation.engine.similarity import all_pairs, score_pairs
if sys.argv[1] == "keep":
    assert keep_freed_memory()
images = []
for k, size in enumerate([(300, 170), (150, 290), (260, 250), (200, 210)]):
    image = Image.new("RGB", size, (230, 220, 190))
    ImageDraw.Draw(image).ellipse([10 + k, 10, size[0] // 2, size[1] // 2], outline=(20, 20, 20), width=3)
    images.append(image)
feats = extract_features(images, load_backbone("efficientnet-lite0"), workers=1)
score_pairs(feats, feats, all_pairs(4, 4))
for _ in range(5):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    score_pairs(feats, feats, all_pairs(4, 4))
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")
@pytest.mark.heavy
def test_freed_memory_is_reused_without_page_faults():
    # both processes at once (each counts its own page faults): the test takes one process's time; one
    # thread each, so that the two and the suite's other xdist worker do not fight over two cores
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    runs = {
        mode: subprocess.Popen([sys.executable, "-c", SCRIPT, mode], stdout=subprocess.PIPE, text=True, env=env)
        for mode in ("default", "keep")
    }
    faults = {}
    for mode, process in runs.items():
        out, _ = process.communicate(timeout=600)
        assert process.returncode == 0, f"{mode}: exit status {process.returncode}"
        faults[mode] = [int(line) for line in out.split()]
    default, kept = faults["default"], faults["keep"]
    # Measured on one thread (2-core AVX-512 Xeon, 2026-11-28): 8,740 to 13,696 page faults per scoring by
    # default, every time; with the setting 0, but for one scoring in eight or so (2,201 to 3,106). On
    # another Xeon (kernel 6.18, glibc 2.36, 2026-11-29) the default stops faulting after one or two
    # scorings (1,809, 4,647, then 0, 0, 0: glibc's own threshold rises to the blocks it has freed), so
    # the default is compared only where it faults in its steady state; the setting never may.
    assert len(default) == len(kept) == 5
    assert sorted(kept)[2] < 1_000
    if min(default) > 1_000:
        assert sorted(kept)[2] < min(default) / 10
