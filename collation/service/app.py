"""The Flask app factory: settings, Redis and data store once, blueprints, one error handler, CORS."""

from __future__ import annotations

import hmac
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flask import Flask, Response, current_app, request
from redis import Redis

from ..jobs.scheduling import Scheduler
from ..runtime import Runtime
from ..settings import Settings
from ..store.datastore import DataStore
from . import problems
from .config import DEFAULTS, load_settings

log = logging.getLogger("collation.service")

REPO_ROOT = Path(__file__).resolve().parents[2]

WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


@dataclass
class Service:
    """What every request shares: settings, the data store and, when configured, Redis."""

    settings: dict[str, Any]
    store: DataStore
    connection: Redis | None
    runtime: Runtime | None = None
    sweeper: threading.Thread | None = None
    stop: threading.Event = field(default_factory=threading.Event)

    def scheduler(self) -> Scheduler:
        """The scheduler; a 503 problem when Redis is not configured."""
        if self.connection is None:
            raise problems.Unavailable("no Redis is configured (COLLATION_REDIS_URL)")
        return Scheduler(self.runtime)


def service() -> Service:
    """The current app's ``Service``."""
    return current_app.extensions["collation"]


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """Builds the API.

    Args:
        config: settings by name (see ``collation.service.config.DEFAULTS``), over the ``COLLATION_*``
            environment, over the defaults; Flask's own keys (``TESTING``) may be given too.
    """
    app = Flask(__name__)
    settings = load_settings({k: v for k, v in (config or {}).items() if k.isupper()})
    app.config.update(settings)
    app.config.update({k: v for k, v in (config or {}).items() if k not in settings})
    app.json.sort_keys = False  # keep documents in the order we build them (JSON-LD readers care)
    connection = Redis.from_url(settings["REDIS_URL"], socket_connect_timeout=3) if settings["REDIS_URL"] else None
    known = {name.lower(): value for name, value in settings.items() if name in DEFAULTS}
    runtime = Runtime.create(Settings.from_env(**known), redis=connection)
    app.extensions["collation"] = Service(settings, DataStore(settings["DATA_DIR"]), connection, runtime)

    problems.init_app(app)
    app.before_request(_check_token)
    app.after_request(_cors)

    from ..viewer import bp as viewer_bp
    from . import routes

    app.register_blueprint(routes.bp, url_prefix="/api/v1")
    app.register_blueprint(viewer_bp, url_prefix="/api/v1")  # the browser view (collation.viewer)
    return app


def _check_token() -> None:
    """Write requests need ``Authorization: Bearer <token>`` when ``API_TOKENS`` is set; reads are open."""
    tokens = current_app.config["API_TOKENS"]
    if not tokens or request.method not in WRITE_METHODS:
        return
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not any(hmac.compare_digest(token.strip(), t) for t in tokens):
        raise problems.Unauthorized("this request needs a valid bearer token", field="Authorization")


def _cors(response: Response) -> Response:
    """CORS on every response, so that viewers (Mirador) on other origins can read everything."""
    response.headers["Access-Control-Allow-Origin"] = current_app.config["CORS_ORIGIN"]
    response.headers["Access-Control-Allow-Headers"] = "Authorization, Content-Type"
    response.headers["Access-Control-Allow-Methods"] = "GET, POST, DELETE, OPTIONS"
    response.headers["Access-Control-Expose-Headers"] = "Location"
    return response


def start_sweeper(app: Flask) -> threading.Thread | None:
    """Starts the recovery sweep in a thread: at once, then every ``SWEEP_INTERVAL`` seconds.

    It re-enqueues unfinished collations found in the store (after a Redis restart nothing is lost)
    and hands the jobs of dead workers back to their queues.
    """
    state: Service = app.extensions["collation"]
    interval = float(state.settings["SWEEP_INTERVAL"])
    if state.connection is None:
        return None

    def loop() -> None:
        while True:
            try:
                count = state.scheduler().recover()
                if count:
                    log.info("Sweep: %d unfinished collation(s) advanced", count)
            except Exception as exc:  # Redis down: try again at the next tick
                log.warning("Sweep failed: %s", exc)
            if interval <= 0 or state.stop.wait(interval):
                return

    state.sweeper = threading.Thread(target=loop, name="collation-sweeper", daemon=True)
    state.sweeper.start()
    return state.sweeper


def stop_sweeper(app: Flask) -> None:
    state: Service = app.extensions["collation"]
    state.stop.set()
    if state.sweeper is not None:
        state.sweeper.join(timeout=30)
