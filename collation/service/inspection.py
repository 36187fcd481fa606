"""``GET /inspect``: the service's dry run of a manifest (``collation.iiif.inspect.inspect_manifest``).

It reads the manifest with the runtime's fetcher, so the address policy, caps, politeness and
cache are those of a collation, and answers the report synchronously (no job, no Redis). Errors
about the manifest itself name the ``manifest`` field: a URL the policy refuses is a 400, a
document that is not a usable manifest a 422, an upstream failure (HTTP error, timeout) a 502.
"""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates, validates_schema

from ..errors import CollationError
from ..iiif.errors import ManifestError
from ..iiif.inspect import inspect_manifest
from ..iiif.regions import RegionSelector
from ..runtime import Runtime
from .schemas import HttpUrl


class UnusableManifest(CollationError):
    """The manifest was fetched but is not a IIIF manifest we can read (HTML, bad JSON, wrong type)."""

    http_status = 422


class InspectQuerySchema(Schema):
    """Query of ``GET /inspect``: the options of ``collate inspect``."""

    manifest = HttpUrl(required=True)
    selector = fields.String(validate=validate.Length(min=1, max=500))
    whole_canvases = fields.Boolean(load_default=False)
    max_info = fields.Integer(load_default=20, validate=validate.Range(min=0, max=100))

    @validates("selector")
    def _parses(self, value: str, **kwargs: Any) -> None:
        try:
            RegionSelector.parse(value)
        except CollationError as exc:
            raise ValidationError(exc.message) from None

    @validates_schema
    def _one_way(self, data: dict[str, Any], **kwargs: Any) -> None:
        if data.get("selector") and data.get("whole_canvases"):
            raise ValidationError("give a selector or whole_canvases, not both", "whole_canvases")


def inspect(runtime: Runtime, query: dict[str, Any]) -> dict[str, Any]:
    """The ``inspect_manifest`` report of ``query["manifest"]`` (see ``collation.iiif.inspect``).

    Raises:
        CollationError: naming the field ``manifest``: ``UnsafeURLError`` (400), ``UnusableManifest``
            (422), ``LimitError`` (422) or ``FetchError`` (502).
    """
    try:
        return inspect_manifest(
            query["manifest"],
            fetcher=runtime.fetcher,
            selector=RegionSelector.parse(query.get("selector")),
            whole_canvases=query["whole_canvases"],
            max_regions=runtime.settings.max_regions,
            max_info=query["max_info"],
        )
    except ManifestError as exc:
        raise UnusableManifest(exc.message, field="manifest") from exc
    except CollationError as exc:
        exc.field = "manifest"
        raise
