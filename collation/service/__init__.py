"""The collation service: a Flask REST API over RQ jobs and a filesystem data store.

``create_app(config)`` builds the API; ``collation.service.cli`` runs it (``collate serve``) and the
workers (``collate worker``). The contract is ``openapi.yaml`` at the repository root.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flask import Flask


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """Builds the Flask app (see ``collation.service.app.create_app``)."""
    from .app import create_app as _create_app

    return _create_app(config)


__all__ = ["create_app"]
