"""The service tests' fixtures (``tests/service/conftest.py``: a private Redis, the loopback site with
synthetic manuscripts, settings, app, client, worker subprocesses, the OpenAPI client), made
importable by the hostile tests, which live in another folder (a conftest only serves its own).

A hostile test module imports the fixtures it uses by name::

    from service_fixtures import app, client, redis_server, redis_url, settings, site, synthetic, workers

and pytest finds them in the module's namespace. ``service_helpers`` becomes importable too.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SERVICE_TESTS = Path(__file__).resolve().parents[1] / "service"
if str(SERVICE_TESTS) not in sys.path:
    sys.path.insert(0, str(SERVICE_TESTS))


def _load_service_conftest():
    name = "service_conftest_for_hostile"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SERVICE_TESTS / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_conftest = _load_service_conftest()

redis_server = _conftest.redis_server
redis_url = _conftest.redis_url
site = _conftest.site
synthetic = _conftest.synthetic
settings = _conftest.settings
app = _conftest.app
client = _conftest.client
run_jobs = _conftest.run_jobs
workers = _conftest.workers
openapi = _conftest.openapi
api = _conftest.api
Site = _conftest.Site
Synthetic = _conftest.Synthetic

__all__ = [
    "Site",
    "Synthetic",
    "api",
    "app",
    "client",
    "openapi",
    "redis_server",
    "redis_url",
    "run_jobs",
    "settings",
    "site",
    "synthetic",
    "workers",
]
