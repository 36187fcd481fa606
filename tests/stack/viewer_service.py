"""The viewer's browser tests' service on the Physiologus folios: what the fixtures of
``tests/stack/conftest.py`` (``served``, ``collation``) build and hand to the browser modules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests
from service_helpers import drain

from collation.core.settings import Settings

REGIONS = 15  # P2 and P3 illustrations 0-14: the ones whose folios are in the shared data
TIMEOUT_MS = 20_000
CANVAS_SCALE = 2  # P2's canvases are twice their images' pixel size


@dataclass
class Served:
    """The service on a loopback port, its settings, and the request of the Physiologus collation."""

    url: str  # http://127.0.0.1:<port>/api/v1
    settings: Settings
    body: dict[str, Any]
    app: Any
    cid: str = ""
    regions: tuple[list[dict], list[dict]] = ([], [])

    def submit(self, options: dict[str, Any] | None = None) -> str:
        body = {**self.body, "options": options or {}}
        r = requests.post(f"{self.url}/collations", json=body, timeout=30)
        assert r.status_code == 202, r.text
        return r.json()["id"]

    def status(self, cid: str) -> dict[str, Any]:
        return requests.get(f"{self.url}/collations/{cid}", timeout=30).json()


def run_worker(settings: Settings) -> None:
    """An in-process burst worker on both queues (``service_helpers.drain``), until the graph is done."""
    drain(settings)
