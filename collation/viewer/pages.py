"""The viewer's routes (blueprint ``viewer``, mounted at ``/api/v1`` beside the API).

Thin: parse the query, call a function of ``data`` or ``matrix``, answer. The page itself is a
template plus plain JavaScript that reads the API, so everything it shows is also available to
scripts. It imports only the service's shared pieces (``state``, ``urls``, ``results``,
``schemas``), never its routes or app.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, jsonify, render_template, request, url_for
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from collation.service.collations import collation_name
from collation.service.results import check_id
from collation.service.schemas import SCORES, PairParam
from collation.service.state import current_runtime, service_state
from collation.service.urls import base_url
from collation.viewer.browser import page_config
from collation.viewer.data import content_state_focus, matrix_data, pair_view
from collation.viewer.imagespace import SCALES_BY_IMAGE, viewer_manifest, viewer_page
from collation.viewer.matrix import MAX_SIDE, render_matrix_png

STATIC = Path(__file__).resolve().parent / "static"

MIRADOR_VERSIONS = {"4": "4.0.0", "3": "3.4.3"}
"""Bundles served from ``static/vendor`` (installed by scripts/setup.sh from the npm registry);
``?mirador=3`` picks the 3.x one for institutions still on it."""

bp = Blueprint(
    "viewer", __name__, template_folder="templates", static_folder="static", static_url_path="/viewer/static"
)


class ViewQuerySchema(Schema):
    """``pair=a,b``, or ``link=a-b-i-j`` (a correspondence id, as in the annotations' ``imcol:correspondence``:
    manuscripts a and b, region indices i and j) to open on that match; ``mirador=3|4``; ``side`` is
    accepted and ignored, so a ``UrlScheme.viewer`` template may pass it."""

    pair = PairParam(load_default=(0, 1))
    link = fields.String(
        validate=validate.Regexp(
            r"^(0|[1-9][0-9]{0,5})-(0|[1-9][0-9]{0,5})-[0-9]{1,9}-[0-9]{1,9}$",
            error="must be a correspondence id a-b-i-j",
        )
    )
    side = fields.String(validate=validate.OneOf(("a", "b")))
    mirador = fields.String(load_default="4", validate=validate.OneOf(tuple(MIRADOR_VERSIONS)))
    # a IIIF Content State (content-state-encoded) naming the two regions to open: data.content_state_focus
    iiif_content = fields.String(data_key="iiif-content", validate=validate.Length(min=1, max=20_000))

    @validates_schema
    def _link_names_two_manuscripts(self, data: dict, **kwargs: object) -> None:
        if "link" in data:
            a, b, _i, _j = (int(v) for v in data["link"].split("-"))
            if a == b:
                raise ValidationError("must name two different manuscripts", "link")


class PairQuerySchema(Schema):
    pair = PairParam(load_default=(0, 1))


class MatrixQuerySchema(Schema):
    pair = PairParam(load_default=(0, 1))
    score = fields.String(load_default="normalized", validate=validate.OneOf(SCORES))
    max_side = fields.Integer(load_default=MAX_SIDE, validate=validate.Range(min=16, max=4096))
    # The pair page adds the time to the address so that the browser fetches the matrix again after a
    # verdict (an <img> whose address does not change is not reloaded); the server ignores it.
    t = fields.String(load_default=None, validate=validate.Regexp(r"^[0-9]{1,16}$"))


def mirador_bundle(major: str) -> tuple[str, bool]:
    """(file name under static/vendor, whether it is installed) of a Mirador major version."""
    name = f"mirador-{MIRADOR_VERSIONS[major]}.min.js"
    return name, (STATIC / "vendor" / name).is_file()


@bp.route("/collations/<cid>/view", methods=["GET"])
def view(cid: str) -> Response:
    """The page: progress while the collation runs, then the correspondences and Mirador."""
    query = ViewQuerySchema().load(request.args.to_dict())
    runtime = current_runtime()
    record = runtime.store.load_record(check_id(cid))  # 404 before rendering anything
    name, installed = mirador_bundle(query["mirador"])
    pair, focus = list(query["pair"]), None
    if "link" in query:
        a, b, i, j = (int(v) for v in query["link"].split("-"))
        pair, focus = [a, b], [i, j]
    if "iiif_content" in query:
        pair, focus = content_state_focus(runtime.store, cid, base_url(), query["iiif_content"])
    config = page_config(
        cid,
        pair=pair,
        focus=focus,
        top=3,
        mirador={"version": MIRADOR_VERSIONS[query["mirador"]], "installed": installed},
        image_space_targets=MIRADOR_VERSIONS[query["mirador"]] in SCALES_BY_IMAGE,  # mirador#4533
    )
    html = render_template(
        "viewer/view.html",
        cid=cid,
        name=collation_name(runtime.store, record),
        config=config,
        mirador_src=url_for("viewer.static", filename=f"vendor/{name}"),
        mirador_installed=installed,
        mirador_version=MIRADOR_VERSIONS[query["mirador"]],
        tokens_required=config["tokens"],
    )
    return Response(html, mimetype="text/html")


@bp.route("/collations/<cid>/concordance/view", methods=["GET"])
def concordance_view(cid: str) -> Response:
    """The concordance page: a row per group of corresponding illustrations, a column per witness."""
    runtime = current_runtime()
    record = runtime.store.load_record(check_id(cid))  # 404 before rendering anything
    config = page_config(cid)
    html = render_template(
        "viewer/concordance.html",
        cid=cid,
        name=collation_name(runtime.store, record),
        config=config,
        view_url=url_for("viewer.view", cid=cid),
        tokens_required=config["tokens"],
    )
    return Response(html, mimetype="text/html")


@bp.route("/collations/<cid>/view.json", methods=["GET"])
def view_json(cid: str) -> Response:
    """Manuscripts, derived manifest URLs and the regions of a pair (canvas, box, thumbnail URL)."""
    query = PairQuerySchema().load(request.args.to_dict())
    return jsonify(pair_view(current_runtime().store, cid, query["pair"], base_url()))


def jsonld(doc: dict) -> Response:
    response = jsonify(doc)
    response.headers["Content-Type"] = "application/ld+json"
    return response


@bp.route("/collations/<cid>/view/manifests/<int:m>", methods=["GET"])
def view_manifest(cid: str, m: int) -> Response:
    """The derived manifest for the built-in Mirador: its pages are the ``view/pages`` variants."""
    state = service_state()
    return jsonld(viewer_manifest(state.runtime.store, state.documents, cid, m, base_url()))


@bp.route("/collations/<cid>/view/pages/<int:m>/<int:canvas_number>", methods=["GET"])
def view_page(cid: str, m: int, canvas_number: int) -> Response:
    """A viewer-layer page with its boxes in the image space Mirador 3.4.3 / 4.0.0 draw in (mirador#4533)."""
    state = service_state()
    return jsonld(
        viewer_page(state.runtime.store, state.documents, cid, m, canvas_number, base_url(), state.runtime.fetcher)
    )


@bp.route("/collations/<cid>/matrix.png", methods=["GET"])
def matrix_png(cid: str) -> Response:
    """The score matrix of a pair with cycle, assessment and ground-truth marks."""
    query = MatrixQuerySchema().load(request.args.to_dict())
    matrix, marks = matrix_data(current_runtime().store, cid, query["pair"], query["score"])
    response = Response(render_matrix_png(matrix, marks, max_side=query["max_side"]), mimetype="image/png")
    response.headers["Cache-Control"] = "no-cache"  # assessments change P_S and the marks
    return response


STORED_SIDE = 480
"""The longest side of a region image served from the store (``stored_region``): a thumbnail or a
preview, never the full-size copy the features were computed from."""


@bp.route("/collations/<cid>/regions/<int:m>/<int:region>.jpg", methods=["GET"])
def stored_region(cid: str, m: int, region: int) -> Response:
    """A region image as the service fetched and cropped it (``collation.jobs.manuscripts`` stores
    them by content digest): the thumbnail of a witness whose images have no IIIF Image service."""
    import io

    from collation.service.images import region_from_store

    image = region_from_store(current_runtime().store, check_id(cid), m, region)
    image.thumbnail((STORED_SIDE, STORED_SIDE))
    out = io.BytesIO()
    image.convert("RGB").save(out, format="JPEG", quality=85)
    response = Response(out.getvalue(), mimetype="image/jpeg")
    response.headers["Cache-Control"] = "public, max-age=86400"  # a region's image never changes
    return response
