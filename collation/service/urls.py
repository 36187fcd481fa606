"""Every public URL of the service, built in one place: the API, the viewer and the annotation
builders (through ``url_scheme``) all take their links from here.

``base_url()`` is the API root as clients reach it (``COLLATION_PUBLIC_URL`` or the request's host,
always ending in ``/api/v1``); the other functions are pure functions of that base.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flask import request

from collation.publish.container import ContainerView, view_url
from collation.publish.content_state import build_content_state, encode, view_link
from collation.publish.parts import UrlScheme
from collation.service.state import current_runtime

API_PREFIX = "/api/v1"
"""Where ``create_app`` mounts the API and viewer blueprints."""


def base_url() -> str:
    """The API's absolute base URL, from ``settings.public_url`` or this request's host, ending in /api/v1."""
    root = current_runtime().settings.public_url or request.host_url
    return root.rstrip("/") + API_PREFIX


def collation_url(base: str, cid: str) -> str:
    """``GET /collations/{id}``, the status document (and the root of the collation's documents)."""
    return f"{base}/collations/{cid}"


def manifest_url(base: str, cid: str, m: int) -> str:
    """The derived manifest of manuscript ``m``."""
    return f"{collation_url(base, cid)}/manifests/{m}"


def correspondences_url(base: str, cid: str, a: int, b: int, top: int | None = None) -> str:
    """The correspondences of manuscripts ``a`` and ``b`` by propagated score."""
    url = f"{collation_url(base, cid)}/correspondences?pair={a},{b}&score=propagated"
    return f"{url}&top={top}" if top is not None else url


def container_url(base: str, cid: str) -> str:
    """The collation's Web Annotation Protocol container (its IRI ends in ``/``, as the protocol asks)."""
    return f"{collation_url(base, cid)}/container/"


def canvas_links_url(base: str, cid: str, canvas: str) -> str:
    """The container filtered to the links that touch ``canvas`` (a canvas IRI), in full."""
    return view_url(container_url(base, cid), ContainerView(target=canvas))


def share_links(base: str, cid: str, ends: Sequence[tuple[int, str, Sequence[int]]]) -> dict[str, str]:
    """``{"share", "iiif_content"}`` of a view of these (manuscript, canvas id, xywh) regions: the IIIF
    Content State (``collation.publish.content_state``) of their canvases and regions in the derived
    manifests, encoded (``iiif_content``, for any viewer that reads it), and the service's own view
    opening it (``share``)."""
    state = build_content_state([(canvas, xywh, manifest_url(base, cid, m)) for m, canvas, xywh in ends])
    return {"share": view_link(f"{collation_url(base, cid)}/view", state), "iiif_content": encode(state)}


def assessment_url(base: str, cid: str, item_id: str) -> str:
    """One assessment, as a fragment of the collation's assessment list."""
    return f"{collation_url(base, cid)}/assessments#{item_id}"


def status_links(base: str, cid: str, usable: list[int]) -> dict[str, Any]:
    """``links`` of the status document; ``usable`` are the manuscripts with derived manifests."""
    root = collation_url(base, cid)
    return {
        "self": root,
        "correspondences": correspondences_url(base, cid, 0, 1, top=5),
        "annotations": f"{root}/annotations",
        "container": container_url(base, cid),
        "assessments": f"{root}/assessments",
        "manifests": [manifest_url(base, cid, m) for m in usable],
        "view": f"{root}/view",
        "concordance": f"{root}/concordance",
        "concordance_view": f"{root}/concordance/view",
        "matrix": f"{root}/matrix.png?pair=0,1",
    }


def context_url(base: str) -> str:
    """Where the ``imcol:`` JSON-LD context is served."""
    return f"{base}/ns/imcol/1/context.json"


def url_scheme(cid: str, base: str) -> UrlScheme:
    """Ids of a collation's annotation documents; each display annotation links to the viewer's compare view."""
    return UrlScheme(
        base=collation_url(base, cid),
        context=context_url(base),
        viewer="{base}/view?link={link}&side={side}",
        canvas_links=lambda canvas, **_: canvas_links_url(base, cid, canvas),
        software=service_root(base),
    )


def service_root(base: str) -> str:
    """The service's home page (the workspace at ``/``): where the API at ``base`` is served from."""
    return base.removesuffix(API_PREFIX) + "/"
