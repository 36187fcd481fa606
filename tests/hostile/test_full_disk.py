"""A disk that fills while a worker saves features (issue 41, item 6): ``torch.save`` then fails with a
``RuntimeError`` ("unexpected pos"), which was taken for the step's own failure: the collation failed
("fewer than two manuscripts could be read") and stayed failed after space returned, and ``/readyz``
answered 200 with 5.7 MB free. Now the failure is named ("the data store is full"), ``/readyz`` reports
the low space, and the collation resumes on its own once there is room (at-least-once, as after a
killed worker).

The disk: a fault at the file boundary, since a test cannot fill a real disk. While ``state["full"]``,
every file the store opens under ``features/`` takes 1 KiB and then fails its writes with ENOSPC, as
the kernel answers a full disk (the other writes fit: small JSON and PNG files), and the disk reports
5.7 MiB free.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from service_helpers import drain, service_settings

from collation.app import create_app
from collation.core import atomic
from collation.service.state import service_state

API = "/api/v1"
MiB = 2**20


class FullFile:
    """A file of the data store on a full disk: its first ``room`` bytes are written, then ENOSPC."""

    def __init__(self, real: Any, room: int) -> None:
        self.real, self.room = real, room

    def write(self, data: Any) -> int:
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.real.write(data)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, close, tell...: the real file's
        return getattr(self.real, name)

    def __enter__(self) -> FullFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.real.close()


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[str, Any]]:
    state: dict[str, Any] = {"full": False, "root": (tmp_path / "data").resolve(), "refused": 0}
    real_open, real_usage = open, shutil.disk_usage

    def store_open(path: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        f = real_open(path, mode, *args, **kwargs)
        if state["full"] and Path(path).resolve().is_relative_to(state["root"] / "features"):
            state["refused"] += 1
            return FullFile(f, 1024)
        return f

    def disk_usage(path: Any) -> Any:
        usage = real_usage(path)
        if state["full"] and Path(path).resolve().is_relative_to(state["root"]):
            return usage._replace(free=int(5.7 * MiB))
        return usage

    monkeypatch.setattr(atomic, "open", store_open, raising=False)
    monkeypatch.setattr(shutil, "disk_usage", disk_usage)
    yield state


def test_a_disk_full_while_saving_features_is_named_and_the_collation_resumes_on_its_own(
    disk: dict[str, Any], redis_url: str, synthetic: Any
) -> None:
    config = service_settings(disk["root"], redis_url, min_free_bytes=64 * MiB)
    app = create_app(config, TESTING=True)
    client = app.test_client()
    try:
        body = {"manifests": [synthetic.a, synthetic.b], "regions": {"1": synthetic.b_regions}}
        cid = client.post(f"{API}/collations", json=body).get_json()["id"]
        disk["full"] = True
        drain(config)  # the features steps fail on the full disk, with their retries
        assert disk["refused"] >= 2
        doc = client.get(f"{API}/collations/{cid}").get_json()
        assert doc["status"] in ("queued", "running"), doc  # not failed: left for later
        assert (doc.get("problem") or "").startswith("the data store is full"), doc
        ready = client.get(f"{API}/readyz")
        assert ready.status_code == 503
        assert ready.get_json()["checks"]["store_error"].startswith("the data store is full: 5.7 MiB free")
        assert service_state(app).sweeper.sweep() == 0  # nothing is tried again while the disk is full

        disk["full"] = False  # space returns: no one posts a retry
        assert service_state(app).sweeper.sweep() == 1
        drain(config)
        doc = client.get(f"{API}/collations/{cid}").get_json()
        assert doc["status"] == "finished" and doc.get("problem") is None, doc
        corr = client.get(f"{API}/collations/{cid}/correspondences?pair=0,1&top=1").get_json()
        assert [item["candidates"][0]["index"] for item in corr["items"]] == list(range(synthetic.n))
    finally:
        service_state(app).close()
