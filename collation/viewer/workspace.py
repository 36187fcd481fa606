"""The historian's workspace (blueprint ``workspace``, mounted at ``/``): Home, New collation, Follow.

Three templates and ``static/workspace.js`` over the public API (``GET /collations``, ``GET /inspect``,
``POST`` and ``DELETE /collations``, ``GET /collations/{id}``): the pages hold no logic the API
lacks. Like the viewer, it imports only the service's shared pieces, never its routes or app.
"""

from __future__ import annotations

from flask import Blueprint, Response, render_template, url_for

from collation.service.results import check_id
from collation.service.state import current_runtime
from collation.viewer.browser import page_config
from collation.viewer.pages import STATIC

bp = Blueprint("workspace", __name__, template_folder="templates")
# the region editor (review.js) draws with Annotorious, installed in vendor/ by scripts/setup.sh; without
# it (no npm at setup) the page leaves it out rather than asking for a missing file, and the editor says so
WORKSPACE_SCRIPTS = ("common.js", "vendor/annotorious-3.8.10.js", "review.js", "workspace.js")
DETECT_IN_INSPECTION = 24
"""Pages of a manifest without region annotations that ``GET /inspect`` searches itself (within its time limit,
about 0.2 s a page); a longer one is searched on the workers, page by page (``POST /detections``), while the
New page shows what is found (issue 39, item 1: at 59 pages the inspection took 13-16 s of its 15)."""


def page(template: str, view: str, cid: str | None = None) -> Response:
    """A workspace page with what every page's script needs (``collation.viewer.browser.page_config``:
    the API root, whether tokens are asked, the rules and links) and how many manifests a collation takes."""
    most = current_runtime().settings.limits.max_manifests
    config = page_config(cid, view=view, max_manifests=most, detect_in_inspection=DETECT_IN_INSPECTION)
    html = render_template(
        f"workspace/{template}",
        config=config,
        tokens_required=config["tokens"],
        css=url_for("viewer.static", filename="viewer.css"),
        js=[url_for("viewer.static", filename=name) for name in WORKSPACE_SCRIPTS if (STATIC / name).is_file()],
        view=view,
        cid=cid,
    )
    return Response(html, mimetype="text/html")


@bp.route("/", methods=["GET"])
def home() -> Response:
    """The collations, newest first, with links to follow or open them."""
    return page("home.html", "home")


@bp.route("/new", methods=["GET"])
def new() -> Response:
    """Paste manifest URLs, see what each gives (``GET /inspect``), choose options, start."""
    return page("new.html", "new")


@bp.route("/collations/<cid>", methods=["GET"])
def follow(cid: str) -> Response:
    """One collation's progress, problems, cancel button, and when finished its pages and exports."""
    current_runtime().store.load_record(check_id(cid))  # 404 before rendering anything
    return page("follow.html", "follow", cid)
