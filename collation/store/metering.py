"""Counting the data store's operations: ``collation_store_operations_total`` and their durations.

A store built with a ``Metrics`` (``open_store(settings, metrics)``: the API's, a worker's with a
metrics port) counts each operation that touches the disk or the object store itself, by backend
(``folder``, ``s3``), operation and outcome: ``ok``, ``missing`` (the collation was deleted
meanwhile) or ``error`` (anything else the store raised: a full disk, an unreachable object store).
A store without one counts nothing and pays one attribute check per operation.

``FolderStore`` marks its leaf methods with ``@metered("read")``; ``ObjectStore`` counts every group
of S3 requests where it already wraps them (``ObjectStore._calls``), with ``measure``.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from collation.store.datastore import CollationNotFound

if TYPE_CHECKING:
    from collation.core.metrics import Metrics

F = TypeVar("F", bound=Callable[..., Any])


def outcome_of(error: BaseException | None) -> str:
    """``ok`` (no error), ``missing`` (``CollationNotFound``) or ``error``."""
    if error is None:
        return "ok"
    return "missing" if isinstance(error, CollationNotFound) else "error"


@contextlib.contextmanager
def measure(metrics: Metrics | None, backend: str, operation: str) -> Iterator[None]:
    """Counts the block as one ``operation`` on ``backend``, with its duration and outcome (nothing
    when ``metrics`` is None)."""
    if metrics is None:
        yield
        return
    started = time.perf_counter()
    error: BaseException | None = None
    try:
        yield
    except GeneratorExit:  # a listing its reader stopped early: not a failure
        raise
    except BaseException as exc:
        error = exc
        raise
    finally:
        metrics.store_operation(backend, operation, outcome_of(error), time.perf_counter() - started)


def metered(operation: str) -> Callable[[F], F]:
    """Marks a method of a store (one with ``metrics`` and ``backend`` attributes) as ``operation``: each
    call is counted by ``measure``."""

    def wrap(method: F) -> F:
        @functools.wraps(method)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            if self.metrics is None:
                return method(self, *args, **kwargs)
            with measure(self.metrics, self.backend, operation):
                return method(self, *args, **kwargs)

        return call  # type: ignore[return-value]

    return wrap
