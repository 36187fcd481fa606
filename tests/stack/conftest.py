"""Fixtures of the browser modules: the service on the Physiologus folios (``served``), its finished P2-P3
collation (``collation``) and the screenshot folder (the page is conftest's, beside its Chromium).

Here, not in test_viewer_browser.py whose modules imported them by name: a fixture imported into another
module is a fixture of that module too, with a cache of its own, so each of the four modules that imported
``collation`` computed the collation again (6-7 s each) and each importer of ``served`` started a service
with an empty store of its own. Defined once here, a session fixture is computed once per xdist worker,
and ``tests/conftest.py`` (``SHARED_SESSION_MODULES``) runs its modules on one worker."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis import Redis
from service_helpers import physiologus_v2, physiologus_v3, served_app
from viewer_service import CANVAS_SCALE, REGIONS, Served, run_worker

from collation.app import create_app
from collation.core.settings import Settings


@pytest.fixture(scope="session")
def served(
    iipsrv: Any, site: Any, redis_server: tuple[Any, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """The service, over real HTTP (the browser needs it), with P2 and P3 manifests on the static site.

    Session-scoped: the collation is computed once. Features and scores are cached in the data store
    by content, so a second collation of the same regions (other options) only re-runs the cheap steps.
    """
    # P2 with canvases twice their images (as at the Vatican), where Mirador 3.4.3 and 4.0.0 misplace
    # boxes unless the view opens its image-space variant (mirador#4533); regions in the request
    p2, regions2 = physiologus_v2(
        f"{site.url}/physiologus/P2/manifest.json",
        "P2 Ott.gr.354",
        iipsrv.boxes["P2"][:REGIONS],
        iipsrv,
        canvas_scale=CANVAS_SCALE,
    )
    p3, regions3 = physiologus_v3(
        f"{site.url}/physiologus/P3/manifest.json", "P3 Marc.gr.IV.35", iipsrv.boxes["P3"][:REGIONS], iipsrv
    )
    urls = [site.write_json("physiologus/P2/manifest.json", p2), site.write_json("physiologus/P3/manifest.json", p3)]
    settings = Settings.from_env(
        {},  # no COLLATION_* from the environment; public_url unset: links use the host the browser asked
        redis_url=redis_server[1],
        data_dir=tmp_path_factory.mktemp("viewer") / "data",
        allowed_hosts=("127.0.0.1",),
        backbone="efficientnet-lite0",
        device="cpu",
        sweep_interval=0,
        heartbeat_ttl=10,
    )
    app = create_app(settings, TESTING=True)
    body = {"manifests": urls, "regions": {"0": regions2, "1": regions3}}
    with served_app(app) as root:
        yield Served(f"{root}/api/v1", settings, body, app, regions=(regions2, regions3))


@pytest.fixture(scope="session")
def collation(served: Served) -> Served:
    """The finished P2-P3 collation (default options), computed once."""
    Redis.from_url(served.settings.redis_url).flushdb()
    served.cid = served.submit()
    run_worker(served.settings)
    doc = served.status(served.cid)
    assert doc["status"] == "finished", doc
    return served


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where screenshots go; copied to ``$COLLATION_SCREENSHOT_DIR`` at the end when it is set."""
    folder = tmp_path_factory.mktemp("screenshots")
    yield folder
    target = os.environ.get("COLLATION_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        for shot in sorted(folder.iterdir()):
            shutil.copy2(shot, Path(target) / shot.name)
