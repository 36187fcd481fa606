"""IIIF Content State API 1.0: a link that opens given canvases, with their regions, in any viewer.

A correspondence (or a concordance row) is a comparison view (the specification's 5.3, "Multiple
Targets for a Comparison View") whose targets are regions of canvases (its 5.1, "A Region of a
Canvas in a Manifest"): ``{"type": "Annotation", "motivation": ["contentState"], "target": [{"id":
"<canvas>#xywh=x,y,w,h", "type": "Canvas", "partOf": [{"id": "<manifest>", "type": "Manifest"}]},
...]}``. Inline, it may leave out ``id`` (6.2); it keeps ``@context`` so that a viewer that checks it
is served.

Passed as the ``iiif-content`` GET parameter, it is *content-state-encoded* (6.1): the JSON's text
through ``encodeURIComponent``, then base64url (RFC 4648 5) of that UTF-8 text, padding removed.
``decode`` undoes it; ``read_targets`` reads a received content state (a full annotation, a bare
target, or a list of targets) back into (canvas, xywh, manifest) triples. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from collation.core.errors import InputError
from collation.publish.parts import PRESENTATION_3

PARAMETER = "iiif-content"
"""The GET parameter a viewer reads the content state from (the specification's 3.1)."""
URI_COMPONENT_SAFE = "-_.!~*'()"
"""What JavaScript's ``encodeURIComponent`` leaves as it is, besides letters and digits."""
XYWH = re.compile(r"^xywh=(?:pixel:)?(\d+(?:\.\d+)?),(\d+(?:\.\d+)?),(\d+(?:\.\d+)?),(\d+(?:\.\d+)?)$")


@dataclass(frozen=True)
class RegionTarget:
    """One target of a content state: a canvas of a manifest, and a region of it (None: all of it)."""

    canvas: str
    manifest: str | None
    xywh: tuple[int, int, int, int] | None


def encode(state: dict[str, Any] | list[Any] | str) -> str:
    """The content-state-encoding (6.1) of ``state`` (JSON, or its text): encodeURIComponent, then
    base64url of the UTF-8 text without ``=`` padding. JSON is written compact, as in 6.3."""
    text = state if isinstance(state, str) else json.dumps(state, separators=(",", ":"), ensure_ascii=False)
    component = quote(text, safe=URI_COMPONENT_SAFE)
    return base64.urlsafe_b64encode(component.encode("utf-8")).decode("ascii").rstrip("=")


def decode(encoded: str) -> str:
    """The text of a content-state-encoded value; ``InputError`` (field ``iiif-content``) when it is not one."""
    if len(encoded) % 4 == 1 or not re.fullmatch(r"[A-Za-z0-9_-]*", encoded):
        raise InputError("is not a content-state-encoded value (base64url without padding)", field=PARAMETER)
    try:
        component = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise InputError("is not a content-state-encoded value (base64url of UTF-8 text)", field=PARAMETER) from None
    return unquote(component, errors="strict")


def region_target(canvas: str, xywh: Sequence[int], manifest: str) -> dict[str, Any]:
    """A region of a canvas in a manifest, as the specification's 5.1 writes it (integers, canvas units)."""
    x, y, w, h = (round(float(v)) for v in xywh)
    return {
        "id": f"{canvas.split('#', 1)[0]}#xywh={x},{y},{w},{h}",
        "type": "Canvas",
        "partOf": [{"id": manifest, "type": "Manifest"}],
    }


def build_content_state(regions: Sequence[tuple[str, Sequence[int], str]]) -> dict[str, Any]:
    """The content state that opens these (canvas, xywh, manifest) regions side by side: one target,
    or several for a comparison view (5.3), in the order given (A first)."""
    if not regions:
        raise InputError("a content state needs at least one region", field="regions")
    targets = [region_target(canvas, xywh, manifest) for canvas, xywh, manifest in regions]
    return {
        "@context": PRESENTATION_3,
        "type": "Annotation",
        "motivation": ["contentState"],
        "target": targets if len(targets) > 1 else targets[0],
    }


def view_link(viewer: str, state: dict[str, Any]) -> str:
    """``viewer`` (a page that reads ``iiif-content``) opening ``state``."""
    separator = "&" if "?" in viewer else "?"
    return f"{viewer}{separator}{PARAMETER}={encode(state)}"


def _target(value: Any) -> RegionTarget:
    """One target: a Canvas (its id maybe with ``#xywh=``) or a SpecificResource with a FragmentSelector."""
    if isinstance(value, str):
        value = {"id": value, "type": "Canvas"}
    if not isinstance(value, dict):
        raise InputError("a target must be a Canvas or a SpecificResource", field=PARAMETER)
    selector = None
    if value.get("type") == "SpecificResource":
        selector = value.get("selector")
        selector = selector[0] if isinstance(selector, list) and selector else selector
        selector = selector.get("value") if isinstance(selector, dict) else None
        value = value.get("source")
        value = {"id": value, "type": "Canvas"} if isinstance(value, str) else value
    if not isinstance(value, dict) or not isinstance(value.get("id"), str) or value.get("type") != "Canvas":
        raise InputError("each target must name a Canvas by its id", field=PARAMETER)
    canvas, _, fragment = value["id"].partition("#")
    found = XYWH.match(selector or fragment or "")
    xywh = tuple(round(float(v)) for v in found.groups()) if found else None
    part_of = value.get("partOf")
    part_of = part_of[0] if isinstance(part_of, list) and part_of else part_of
    manifest = part_of.get("id") if isinstance(part_of, dict) else part_of if isinstance(part_of, str) else None
    return RegionTarget(canvas, manifest if isinstance(manifest, str) else None, xywh)  # type: ignore[arg-type]


def read_targets(text: str) -> list[RegionTarget]:
    """The canvases and regions a received content state names (4: a full annotation with the
    ``contentState`` motivation, or the value of its ``target``). ``InputError`` when it names none."""
    try:
        state = json.loads(text)
    except ValueError:
        raise InputError("is not JSON once decoded", field=PARAMETER) from None
    if isinstance(state, dict) and state.get("type") == "Annotation":
        motivation = state.get("motivation")
        if "contentState" not in (motivation if isinstance(motivation, list) else [motivation]):
            raise InputError("an annotation whose motivation is not contentState", field=PARAMETER)
        state = state.get("target")
    targets = [_target(t) for t in (state if isinstance(state, list) else [state])]
    if not targets:
        raise InputError("names no canvas", field=PARAMETER)
    return targets
