"""The collation service: a Flask REST API over RQ jobs and a filesystem data store.

``create_app(settings)`` builds the API (``collation.service.app``); ``collation.service.cli`` runs it
(``collate serve``) and the workers (``collate worker``). The contract is ``openapi.yaml`` at the
repository root.

Modules, each importing only those listed after it::

    cli ──▶ app ──▶ routes ──▶ collations, layers ──▶ results, urls, jobs_bridge ──▶ state ──▶ sweeper, cache
    viewer.routes ──▶ viewer.data ──▶ results, urls, state, schemas, problems
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flask import Flask

    from ..settings import Settings


def create_app(settings: Settings | None = None, **kwargs: Any) -> Flask:
    """Builds the Flask app (see ``collation.service.app.create_app``); imports Flask only when called."""
    from .app import create_app as _create_app

    return _create_app(settings, **kwargs)


__all__ = ["create_app"]
