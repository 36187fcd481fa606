"""Links the service republishes: only http(s) ones.

A derived manifest is a copy of a manifest that anyone may write, and a viewer shows its links as
links: a ``rendering``, ``seeAlso``, ``homepage`` or ``rights`` of ``javascript:...`` becomes a
clickable link in Mirador 3 that runs in the service's own origin. So the link properties of a
republished document keep only http(s) links (and protocol-relative ``//host/...`` ones, which a
page served over http(s) opens over http(s)); every other link (``javascript:``, ``data:``,
``vbscript:``, ``file:``, a bare word...) is dropped, with its object.

Ids of canvases, ranges and painted images are not links a reader follows, and are kept as they are:
the annotations target the canvases by id.
"""

from __future__ import annotations

from typing import Any

LINK_PROPERTIES = frozenset(
    {
        "rendering",  # 2.1 and 3.0: downloads (PDF, text) a viewer lists
        "seeAlso",  # machine-readable descriptions
        "homepage",  # 3.0: the web page of the object (and of its provider)
        "related",  # 2.1: the same
        "logo",  # 2.1 (on the manifest) and 3.0 (on a provider)
        "license",  # 2.1
        "rights",  # 3.0
        "within",  # 2.1: the collection it is in
        "partOf",  # 3.0: the same
        "thumbnail",
        "service",  # image, search and auth services
        "services",  # 3.0: services referenced from elsewhere in the manifest
    }
)
"""Properties of the IIIF Presentation API (2.1 and 3.0) whose values are links, as a string or as
objects with an ``id`` / ``@id``."""

WEB_SCHEMES = ("http://", "https://", "//")


def is_web_link(value: str) -> bool:
    """Whether a link opens a web page: http, https or protocol-relative (case and the spaces a
    browser strips around it are ignored)."""
    return value.strip().lower().startswith(WEB_SCHEMES)


def web_links_only(doc: Any) -> Any:
    """A copy of a JSON document in which every link property holds only web links (``is_web_link``).

    A string value that is not a web link is dropped, so is an object whose ``id`` or ``@id`` is not
    (an object without either is kept, its own properties checked); a property left empty is removed.
    """
    if isinstance(doc, list):
        return [web_links_only(item) for item in doc]
    if not isinstance(doc, dict):
        return doc
    out = {}
    for key, value in doc.items():
        if key not in LINK_PROPERTIES:
            out[key] = web_links_only(value)
            continue
        values = value if isinstance(value, list) else [value]
        kept = [web_links_only(v) for v in values if _is_web_resource(v)]
        if kept:
            out[key] = kept if isinstance(value, list) else kept[0]
        elif isinstance(value, list) and not value:
            out[key] = value  # an empty list stays as the manifest had it
    return out


def _is_web_resource(value: Any) -> bool:
    """A link property's value that may stay: a web link, or an object whose ``id`` and ``@id`` are web
    links or absent. Anything else (a number, a list in the list) is nothing a viewer should open."""
    if isinstance(value, str):
        return is_web_link(value)
    if isinstance(value, dict):
        links = [value[key] for key in ("id", "@id") if key in value]
        return all(isinstance(link, str) and is_web_link(link) for link in links)
    return False
