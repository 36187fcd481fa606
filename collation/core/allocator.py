"""Keeps freed memory in the process for reuse, instead of handing it back to the system at once.

glibc's allocator maps every block above its mmap threshold (128 KiB at first) straight from the
system and unmaps it when freed, and trims the top of its heap as soon as 128 KiB are free there. The
tensors of feature extraction and S_trans are a few MB each, allocated and freed thousands of times:
each new mapping is zeroed page by page by the kernel. On the 2-core machine that was a fifth of
the CPU time of a collation (1.4 million page faults for 90 images). ``keep_freed_memory`` raises both
thresholds once per process, as glibc's ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_``
environment variables would; blocks above 32 MiB (glibc's maximum) are still mapped.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024
"""Blocks up to this size come from the heap (glibc's largest allowed threshold on 64-bit)."""
TRIM_THRESHOLD = 256 * 1024 * 1024
"""Free memory kept at the top of the heap before any is given back."""


def keep_freed_memory() -> bool:
    """Raises glibc's mmap and trim thresholds; True when done, False on another C library."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return False
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):  # musl, macOS: not glibc
        return False
    mallopt = libc.mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
