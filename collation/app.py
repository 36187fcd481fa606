"""The Flask app factory: one ``Runtime`` per app, the blueprints, one error handler, auth, CORS and security headers.

Flask tutorial style: ``create_app`` builds everything an app needs and nothing is created at import
time. The runtime (settings, data store, Redis) is kept with the app's document cache and sweeper in
``app.extensions["collation"]`` (``collation.service.state``); tests build their own apps, and two
apps in one process share nothing.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, request

from collation.core.metrics import Metrics
from collation.core.settings import Settings
from collation.jobs.runtime import Runtime
from collation.service import monitoring, problems, state
from collation.service.auth import caller_token
from collation.service.headers import security_headers
from collation.service.urls import API_PREFIX

WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def create_app(settings: Settings | None = None, *, runtime: Runtime | None = None, **flask_config: Any) -> Flask:
    """Builds the API and the viewer.

    Args:
        settings: the settings; ``Settings.from_env()`` when None (the ``COLLATION_*`` environment).
        runtime: a runtime built by the caller (it then owns its settings); built from ``settings``
            otherwise.
        **flask_config: Flask's own configuration keys, e.g. ``TESTING=True``.

    Returns:
        The app. Its sweeper is not started: ``collate serve`` starts it
        (``service_state(app).sweeper.start()``); ``service_state(app).close()`` releases Redis.
    """
    if runtime is None:
        settings = settings if settings is not None else Settings.from_env()
        runtime = Runtime.create(settings, metrics=Metrics(settings.metrics_hosts, role="api"))
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = runtime.settings.limits.max_body_bytes  # a chunked body stops at the cap too
    app.config.update(flask_config)
    app.json.sort_keys = False  # keep documents in the order we build them (JSON-LD readers care)
    state.init_app(app, runtime)
    problems.init_app(app)
    monitoring.init_app(app)  # first of the hooks: its access line logs the status the client gets
    app.before_request(refuse_large_body)
    app.before_request(require_token)
    app.after_request(add_cors_headers)
    app.after_request(add_security_headers)

    from collation.service import api as routes
    from collation.viewer import pages as viewer_routes
    from collation.viewer import workspace

    app.register_blueprint(routes.bp, url_prefix=API_PREFIX)
    app.register_blueprint(viewer_routes.bp, url_prefix=API_PREFIX)  # the browser view (collation.viewer)
    app.register_blueprint(workspace.bp)  # the historian's workspace at / (collation.viewer.workspace)
    return app


def refuse_large_body() -> None:
    """A body announced larger than ``settings.limits.max_body_bytes`` is a 413 before any of it is read (a
    chunked one is cut at the cap by Flask's ``MAX_CONTENT_LENGTH``, and by waitress in ``serving``)."""
    cap = state.current_runtime().settings.limits.max_body_bytes
    if request.content_length is not None and request.content_length > cap:
        raise problems.PayloadTooLarge(
            f"the request body is {request.content_length} bytes, more than the cap of {cap} "
            "(COLLATION_MAX_BODY_BYTES)",
            field="body",
        )


def require_token() -> None:
    """Write requests need ``Authorization: Bearer <token>`` when ``settings.api_tokens`` is set; reads are
    open, except ``GET /inspect`` (the service fetches for it) when ``settings.inspection.needs_token``."""
    settings = state.current_runtime().settings
    tokens = settings.api_tokens
    inspect = settings.inspection.needs_token and request.path == f"{API_PREFIX}/inspect"
    if not tokens or (request.method not in WRITE_METHODS and not inspect):
        return
    if caller_token() is None:
        raise problems.Unauthorized("this request needs a valid bearer token", field="Authorization")


def add_cors_headers(response: Response) -> Response:
    """CORS on every response, so that viewers (Mirador) on other origins can read everything."""
    response.headers["Access-Control-Allow-Origin"] = state.current_runtime().settings.cors_origin
    # Accept: a W3C client asks for the Web Annotation form with a quoted profile, which takes a preflight
    response.headers["Access-Control-Allow-Headers"] = "Accept, Authorization, Content-Type, If-None-Match, Prefer"
    response.headers["Access-Control-Allow-Methods"] = "GET, POST, DELETE, OPTIONS"
    response.headers["Access-Control-Expose-Headers"] = (
        "Location, ETag, Link, Content-Location, Preference-Applied, Vary, Allow"
    )
    return response


def add_security_headers(response: Response) -> Response:
    """The security headers of every response: the pages' policy on HTML, the documents' on the rest.
    A header a route has set is kept (``setdefault``)."""
    for name, value in security_headers(response.mimetype).items():
        response.headers.setdefault(name, value)
    return response
