"""marshmallow schemas of request bodies and query strings.

Unknown fields are refused (marshmallow's default ``RAISE``), so a typo in an option is a 400 that
names the field rather than a silently ignored setting.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from marshmallow import Schema, ValidationError, fields, validate, validates, validates_schema

from collation.core import options
from collation.core.errors import InputError
from collation.core.vocabulary import VERDICTS
from collation.store.records import NAME_LIMIT

SCORES = ("raw", "normalized", "propagated")

MAX_BODY_DEPTH = 32
"""Nesting of a request body beyond which it is refused (the deepest valid body has 5 levels)."""
INDEX = re.compile(r"0|[1-9][0-9]{0,8}")
"""A manuscript index as written in a regions key or a query: ASCII digits only (``str.isdigit``
also accepts superscripts and other scripts' digits, which ``int`` then refuses or reads), no
leading zero (``"01"`` would name manuscript 1 under another key)."""
PAIR = re.compile(r"(0|[1-9][0-9]{0,8}),(0|[1-9][0-9]{0,8})")
"""``pair=a,b``: two indices as ``INDEX`` (openapi.yaml's pattern says the same, and that a != b)."""


def check_json_tree(doc: Any, max_depth: int = MAX_BODY_DEPTH) -> None:
    """Refuses a parsed JSON document nested deeper than ``max_depth`` or holding a key or string that
    is not Unicode text (a lone surrogate, which no file or hash can encode). Iterative: a deep
    document cannot exhaust the stack here.

    Raises:
        ValidationError: naming the field at fault (dotted path).
    """
    stack: list[tuple[Any, str, int]] = [(doc, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > max_depth:
            raise ValidationError({path or "body": [f"is nested more than {max_depth} levels deep"]})
        if isinstance(value, dict):
            items = list(value.items())
        elif isinstance(value, list):
            items = [(str(i), v) for i, v in enumerate(value)]
        else:
            if isinstance(value, str) and not _is_text(value):
                raise ValidationError({path or "body": ["is not valid Unicode text (a lone surrogate)"]})
            continue
        for key, item in items:
            if not _is_text(key):
                raise ValidationError({path or "body": ["has a key that is not valid Unicode text"]})
            stack.append((item, f"{path}.{key}" if path else key, depth + 1))


def _is_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class HttpUrl(fields.String):
    """An absolute http(s) URL with a host (the address policy is applied when it is fetched).

    White space around it is dropped; a control character anywhere is refused (``urlsplit`` would
    silently drop some, so ``"\fhtTp://\u0006"`` read as a URL with host ``\u0006``).
    """

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        text = super()._deserialize(value, attr, data, **kwargs).strip()
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
            raise ValidationError("must be an absolute http or https URL without control characters")
        try:
            parts = urlsplit(text)
            host = parts.hostname
        except ValueError:  # e.g. "http://[::1": an unbalanced IPv6 bracket
            raise ValidationError("must be an absolute http or https URL") from None
        if not text[:8].lower().startswith(("http://", "https://")) or not host:
            raise ValidationError("must be an absolute http or https URL")
        if len(text) > 2048:
            raise ValidationError("is longer than 2048 characters")
        return text


class StrictBoolean(fields.Field):
    """JSON true or false only: marshmallow's Boolean also reads 1, "yes" or "on", and ``1 in {True}``."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise ValidationError("must be true or false")
        return value


class StrictNumber(fields.Float):
    """A JSON number only: marshmallow's Float also reads "0.5", a string."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError("must be a number")
        return super()._deserialize(value, attr, data, **kwargs)


def _one_of(option: str) -> validate.OneOf:
    return validate.OneOf(options.CHOICES[option])


class OptionsSchema(Schema):
    """The options of ``collation.core.options.CollationOptions``: its value lists, its rules."""

    backbone = fields.String(validate=_one_of("backbone"))
    similarity = fields.String(validate=_one_of("similarity"))
    kernel = fields.String(validate=_one_of("kernel"))
    normalization = fields.String(validate=_one_of("normalization"))
    propagation = fields.String(validate=_one_of("propagation"))
    orientation = fields.String(validate=_one_of("orientation"))
    seed = fields.Integer(strict=True, validate=validate.Range(min=0, max=options.MAX_SEED))
    candidates = fields.Integer(
        strict=True, allow_none=True, validate=validate.Range(min=1, max=options.MAX_CANDIDATES)
    )
    transpositions = fields.String(validate=_one_of("transpositions"))
    partial = StrictBoolean()
    weak_below = StrictNumber(
        allow_none=True, allow_nan=False, validate=validate.Range(min=0, max=options.MAX_WEAK_BELOW)
    )

    @validates_schema(skip_on_field_errors=True)
    def _rules(self, data: dict[str, Any], **kwargs: Any) -> None:
        try:
            options.CollationOptions.parse(data)
        except InputError as exc:  # a rule between options: the field it names
            raise ValidationError(exc.message, exc.field) from None


class CanvasRef(fields.Field):
    """A canvas id (string) or a canvas index (integer)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str | int:
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ValidationError("must be a canvas id (string) or a canvas index (integer)")
        if isinstance(value, int) and value < 0:
            raise ValidationError("a canvas index must be >= 0")
        if isinstance(value, str) and not 0 < len(value) <= 2048:
            raise ValidationError("must be 1 to 2048 characters")
        return value


class RegionSchema(Schema):
    canvas = CanvasRef(required=True)
    xywh = fields.List(fields.Integer(strict=True), required=True, validate=validate.Length(equal=4))
    label = fields.String(validate=validate.Length(max=500))

    @validates("xywh")
    def _positive_box(self, value: list[int], **kwargs: Any) -> None:
        if len(value) == 4 and (value[0] < 0 or value[1] < 0 or value[2] <= 0 or value[3] <= 0):
            raise ValidationError("x and y must be >= 0, w and h > 0")


class RegionSpecSchema(Schema):
    selector = fields.String(validate=validate.Length(min=1, max=500))
    whole_canvases = fields.Boolean()
    detect = fields.Boolean()


class RegionSpec(fields.Field):
    """Regions of one manuscript: a list of regions, or ``{"selector": ...}`` / ``{"whole_canvases": true}`` /
    ``{"detect": true}``."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, list):
            if not value:
                raise ValidationError("must list at least one region")
            return RegionSchema(many=True).load(value)
        if isinstance(value, dict):
            spec = RegionSpecSchema().load(value)
            if spec.get("selector") and spec.get("whole_canvases"):
                raise ValidationError("give a selector or whole_canvases, not both")
            if spec.get("detect") and (spec.get("whole_canvases") or spec.get("selector")):
                raise ValidationError("detect replaces the annotations: give it without selector or whole_canvases")
            return spec
        raise ValidationError("must be a list of regions or an object with selector, whole_canvases or detect")


class CollationName(fields.String):
    """A collation's name: a string, trimmed, 1 to ``NAME_LIMIT`` characters once trimmed."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        name = super()._deserialize(value, attr, data, **kwargs).strip()
        if not 1 <= len(name) <= NAME_LIMIT:
            raise ValidationError(f"must be 1 to {NAME_LIMIT} characters (spaces around it are trimmed)")
        return name


class DetectionSchema(Schema):
    """Body of ``POST /detections``: the manifest whose pages are searched."""

    manifest = HttpUrl(required=True)


class RenameSchema(Schema):
    """Body of ``PATCH /collations/{id}``: its new name."""

    name = CollationName(required=True)


class AccessTokenSchema(Schema):
    """One IIIF Auth 2.0 access token and the access service (``AuthAccessService2`` id) it is for."""

    service = HttpUrl(required=True)
    token = fields.String(required=True, validate=validate.Length(min=1, max=4096))


class CollationRequestSchema(Schema):
    """Body of ``POST /collations``."""

    manifests = fields.List(HttpUrl(), required=True, validate=validate.Length(min=2))
    access_tokens = fields.List(fields.Nested(AccessTokenSchema), validate=validate.Length(max=8))
    regions = fields.Dict(keys=fields.String(), values=RegionSpec())
    options = fields.Nested(OptionsSchema, load_default=dict)
    callback_url = HttpUrl(allow_none=True)
    name = CollationName()

    def __init__(self, *args: Any, max_manifests: int = 32, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_manifests = max_manifests

    @validates_schema
    def _check(self, data: dict[str, Any], **kwargs: Any) -> None:
        manifests = data.get("manifests") or []
        if len(manifests) > self.max_manifests:
            raise ValidationError(f"at most {self.max_manifests} manifests per collation", "manifests")
        for key in data.get("regions") or {}:
            if not INDEX.fullmatch(key) or int(key) >= len(manifests):
                raise ValidationError(
                    f"key {key!r} is not the index of a manifest (0..{len(manifests) - 1})", "regions"
                )
        try:
            options.CollationOptions.parse(data.get("options")).check_manuscripts(len(manifests))
        except InputError as exc:
            raise ValidationError(exc.message, f"options.{exc.field}") from None


class AssessmentSchema(Schema):
    """Body of ``POST /collations/{id}/assessments``: an expert's verdict on one correspondence."""

    pair = fields.List(
        fields.Integer(strict=True, validate=validate.Range(min=0)), required=True, validate=validate.Length(equal=2)
    )
    source = fields.Integer(strict=True, required=True, validate=validate.Range(min=0))
    target = fields.Integer(strict=True, required=True, validate=validate.Range(min=0))
    verdict = fields.String(required=True, validate=validate.OneOf(VERDICTS))
    creator = fields.String(validate=validate.Length(max=500))
    note = fields.String(validate=validate.Length(max=5000))

    @validates("pair")
    def _two_manuscripts(self, value: list[int], **kwargs: Any) -> None:
        if len(value) == 2 and value[0] == value[1]:
            raise ValidationError("must name two different manuscripts")


class MemberSchema(Schema):
    manuscript = fields.Integer(strict=True, required=True, validate=validate.Range(min=0))
    index = fields.Integer(strict=True, required=True, validate=validate.Range(min=0))


class BatchAssessmentSchema(Schema):
    """Body of ``POST /collations/{id}/assessments/batch``: one verdict on every pair of ``members``."""

    members = fields.List(fields.Nested(MemberSchema), required=True, validate=validate.Length(min=2, max=64))
    verdict = fields.String(required=True, validate=validate.OneOf(VERDICTS))
    creator = fields.String(validate=validate.Length(max=500))
    note = fields.String(validate=validate.Length(max=5000))

    @validates_schema(skip_on_field_errors=True)  # members must be valid before they are compared
    def _different_manuscripts(self, data: dict, **kwargs: Any) -> None:
        manuscripts = [m["manuscript"] for m in data["members"]]
        if len(set(manuscripts)) != len(manuscripts):
            raise ValidationError("must name regions of different manuscripts (one per manuscript)", "members")


class PairParam(fields.String):
    """``pair=a,b``: two different manuscript indices."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> tuple[int, int]:
        text = super()._deserialize(value, attr, data, **kwargs)
        match = PAIR.fullmatch(text)
        if match is None:
            raise ValidationError("must be two manuscript indices (ASCII digits), as in pair=0,1")
        a, b = (int(p) for p in match.groups())
        if a == b:
            raise ValidationError("must name two different manuscripts")
        return a, b


class CorrespondenceQuerySchema(Schema):
    """Query of ``GET /collations/{id}/correspondences``."""

    pair = PairParam(load_default=(0, 1))
    score = fields.String(load_default="propagated", validate=validate.OneOf(SCORES))
    top = fields.Integer(load_default=5, validate=validate.Range(min=1, max=1000))
    min_score = fields.Float(load_default=None, allow_nan=False)


class ClearQuerySchema(Schema):
    """Query of ``DELETE /collations/{id}/assessments``: the correspondence whose verdicts are cleared."""

    pair = PairParam(required=True)
    source = fields.Integer(required=True, validate=validate.Range(min=0))
    target = fields.Integer(required=True, validate=validate.Range(min=0))


class ConcordanceQuerySchema(Schema):
    """Query of ``GET /collations/{id}/concordance`` and ``.csv``."""

    score = fields.String(load_default="propagated", validate=validate.OneOf(SCORES))
    min_score = fields.Float(load_default=None, allow_nan=False)
    sort = fields.Integer(load_default=None, validate=validate.Range(min=0))


class PageQuerySchema(Schema):
    page = fields.Integer(load_default=None, validate=validate.Range(min=1))
