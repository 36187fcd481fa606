"""The API's routes (blueprint ``api``, mounted at ``/api/v1``): parse, call a plain function, answer.

Documents come from ``collations`` (status, correspondences, assessments), ``layers`` (Web
Annotations) and ``inspection`` (the dry run of a manifest); every URL from ``urls``; errors are
raised as exceptions and answered as problem documents by ``problems``.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, jsonify, request
from marshmallow import ValidationError

from collation.jobs import review
from collation.publish.canonical import web_annotation_form
from collation.publish.discovery import DISCOVERY_CONTEXT
from collation.service import activity_feed, assessments, collations, drafts, inspection, listing, negotiation, quotas
from collation.service import annotations as layers
from collation.service.auth import caller_hash, require_creator
from collation.service.concordance_rows import concordance
from collation.service.container_query import ActivityQuerySchema, ContainerQuerySchema, requested_view
from collation.service.exports import (
    concordance_text,
    concordance_workbook,
    download_name,
    export_document,
    stored_thumbnail,
)
from collation.service.health import readiness
from collation.service.problems import problem
from collation.service.results import check_id
from collation.service.schemas import (
    AssessmentSchema,
    BatchAssessmentSchema,
    ClearQuerySchema,
    CollationRequestSchema,
    ConcordanceQuerySchema,
    CorrespondenceQuerySchema,
    DetectionSchema,
    PageQuerySchema,
    RenameSchema,
    check_json_tree,
)
from collation.service.state import current_runtime, service_state
from collation.service.urls import base_url, collation_url

bp = Blueprint("api", __name__)

JSONLD = "application/ld+json"

OPENAPI_YAML = Path(__file__).resolve().parents[2] / "openapi.yaml"
"""The contract served at /openapi.yaml unless ``settings.openapi_path`` names another file."""


def json_body() -> dict[str, Any]:
    """The request's JSON object; a 400 problem naming ``body`` (or the bad field) otherwise.

    A body nested too deeply for the parser, or holding a string that is not Unicode text (a lone
    surrogate escape such as ``"\\udc80"``), is a 400 like any malformed body.
    """
    try:
        body = request.get_json(silent=True)
    except RecursionError:
        raise ValidationError({"body": ["is nested too deeply"]}) from None
    if body is None:
        raise ValidationError({"body": ["must be a JSON document (Content-Type: application/json)"]})
    if not isinstance(body, dict):
        raise ValidationError({"body": ["must be a JSON object"]})
    check_json_tree(body)
    return body


def jsonld(doc: dict[str, Any], profile: str | None = None) -> Response:
    mimetype = f'{JSONLD};profile="{profile}"' if profile else JSONLD
    response = jsonify(doc)
    response.headers["Content-Type"] = mimetype
    return response


def answered(doc: Any, status: int, location: str | None = None) -> Response:
    """``doc`` as JSON with ``status`` (201 created, 202 accepted) and, for a new resource, its ``Location``."""
    response = jsonify(doc)
    response.status_code = status
    if location is not None:
        response.headers["Location"] = location
    return response


@bp.route("/collations", methods=["POST"])
def create_collation() -> Response:
    runtime = current_runtime()
    body = CollationRequestSchema(max_manifests=runtime.settings.limits.max_manifests).load(json_body())
    owner = caller_hash()
    client = quotas.client_of(owner, request.remote_addr)  # its limits: collation.service.quotas
    record, created = collations.submit(runtime, body, base_url(), owner, client)
    url = collation_url(base_url(), record.id)
    return answered({"id": record.id, "status": record.status, "status_url": url, "created": created}, 202, url)


@bp.route("/collations", methods=["GET"])
def list_collations() -> Response:
    """The collations the caller may see, newest first, paged (``listing`` says who sees what)."""
    runtime = current_runtime()
    query = listing.ListQuerySchema().load(request.args.to_dict())
    return jsonify(
        listing.list_collations(
            runtime.store, base_url(), query, caller_hash(), bool(runtime.settings.api_tokens), service_state().records
        )
    )


@bp.route("/collations/<cid>", methods=["GET"])
def get_collation(cid: str) -> Response:
    runtime = current_runtime()
    return jsonify(collations.status_document(runtime.store, cid, base_url(), runtime.redis))


def creator_only(cid: str, action: str) -> None:
    """A 404 for an unknown collation, a 403 when the caller's token may not change it (``auth``)."""
    require_creator(current_runtime().store.load_record(check_id(cid)), action)


@bp.route("/collations/<cid>", methods=["DELETE"])
def delete_collation(cid: str) -> Response:
    creator_only(cid, "delete it")
    collations.cancel(current_runtime(), cid)
    return Response(status=204)


@bp.route("/collations/<cid>", methods=["PATCH"])
def rename_collation(cid: str) -> Response:
    """Renames a collation (its id, a hash of the request, stays); the status document answers."""
    check_id(cid)
    body = RenameSchema().load(json_body())
    creator_only(cid, "rename it")
    runtime = current_runtime()
    collations.rename(runtime.store, cid, body["name"])
    return jsonify(collations.status_document(runtime.store, cid, base_url(), runtime.redis))


@bp.route("/collations/<cid>/retry", methods=["POST"])
def retry_collation(cid: str) -> Response:
    """Runs a failed collation again under the same id (409 when it has not failed)."""
    creator_only(cid, "retry it")
    record = collations.retry(current_runtime(), cid)
    url = collation_url(base_url(), record.id)
    return answered({"id": record.id, "status": record.status, "status_url": url, "created": False}, 202, url)


@bp.route("/collations/<cid>/correspondences", methods=["GET"])
def get_correspondences(cid: str) -> Response:
    query = CorrespondenceQuerySchema().load(request.args.to_dict())
    return jsonify(
        collations.correspondences(
            current_runtime().store,
            cid,
            query["pair"],
            query["score"],
            query["top"],
            query["min_score"],
            base=base_url(),
        )
    )


@bp.route("/collations/<cid>/concordance", methods=["GET"])
def get_concordance(cid: str) -> Response:
    query = ConcordanceQuerySchema().load(request.args.to_dict())
    return jsonify(concordance(current_runtime().store, cid, base_url(), **query))


CONCORDANCE_FILES = {
    "csv": ("text/csv", lambda doc, _thumbnail: concordance_text(doc)),
    "xlsx": (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        lambda doc, thumbnail: concordance_workbook(doc, thumbnail=thumbnail),
    ),
}
"""The concordance's downloads: extension -> (media type, how the document and the stored region images
(``collation.service.exports.stored_thumbnail``) are written)."""


@bp.route("/collations/<cid>/concordance.csv", methods=["GET"])
def get_concordance_csv(cid: str) -> Response:
    return concordance_file(cid, "csv")


@bp.route("/collations/<cid>/concordance.xlsx", methods=["GET"])
def get_concordance_xlsx(cid: str) -> Response:
    return concordance_file(cid, "xlsx")


def concordance_file(cid: str, extension: str) -> Response:
    """The concordance as a download of ``CONCORDANCE_FILES[extension]``, with the JSON's query."""
    query = ConcordanceQuerySchema().load(request.args.to_dict())
    mimetype, write = CONCORDANCE_FILES[extension]
    store = current_runtime().store
    doc = export_document(store, cid, base_url(), **query)
    response = Response(write(doc, stored_thumbnail(store, cid)), mimetype=mimetype)
    response.headers["Content-Disposition"] = download_name(doc["name"], extension)
    return response


@bp.route("/collations/<cid>/assessments", methods=["GET"])
def get_assessments(cid: str) -> Response:
    return jsonify(assessments.list_assessments(current_runtime().store, cid, base_url()))


@bp.route("/collations/<cid>/assessments", methods=["POST"])
def post_assessment(cid: str) -> Response:
    check_id(cid)  # a malformed id is a 404 before the body is looked at
    body = AssessmentSchema().load(json_body())
    creator_only(cid, "record verdicts on it")
    return answered(assessments.add_assessment(current_runtime().store, cid, body, base_url()), 201)


@bp.route("/collations/<cid>/assessments", methods=["DELETE"])
def delete_assessments(cid: str) -> Response:
    check_id(cid)
    query = ClearQuerySchema().load(request.args.to_dict())
    creator_only(cid, "clear verdicts on it")
    return jsonify(assessments.clear_assessments(current_runtime().store, cid, query))


@bp.route("/collations/<cid>/assessments/batch", methods=["POST"])
def post_assessments_batch(cid: str) -> Response:
    check_id(cid)
    body = BatchAssessmentSchema().load(json_body())
    creator_only(cid, "record verdicts on it")
    return answered(assessments.add_batch(current_runtime().store, cid, body, base_url()), 201)


@bp.route("/collations/<cid>/annotations", methods=["GET"])
def get_annotations(cid: str) -> Response:
    """The collection or one of its pages, in IIIF's form or, when ``Accept`` prefers it, the W3C Web
    Annotation form (``negotiation``)."""
    query = PageQuerySchema().load(request.args.to_dict())
    state = service_state()
    page, page_size = query["page"], state.runtime.settings.page_size
    doc = layers.collection(state.runtime.store, state.documents, cid, base_url(), page, page_size)
    if negotiation.wants_web_annotation(request.headers.get("Accept")):
        start = None if page is None else (page - 1) * page_size
        return negotiation.annotation_response(
            web_annotation_form(doc, start_index=start), negotiation.WEB_ANNOTATION_PROFILE
        )
    return negotiation.annotation_response(doc, negotiation.IIIF_PROFILE)


@bp.route("/collations/<cid>/container/", methods=["GET"])
def get_container(cid: str) -> Response:
    """The links as a Web Annotation Protocol container (LDP paging, ``Prefer``, ETag), filtered to
    one canvas with ``?target=<canvas IRI>`` (``container``)."""
    args = ContainerQuerySchema().load(request.args.to_dict())
    view, applied = requested_view(args, request.headers.get("Prefer"))
    state = service_state()
    page_size = state.runtime.settings.page_size
    doc = layers.container(state.runtime.store, state.documents, cid, base_url(), view, page_size)
    return negotiation.container_response(doc, preference_applied=applied)


@bp.route("/collations/<cid>/links/<link>", methods=["GET"])
def get_link(cid: str, link: str) -> Response:
    """One link annotation at its IRI, with the Web Annotation Protocol's headers (``negotiation``)."""
    state = service_state()
    doc = layers.link_annotation(state.runtime.store, state.documents, cid, base_url(), link)
    return negotiation.annotation_response(doc, negotiation.WEB_ANNOTATION_PROFILE)


@bp.route("/collations/<cid>/manifests/<int:m>", methods=["GET"])
def get_manifest(cid: str, m: int) -> Response:
    state = service_state()
    return jsonld(layers.derived_manifest(state.runtime.store, state.documents, cid, m, base_url()))


@bp.route("/collations/<cid>/pages/<int:m>/<int:canvas_number>", methods=["GET"])
def get_canvas_page(cid: str, m: int, canvas_number: int) -> Response:
    state = service_state()
    return jsonld(layers.canvas_page(state.runtime.store, state.documents, cid, m, canvas_number, base_url()))


@bp.route("/collations/<cid>/lists/<int:m>/<int:canvas_number>", methods=["GET"])
def get_annotation_list(cid: str, m: int, canvas_number: int) -> Response:
    """The same annotations as ``pages``, as a Presentation 2.1 AnnotationList for ``otherContent``."""
    state = service_state()
    doc = layers.canvas_page(state.runtime.store, state.documents, cid, m, canvas_number, base_url(), version=2)
    return jsonld(doc)


@bp.route("/activity", methods=["GET"])
def get_activity() -> Response:
    """IIIF Change Discovery: the Create, Update and Delete activities of the published documents."""
    query = ActivityQuerySchema().load(request.args.to_dict())
    state = service_state()
    runtime = state.runtime
    doc = activity_feed.feed(
        runtime.store,
        state.records,
        base_url(),
        query["page"],
        runtime.settings.page_size,
        caller_hash(),
        bool(runtime.settings.api_tokens),
    )
    return jsonld(doc, DISCOVERY_CONTEXT)


@bp.route("/inspect", methods=["GET"])
def get_inspection() -> Response:
    """The dry run of a manifest: what it holds and the regions a collation would use (no job)."""
    query = inspection.InspectQuerySchema().load(request.args.to_dict())
    work = partial(inspection.inspect, current_runtime(), query)
    return jsonify(service_state().inspections.run(request.remote_addr or "unknown", work))


@bp.route("/detections", methods=["POST"])
def post_detection() -> Response:
    """Detection for review on the workers, page by page (``collation.jobs.review``)."""
    body = DetectionSchema().load(json_body())
    collations.scheduler(current_runtime())  # a 503 without Redis, before anything is stored
    doc = review.start(current_runtime(), body["manifest"])
    return answered(doc, 202, f"{base_url()}/detections/{doc['id']}")


@bp.route("/detections/<did>", methods=["GET"])
def get_detection(did: str) -> Response:
    return jsonify(review.load(current_runtime().store, did))


@bp.route("/drafts", methods=["POST"])
def post_draft() -> Response:
    """A draft of a collation-to-be (the New collation page's work), kept for whoever has its address."""
    doc = drafts.create(current_runtime().store, drafts.DraftSchema().load(json_body()))
    return answered(doc, 201, f"{base_url()}/drafts/{doc['id']}")


@bp.route("/drafts/<did>", methods=["GET"])
def get_draft(did: str) -> Response:
    return jsonify(drafts.load(current_runtime().store, did))


@bp.route("/drafts/<did>", methods=["PUT"])
def put_draft(did: str) -> Response:
    body = drafts.DraftSchema().load(json_body())
    return jsonify(drafts.replace(current_runtime().store, did, body))


@bp.route("/ns/imcol/1/context.json", methods=["GET"])
def get_context() -> Response:
    return jsonld(layers.context_document())


@bp.route("/openapi.yaml", methods=["GET"])
def get_openapi() -> Response:
    path = current_runtime().settings.openapi_path or OPENAPI_YAML
    return Response(Path(path).read_text(encoding="utf-8"), mimetype="application/yaml")


@bp.route("/healthz", methods=["GET"])
def healthz() -> Response:
    return jsonify({"status": "ok"})


@bp.route("/readyz", methods=["GET"])
def readyz() -> Response:
    """Ready when Redis answers, the data store can be written and a worker listens on each queue."""
    result = readiness(current_runtime())
    checks = result["checks"]
    if result["ready"]:
        return jsonify({"status": "ready", "checks": checks})
    if not checks["redis"]:
        detail = "Redis is not reachable"
    elif not checks["store"]:
        detail = checks["store_error"]
    else:
        detail = "no worker listens on some queue"
    return problem(503, "Not ready", detail, extra={"checks": checks})
