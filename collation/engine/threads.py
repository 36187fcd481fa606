"""Work side by side on a CPU: each task on one intra-op thread, as many tasks at once as cores.

torch parallelizes each operation over its intra-op threads (OpenMP), which pays off for one large
operation and not for the many small ones of a forward pass of one small image or a product of one
target with a few queries: there every operation ends in a barrier where the threads spin. On a quiet
2-core machine that costs a little; on a loaded one it costs most of the time (S_trans of 300 pairs:
2.0 s of CPU on one thread, 12-19 s of CPU and 26-31 s of wall time on two, with the machine's other
work taking the second core; docs/benchmarks.md). Tasks side by side, each on one thread, have no
barrier to wait at, and keep both cores busy when both are free.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import TypeVar

import torch

Task = TypeVar("Task")
Result = TypeVar("Result")


def side_by_side(work: Callable[[Task], int], tasks: Sequence[Task], workers: int) -> Iterator[int]:
    """Runs ``work`` on every task, ``workers`` at a time, and yields each one's result as it finishes.

    The results reach the caller in its own thread (for progress reports, which may raise to stop the
    work: the tasks not yet started are then cancelled). With several workers, each runs on one
    intra-op thread; the setting is process-wide, so it is restored when the work ends. ``work`` must
    write only what its own task owns.
    """
    if workers == 1 or len(tasks) <= 1:
        for task in tasks:
            yield work(task)
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # read by each worker thread when it starts its first operation
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="side-by-side") as pool:
            futures = [pool.submit(work, task) for task in tasks]
            try:
                for future in as_completed(futures):
                    yield future.result()
            finally:
                for future in futures:
                    future.cancel()
    finally:
        torch.set_num_threads(threads)


def default_workers(device: torch.device) -> int:
    """Tasks side by side: as many as torch's intra-op threads on a CPU, one on a GPU (its own parallelism)."""
    return torch.get_num_threads() if device.type == "cpu" else 1


def prefetched(prepare: Callable[[Task], Result], tasks: Sequence[Task], workers: int) -> Iterator[Result]:
    """``prepare(task)`` of every task, in order, computed ``workers`` at a time ahead of the caller.

    For a GPU's forward passes: the CPU's cores decode and resize the next batches (Pillow and torch
    release the GIL) while the caller's thread runs the current one on the device. At most
    ``2 * workers`` prepared results wait at a time, so memory stays bounded whatever the task count. Each
    loader runs on one intra-op thread (as ``side_by_side``'s tasks: no core oversubscribed); the setting is
    process-wide and restored when the work ends.
    """
    if workers <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield prepare(task)
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield from _prefetch(prepare, tasks, workers)
    finally:
        torch.set_num_threads(threads)


def _prefetch(prepare: Callable[[Task], Result], tasks: Sequence[Task], workers: int) -> Iterator[Result]:
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prefetch") as pool:
        ahead: deque[Future[Result]] = deque()
        pending = iter(tasks)
        try:
            for task in itertools.islice(pending, 2 * workers):
                ahead.append(pool.submit(prepare, task))
            while ahead:
                result = ahead.popleft().result()
                for task in itertools.islice(pending, 1):
                    ahead.append(pool.submit(prepare, task))
                yield result
        finally:
            for future in ahead:
                future.cancel()


def cpu_cores() -> int:
    """CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
