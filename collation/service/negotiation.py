"""Which form of the annotation collection a client gets, and the Web Annotation Protocol's headers.

``GET /collations/{id}/annotations`` (and its pages) has two representations of the same
annotations (``collation.publish.canonical``): IIIF Presentation 3's, which viewers read and which is
the default, and the W3C Web Annotation model's, for a client whose ``Accept`` prefers
``application/ld+json; profile="http://www.w3.org/ns/anno.jsonld"`` (the protocol's media type). Both
answer with ``Vary: Accept``, an ``ETag`` (``If-None-Match`` gives 304), ``Allow`` and the protocol's
``Link: <http://www.w3.org/ns/ldp#Resource>; rel="type"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import Response, jsonify, request

from collation.publish.parts import ANNOTATION_CONTEXT, PRESENTATION_3

JSONLD = "application/ld+json"
WEB_ANNOTATION_PROFILE = ANNOTATION_CONTEXT
"""The profile of the W3C form (the Web Annotation Protocol's media type)."""
IIIF_PROFILE = PRESENTATION_3
"""The profile of the IIIF form (Presentation 3's media type)."""
ALLOW = "GET, HEAD, OPTIONS"
LDP_RESOURCE = '<http://www.w3.org/ns/ldp#Resource>; rel="type"'


@dataclass(frozen=True)
class MediaRange:
    """One entry of an ``Accept`` header: ``type/subtype``, its ``profile`` URIs and its weight ``q``."""

    type: str
    subtype: str
    profiles: frozenset[str]
    q: float

    def specificity(self, profile: str) -> int | None:
        """How closely this range names ``application/ld+json`` with ``profile`` (None: it does not):
        3 with that profile, 2 the type alone (or ``application/json``), 1 ``application/*``, 0 ``*/*``."""
        if self.profiles and profile not in self.profiles:
            return None
        if (self.type, self.subtype) == ("application", "ld+json"):
            return 3 if self.profiles else 2
        if (self.type, self.subtype) == ("application", "json") and not self.profiles:
            return 2  # JSON-LD is JSON: a JSON client gets the default
        if self.type == "application" and self.subtype == "*":
            return 1
        return 0 if (self.type, self.subtype) == ("*", "*") else None


def _split(text: str, separator: str) -> list[str]:
    """``text`` split on ``separator`` outside double quotes."""
    parts, current, quoted = [], [], False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == separator and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def parse_accept(header: str | None) -> list[MediaRange]:
    """The media ranges of an ``Accept`` header (RFC 9110 12.5.1); malformed entries are skipped."""
    ranges = []
    for entry in _split(header or "", ","):
        fields = _split(entry, ";")
        kind, _, sub = fields[0].strip().lower().partition("/")
        if not kind or not sub:
            continue
        params = {}
        for field in fields[1:]:
            name, _, value = field.partition("=")
            params[name.strip().lower()] = value.strip().strip('"')
        try:
            q = min(max(float(params.get("q", "1")), 0.0), 1.0)
        except ValueError:
            q = 0.0
        ranges.append(MediaRange(kind, sub, frozenset(params.get("profile", "").split()), q))
    return ranges


def weight(ranges: list[MediaRange], profile: str) -> float:
    """The ``q`` the client gives ``application/ld+json`` with ``profile``: that of the most specific
    range naming it (0: none does)."""
    best: tuple[int, float] = (-1, 0.0)
    for r in ranges:
        specificity = r.specificity(profile)
        if specificity is not None and specificity > best[0]:
            best = (specificity, r.q)
    return best[1]


def wants_web_annotation(header: str | None) -> bool:
    """Whether the client prefers the W3C form over the IIIF one (on a tie, or no ``Accept``, it gets IIIF's,
    what viewers read today)."""
    ranges = parse_accept(header)
    return weight(ranges, WEB_ANNOTATION_PROFILE) > weight(ranges, IIIF_PROFILE)


def annotation_response(doc: dict[str, Any], profile: str) -> Response:
    """``doc`` as ``application/ld+json`` with ``profile``, with the protocol's headers; a 304 when the
    client's ``If-None-Match`` names its ETag."""
    response = jsonify(doc)
    response.headers["Content-Type"] = f'{JSONLD}; profile="{profile}"'
    response.vary.add("Accept")
    response.headers["Allow"] = ALLOW
    response.headers["Link"] = LDP_RESOURCE
    response.add_etag()  # of the body: the forms differ, so do their tags
    return response.make_conditional(request)


LDP_CONTAINER = (
    '<http://www.w3.org/ns/ldp#BasicContainer>; rel="type", '
    '<http://www.w3.org/TR/annotation-protocol/>; rel="http://www.w3.org/ns/ldp#constrainedBy"'
)


def container_response(doc: dict[str, Any], *, preference_applied: bool) -> Response:
    """A document of the Web Annotation Protocol container (``collation.publish.container``) with the
    protocol's headers: its media type, ``Vary: Accept, Prefer``, ``Allow``, the container's type and
    constraint links (a page: ``ldp:Resource``), ``Content-Location`` (the representation's own IRI,
    its ``id``), ``Preference-Applied`` when a ``Prefer`` was honoured, and an ETag (304 on a match)."""
    response = jsonify(doc)
    response.headers["Content-Type"] = f'{JSONLD}; profile="{WEB_ANNOTATION_PROFILE}"'
    response.vary.update(("Accept", "Prefer"))
    response.headers["Allow"] = ALLOW
    response.headers["Link"] = LDP_RESOURCE if doc["type"] == "AnnotationPage" else LDP_CONTAINER
    response.headers["Content-Location"] = doc["id"]
    if preference_applied:
        response.headers["Preference-Applied"] = "return=representation"
    response.add_etag()
    return response.make_conditional(request)
