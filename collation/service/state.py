"""What one app owns for its lifetime: its ``Runtime``, its document cache and its recovery sweeper.

``create_app`` builds one ``ServiceState`` and keeps it in ``app.extensions["collation"]``; views
reach it through ``service_state()`` or ``current_runtime()`` (like Flask's ``current_app``). Two
apps in one process share nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flask import Flask, current_app

from collation.jobs.runtime import Runtime
from collation.service.documents import RECORDS_CACHED, DocumentCache
from collation.service.inspection import InspectGate
from collation.service.sweeper import Sweeper

EXTENSION = "collation"
"""The key of the app's ``ServiceState`` in ``app.extensions``."""


@dataclass
class ServiceState:
    """Everything the requests of one app share."""

    runtime: Runtime
    sweeper: Sweeper
    inspections: InspectGate
    documents: DocumentCache = field(default_factory=DocumentCache)
    records: DocumentCache = field(default_factory=lambda: DocumentCache(RECORDS_CACHED))

    def close(self) -> None:
        """Stops the sweeper (when started) and the inspections, and closes the runtime's Redis pool."""
        self.sweeper.stop()
        self.inspections.close()
        self.documents.clear()
        self.records.clear()
        self.runtime.close()


def init_app(app: Flask, runtime: Runtime) -> ServiceState:
    """Attaches the state of ``runtime`` to ``app``; the sweeper is created stopped."""
    state = ServiceState(
        runtime=runtime, sweeper=Sweeper.for_runtime(runtime), inspections=InspectGate(runtime.settings)
    )
    app.extensions[EXTENSION] = state
    return state


def service_state(app: Flask | None = None) -> ServiceState:
    """The ``ServiceState`` of ``app`` (default: the current app)."""
    return (app or current_app).extensions[EXTENSION]


def current_runtime() -> Runtime:
    """The current app's ``Runtime``."""
    return service_state().runtime
