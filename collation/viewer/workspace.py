"""The historian's workspace (blueprint ``workspace``, mounted at ``/``): Home, New collation, Follow.

Three templates and ``static/workspace.js`` over the public API (``GET /collations``, ``GET /inspect``,
``POST`` and ``DELETE /collations``, ``GET /collations/{id}``): the pages hold no logic the API
lacks. Like the viewer, it imports only the service's shared pieces, never its routes or app.
"""

from __future__ import annotations

from flask import Blueprint, Response, render_template, url_for

from collation.service.results import check_id
from collation.service.state import current_runtime
from collation.service.urls import base_url

bp = Blueprint("workspace", __name__, template_folder="templates")


def page(template: str, **context: object) -> Response:
    """A workspace page with what every page's script needs (the API root, whether tokens are asked)."""
    settings = current_runtime().settings
    config = {
        "api": base_url(),
        "tokens": bool(settings.api_tokens),
        "max_manifests": settings.max_manifests,
        **context,
    }
    html = render_template(
        f"workspace/{template}",
        config=config,
        tokens_required=config["tokens"],
        css=url_for("viewer.static", filename="viewer.css"),
        js=[url_for("viewer.static", filename=name) for name in ("common.js", "review.js", "workspace.js")],
        **context,
    )
    return Response(html, mimetype="text/html")


@bp.route("/", methods=["GET"])
def home() -> Response:
    """The collations, newest first, with links to follow or open them."""
    return page("home.html", view="home")


@bp.route("/new", methods=["GET"])
def new() -> Response:
    """Paste manifest URLs, see what each gives (``GET /inspect``), choose options, start."""
    return page("new.html", view="new")


@bp.route("/collations/<cid>", methods=["GET"])
def follow(cid: str) -> Response:
    """One collation's progress, problems, cancel button, and when finished its pages and exports."""
    current_runtime().store.load_record(check_id(cid))  # 404 before rendering anything
    return page("follow.html", view="follow", cid=cid)
