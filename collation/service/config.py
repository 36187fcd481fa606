"""The service's settings: every default in one place, then ``COLLATION_*`` environment overrides.

The API process and the workers read the same settings, so a worker started with the same environment
as the API finds the same data store, Redis and queues.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import defaults
from ..errors import InputError

ENV_PREFIX = "COLLATION_"

DEFAULTS: dict[str, Any] = {
    "REDIS_URL": None,  # None: `collate serve` starts a private redis-server under DATA_DIR
    "DATA_DIR": "data",  # the data store, the system of record
    "DEVICE": "auto",  # auto | cpu | cuda (compute workers)
    "BACKBONE": defaults.BACKBONE,  # default of the "backbone" option
    "WEIGHTS_DIR": None,  # folder with resnet50-*.pth for resnet50-conv4
    "ALLOWED_HOSTS": [],  # hosts that may be fetched although they resolve to private addresses
    "API_TOKENS": [],  # bearer tokens for write endpoints; empty: writes are open
    "PUBLIC_URL": None,  # base URL of the API in annotation ids; None: the request's host URL
    "QUEUE_IO": "collation-io",  # manifests, regions, planning, finalizing
    "QUEUE_COMPUTE": "collation-compute",  # features and pair scores (GPU workers)
    "CHUNK_PAIRS": 512,  # pairs per scoring job: about 10 s of CPU with efficientnet-lite0
    "JOB_TIMEOUT": 3600,  # seconds one job may run
    "JOB_RETRIES": 2,  # retries of a failed or abandoned job
    "HEARTBEAT_TTL": 20,  # seconds after which a silent worker's job is abandoned and retried
    "SWEEP_INTERVAL": 15,  # seconds between the service's recovery sweeps; 0 disables them
    "MAX_MANIFESTS": 32,  # manifests per collation
    "MAX_REGIONS": 5000,  # regions per manuscript
    "PAGE_SIZE": 100,  # annotations per page of the AnnotationCollection
    "CORS_ORIGIN": "*",  # Access-Control-Allow-Origin of every response
    "HOST": "127.0.0.1",  # `collate serve` bind address
    "PORT": 8000,  # `collate serve` port
    "OPENAPI_PATH": None,  # the contract served at /openapi.yaml; None: openapi.yaml of the repository
}
"""Defaults, by name without the ``COLLATION_`` prefix. Lists are comma-separated in the environment."""


def _parse(name: str, raw: str) -> Any:
    default = DEFAULTS[name]
    if isinstance(default, bool):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            raise InputError(f"{ENV_PREFIX}{name} must be an integer, not {raw!r}", field=name) from None
    if isinstance(default, list):
        return [item.strip() for item in raw.split(",") if item.strip()]
    return raw or None


def load_settings(overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> dict:
    """Merges the defaults, the ``COLLATION_*`` environment and ``overrides``, in that order.

    Args:
        overrides: settings by name without prefix (tests and the command line); they win.
        environ: the environment to read; ``os.environ`` by default.

    Returns:
        A new dict with every key of ``DEFAULTS``.
    """
    environ = os.environ if environ is None else environ
    settings = dict(DEFAULTS)
    for name in DEFAULTS:
        if ENV_PREFIX + name in environ:
            settings[name] = _parse(name, environ[ENV_PREFIX + name])
    for name, value in (overrides or {}).items():
        settings[name] = value
    settings["DATA_DIR"] = str(Path(settings["DATA_DIR"]).expanduser().resolve())
    if settings["DEVICE"] not in ("auto", "cpu", "cuda") and not str(settings["DEVICE"]).startswith("cuda:"):
        raise InputError(f"{ENV_PREFIX}DEVICE must be auto, cpu or cuda, not {settings['DEVICE']!r}",
                         field="DEVICE")
    return settings


def settings_environ(settings: Mapping[str, Any]) -> dict[str, str]:
    """The ``COLLATION_*`` variables that give a child process (a worker) the same settings."""
    env = {}
    for name, value in settings.items():
        if name not in DEFAULTS or value is None:
            continue
        env[ENV_PREFIX + name] = ",".join(value) if isinstance(value, list) else str(value)
    return env
