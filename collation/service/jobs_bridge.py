"""The service's one doorway into ``collation.jobs``: the scheduler of an app, assessments, a worker.

Nothing else under ``collation.service`` or ``collation.viewer`` imports ``collation.jobs``, so a
change of the jobs layer's interface changes this module only.

MERGE: the jobs layer is being converted to take a ``Runtime``. Then ``scheduler`` becomes
``return Scheduler(runtime)``, ``run_worker`` calls the new worker entry point with ``settings``,
and the LEGACY ADAPTER section at the bottom (``legacy_settings`` and the ``context.configure``
calls) is deleted.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..runtime import Runtime
from ..settings import Settings
from ..store.datastore import DataStore
from .problems import Unavailable

if TYPE_CHECKING:
    from ..jobs.scheduling import Scheduler


def scheduler(runtime: Runtime) -> Scheduler:
    """The scheduler of ``runtime``'s Redis and data store.

    Raises:
        Unavailable: no Redis is configured (a 503 problem).
    """
    from ..jobs import context
    from ..jobs.scheduling import Scheduler

    if runtime.redis is None:
        raise Unavailable("no Redis is configured (COLLATION_REDIS_URL)")
    settings = legacy_settings(runtime.settings)
    context.configure(settings)  # LEGACY: failure callbacks run during a sweep find the store there
    return Scheduler(runtime.redis, runtime.store, settings)


def apply_assessments(store: DataStore, cid: str) -> None:
    """Recomputes the propagated scores of a collation from its stored N_S and its assessments."""
    from ..jobs.results import apply_assessments as recompute

    recompute(store, cid)


def run_worker(settings: Settings, queues: Sequence[str], *, burst: bool = False, name: str | None = None) -> None:
    """Runs a non-forking worker on the ``queues`` (``io``, ``compute``) until stopped (or empty, with ``burst``)."""
    from ..jobs.worker import work

    legacy_environ()  # LEGACY
    work(legacy_settings(settings), list(queues), burst=burst, name=name, logging_level=settings.log_level.upper())


# --------------------------------------------------------------------------------------------------
# LEGACY ADAPTER: delete at the merge (the old jobs layer takes a dict of upper-case settings)


def legacy_settings(settings: Settings) -> dict[str, Any]:
    """``settings`` as the old ``collation.service.config.load_settings`` dict (paths as strings, lists)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if f.name == "iiif":
            continue
        if isinstance(value, Path):
            value = str(value.expanduser().resolve()) if f.name == "data_dir" else str(value)
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name.upper()] = value
    return out


def legacy_environ() -> None:
    """Rewrites this worker process's ``COLLATION_*`` floats with integral values (``1.0``) as ``1``.

    The old jobs layer parses the environment again (``service.config.load_settings``,
    ``iiif.http.conf_from_env``) with ``int()`` where ``Settings`` has floats, and ``Settings.to_environ``
    writes floats as ``1.0``; the values are the same.
    """
    for name, value in list(os.environ.items()):
        if name.startswith("COLLATION_") and re.fullmatch(r"-?\d+\.0", value):
            os.environ[name] = value[:-2]
