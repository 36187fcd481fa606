"""What a request asks of the Web Annotation Protocol container (``GET /collations/{id}/container/``)
and of the Change Discovery feed (``GET /activity``).

The query names the filter (``target``, a canvas IRI), the form of the pages (``iris``) and the page
(``page``, from 0); on the container itself (no ``page``), a ``Prefer`` header chooses the form
(``collation.publish.container.parse_prefer``) and whether the first page is embedded.
"""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from collation.publish.container import ContainerView, parse_prefer


class ContainerQuerySchema(Schema):
    target = fields.String(load_default=None, validate=validate.Length(min=1, max=2000))
    iris = fields.Integer(load_default=None, validate=validate.OneOf([0, 1]))
    page = fields.Integer(load_default=None, validate=validate.Range(min=0))


class ActivityQuerySchema(Schema):
    """``GET /activity``: a page of the Change Discovery feed (from 0), or the collection without one."""

    page = fields.Integer(load_default=None, validate=validate.Range(min=0))


def requested_view(args: dict[str, Any], prefer: str | None) -> tuple[ContainerView, bool]:
    """The ``ContainerView`` of a request's query (parsed by ``ContainerQuerySchema``) and ``Prefer``
    header, and whether the preference was applied. ``iris`` in the query wins: it is how the
    container's own links name each form."""
    preference = parse_prefer(prefer) if args["page"] is None else None
    iris, minimal = preference or (False, False)
    if args["iris"] is not None:
        iris = bool(args["iris"])
    return ContainerView(target=args["target"], iris=iris, minimal=minimal, page=args["page"]), preference is not None
