"""The API's routes (blueprint ``api``, mounted at ``/api/v1``): parse, call a plain function, answer."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request
from marshmallow import ValidationError
from redis.exceptions import RedisError
from rq import Worker

from . import collations, layers
from .app import service
from .problems import Unavailable, problem
from .schemas import AssessmentSchema, CollationRequestSchema, CorrespondenceQuerySchema, PageQuerySchema

bp = Blueprint("api", __name__)

JSONLD = "application/ld+json"


def base_url() -> str:
    """The API's absolute base URL (``PUBLIC_URL`` or this request's host) ending in /api/v1."""
    root = current_app.config["PUBLIC_URL"] or request.host_url
    return root.rstrip("/") + "/api/v1"


def json_body() -> Any:
    body = request.get_json(silent=True)
    if body is None:
        raise ValidationError({"body": ["must be a JSON document (Content-Type: application/json)"]})
    if not isinstance(body, dict):
        raise ValidationError({"body": ["must be a JSON object"]})
    return body


def jsonld(doc: dict[str, Any], profile: str | None = None) -> Response:
    mimetype = f'{JSONLD};profile="{profile}"' if profile else JSONLD
    response = jsonify(doc)
    response.headers["Content-Type"] = mimetype
    return response


@bp.route("/collations", methods=["POST"])
def create_collation() -> Response:
    body = CollationRequestSchema(max_manifests=current_app.config["MAX_MANIFESTS"]).load(json_body())
    try:
        record, created = collations.submit(service().scheduler(), body, base_url())
    except RedisError as exc:
        raise Unavailable(f"Redis is not reachable: {exc}") from None
    url = f"{base_url()}/collations/{record['id']}"
    response = jsonify({"id": record["id"], "status": record["status"], "status_url": url, "created": created})
    response.status_code = 202
    response.headers["Location"] = url
    return response


@bp.route("/collations/<cid>", methods=["GET"])
def get_collation(cid: str) -> Response:
    return jsonify(collations.status_document(service().store, cid, base_url()))


@bp.route("/collations/<cid>", methods=["DELETE"])
def delete_collation(cid: str) -> Response:
    collations.check_id(cid)
    state = service()
    try:
        found = state.scheduler().cancel(cid)
    except RedisError as exc:
        raise Unavailable(f"Redis is not reachable: {exc}") from None
    if not found:
        state.store.load_record(cid)  # raises the 404 problem
    return Response(status=204)


@bp.route("/collations/<cid>/correspondences", methods=["GET"])
def get_correspondences(cid: str) -> Response:
    query = CorrespondenceQuerySchema().load(request.args.to_dict())
    return jsonify(collations.correspondences(service().store, cid, query["pair"], query["score"], query["top"]))


@bp.route("/collations/<cid>/assessments", methods=["GET"])
def get_assessments(cid: str) -> Response:
    return jsonify(collations.list_assessments(service().store, cid, base_url()))


@bp.route("/collations/<cid>/assessments", methods=["POST"])
def post_assessment(cid: str) -> Response:
    collations.check_id(cid)
    body = AssessmentSchema().load(json_body())
    response = jsonify(collations.add_assessment(service().store, cid, body, base_url()))
    response.status_code = 201
    return response


@bp.route("/collations/<cid>/annotations", methods=["GET"])
def get_annotations(cid: str) -> Response:
    query = PageQuerySchema().load(request.args.to_dict())
    doc = layers.collection(service().store, cid, base_url(), query["page"],
                                 int(current_app.config["PAGE_SIZE"]))
    return jsonld(doc, "http://www.w3.org/ns/anno.jsonld")


@bp.route("/collations/<cid>/manifests/<int:m>", methods=["GET"])
def get_manifest(cid: str, m: int) -> Response:
    return jsonld(layers.derived_manifest(service().store, cid, m, base_url()))


@bp.route("/collations/<cid>/pages/<int:m>/<int:canvas_number>", methods=["GET"])
def get_canvas_page(cid: str, m: int, canvas_number: int) -> Response:
    return jsonld(layers.canvas_page(service().store, cid, m, canvas_number, base_url()))


@bp.route("/ns/imcol/1/context.json", methods=["GET"])
def get_context() -> Response:
    return jsonld(layers.context_document())


@bp.route("/openapi.yaml", methods=["GET"])
def get_openapi() -> Response:
    return Response(openapi_text(), mimetype="application/yaml")


@bp.route("/healthz", methods=["GET"])
def healthz() -> Response:
    return jsonify({"status": "ok"})


@bp.route("/readyz", methods=["GET"])
def readyz() -> Response:
    """Ready when Redis answers and at least one worker listens on each queue."""
    state = service()
    checks: dict[str, Any] = {"redis": False, "workers": {}}
    if state.connection is not None:
        try:
            state.connection.ping()
            checks["redis"] = True
            for name in (state.settings["QUEUE_IO"], state.settings["QUEUE_COMPUTE"]):
                checks["workers"][name] = sum(name in w.queue_names() for w in Worker.all(state.connection))
        except RedisError as exc:
            checks["error"] = str(exc)
    ready = checks["redis"] and len(checks["workers"]) == 2 and all(checks["workers"].values())
    if ready:
        return jsonify({"status": "ready", "checks": checks})
    detail = "Redis is not reachable" if not checks["redis"] else "no worker listens on some queue"
    return problem(503, "Not ready", detail, extra={"checks": checks})


def openapi_text() -> str:
    from pathlib import Path

    path = current_app.config.get("OPENAPI_PATH") or Path(__file__).resolve().parents[2] / "openapi.yaml"
    return Path(path).read_text(encoding="utf-8")
