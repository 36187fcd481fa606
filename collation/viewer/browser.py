"""What the browser's scripts are given by the server instead of copying it: each page's JSON config.

Every page (the viewer's pair and concordance pages, the workspace's Home, New and Follow) embeds one
``<script id="config" type="application/json">`` that ``static/common.js`` reads (``collationPage.config``).
Besides the page's own fields it holds:

- ``api``: the API root as clients reach it (``base_url``); ``tokens``: whether the service asks for
  bearer tokens (``settings.api_tokens``).
- ``rules`` (``RULES``): the verdict categories, their aliases and words, the status strings, from how
  many witnesses a collation is read as a concordance, and the words for transposed matches, taken
  from the Python that owns them.
- ``images`` (``IMAGE_TEMPLATES``): the Image API requests for what the New collation page shows of a
  manifest before any collation (``GET /inspect`` reports image services, not thumbnails).
- ``links``: the URLs the page's script calls, built here from ``collation.service.urls``.
"""

from __future__ import annotations

from typing import Any

from flask import url_for

from collation.core.options import THREE_CYCLES_MIN_MANUSCRIPTS
from collation.core.vocabulary import (
    CATEGORIES,
    CATEGORY_LABELS,
    MATCH_CATEGORIES,
    TRANSPOSITION_LABELS,
    TURNS,
    VERDICT_ALIASES,
    CollationStatus,
)
from collation.service.state import current_runtime
from collation.service.urls import base_url, collation_url

CONCORDANCE_WITNESSES = THREE_CYCLES_MIN_MANUSCRIPTS
"""From how many witnesses a collation is read first as a concordance (the workspace links its
concordance page, and Follow opens it): as many as 3-cycle propagation needs
(``collation.core.options``); with two, the pair page is the whole story."""

VERDICT_MARKS = {"exact": "✓", "partial": "✓", "semantic": "≈", "none": "✕"}
"""The sign before a verdict's words on the pair page's badges."""

VERDICT_BUTTONS = {"exact": "Confirm", "partial": "Partial", "semantic": "Same subject", "none": "Reject"}
"""The pair page's buttons, one per category, in ``CATEGORIES`` order (keys 1-4). A category with an
alias (``VERDICT_ALIASES``: confirmed, rejected) is sent as its alias, the first API's verdict."""

TRANSPOSITION_MARKS = {
    "mirror": "⇆",
    "flip": "⇅",
    **{name: "↻" for name in ("rot90", "rot180", "rot270", *TURNS)},
}
"""The sign before a transposed match's words (``TRANSPOSITION_LABELS``, as in the annotations)."""

RULES: dict[str, Any] = {
    "verdicts": {
        "categories": list(CATEGORIES),
        "match": list(MATCH_CATEGORIES),
        "aliases": dict(VERDICT_ALIASES),
        "labels": {c: CATEGORY_LABELS[c] for c in CATEGORIES},
        "marks": {c: VERDICT_MARKS[c] for c in CATEGORIES},
        "buttons": {c: VERDICT_BUTTONS[c] for c in CATEGORIES},
    },
    "status": {status.name.lower(): status.value for status in CollationStatus},
    "terminal": [status.value for status in CollationStatus if status.terminal],
    "concordance_witnesses": CONCORDANCE_WITNESSES,
    "transpositions": {
        name: f"{TRANSPOSITION_MARKS[name]} {label}" for name, label in TRANSPOSITION_LABELS.items() if label
    },
}
"""The rules every page's script reads (``collationPage.rules``)."""

IMAGE_TEMPLATES = {
    "region_thumbnail": "{service}/pct:{x},{y},{w},{h}/!120,120/0/default.jpg",
    "page": "{service}/full/!700,700/0/default.jpg",
}
"""Image API requests on an inspected manifest's image service (``{service}``, the report's
``service_id``): a region's thumbnail (``{x},{y},{w},{h}`` in percent of the canvas) and a page to
review its regions on. ``collationPage.fill`` puts the values in."""


def collation_links(cid: str, base: str) -> dict[str, str]:
    """The URLs a page with collation ``cid`` calls (the query, where one is needed, is the page's)."""
    root = collation_url(base, cid)
    return {
        "status": root,
        "view": f"{root}/view",
        "view_json": f"{root}/view.json",
        "correspondences": f"{root}/correspondences",
        "matrix": f"{root}/matrix.png",
        "assessments": f"{root}/assessments",
        "assessments_batch": f"{root}/assessments/batch",
        "concordance": f"{root}/concordance",
        "concordance_csv": f"{root}/concordance.csv",
        "concordance_xlsx": f"{root}/concordance.xlsx",
    }


def workspace_links(base: str) -> dict[str, str]:
    """The URLs the workspace's pages call or open; ``follow`` is a template of a collation's ``{id}``."""
    return {
        "collations": f"{base}/collations",
        "inspect": f"{base}/inspect",
        "drafts": f"{base}/drafts",
        "detections": f"{base}/detections",
        "home": url_for("workspace.home"),
        "follow": url_for("workspace.follow", cid="ID").removesuffix("ID") + "{id}",
    }


def page_config(cid: str | None = None, **fields: Any) -> dict[str, Any]:
    """A page's config: the API root, whether tokens are asked, the rules, the Image API templates,
    the links (those of collation ``cid`` when given, else the workspace's), and ``fields``."""
    base = base_url()
    links = collation_links(cid, base) if cid is not None else {}
    return {
        "api": base,
        "tokens": bool(current_runtime().settings.api_tokens),
        "rules": RULES,
        "images": IMAGE_TEMPLATES,
        "links": {**workspace_links(base), **links},
        **({"id": cid} if cid is not None else {}),
        **fields,
    }
