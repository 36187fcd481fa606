"""Illustration regions of a manifest: from its annotations, from the request, or whole canvases.

The order of the regions is the order of the manuscript (canvas order, then annotation order),
never a spatial sort: propagation of correspondences depends on it. Coordinates are integers in
canvas units, clipped to the canvas.

API::

    regions, problems = find_regions(manifest, fetcher=fetcher,
                                     selector=RegionSelector(),      # which annotations count
                                     given=None,                     # [{"canvas": id, "xywh": "x,y,w,h"}]
                                     whole_canvases=False)
    selector = RegionSelector.parse("motivation=tagging,tag=illustration")

``find_regions`` returns the regions it could read and a list of ``RegionProblem`` for the rest
(an annotation list that failed to load, a target outside the manifest, an empty box); it raises
only for unusable requests (``given`` regions that name no canvas of the manifest) or caps
(``max_regions``, default ``LimitSettings.max_regions``). Selectors and targets become rectangles in
``collation.iiif.selectors``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from collation.core.errors import InputError, LimitError
from collation.core.settings import LimitSettings
from collation.iiif.annotation_pages import RegionProblem, load_annotations
from collation.iiif.geometry import image_to_canvas, parse_xywh
from collation.iiif.model import Canvas, ImageSource, Manifest, as_list, bare, json_id, json_type, label_text
from collation.iiif.selectors import Shape, shape_on_canvas, target_shape

if TYPE_CHECKING:
    from collation.net.http import Fetcher

NO_ANNOTATIONS = (
    "the manifest links no annotations (no otherContent/annotations): no region; give regions or use whole canvases"
)
"""The problem of a manifest without annotations (dropped when its illustrations are detected)."""


@dataclass(frozen=True)
class Region:
    """One illustration: a rectangle of a canvas, in canvas units (integers).

    ``index`` is the region's position in the manuscript's order (0-based); ``annotation_id`` is
    the id of the annotation it came from, if any; ``score`` is the detector's confidence (0..1)
    for a region found by detection (``collation.iiif.detected``), None otherwise.
    """

    index: int
    canvas_id: str
    canvas_index: int
    xywh: tuple[int, int, int, int]
    label: str
    annotation_id: str | None = None
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form, for storage and for the service (``score`` only when detected)."""
        data: dict[str, Any] = {
            "index": self.index,
            "canvas_id": self.canvas_id,
            "canvas_index": self.canvas_index,
            "xywh": list(self.xywh),
            "label": self.label,
            "annotation_id": self.annotation_id,
        }
        if self.score is not None:
            data["score"] = self.score
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Region:
        """Inverse of ``to_dict``."""
        x, y, w, h = (int(v) for v in data["xywh"])
        return cls(
            index=int(data["index"]),
            canvas_id=str(data["canvas_id"]),
            canvas_index=int(data["canvas_index"]),
            xywh=(x, y, w, h),
            label=str(data.get("label", "")),
            annotation_id=data.get("annotation_id"),
            score=float(data["score"]) if data.get("score") is not None else None,
        )


@dataclass(frozen=True)
class RegionSelector:
    """Which annotations are illustrations.

    By default every non-painting annotation with a region. Otherwise an annotation must match
    every criterion given: one of ``motivations`` (``tagging`` and ``oa:tagging`` are the same),
    one of ``tags`` (tag bodies, case-insensitive) and ``text`` (a substring of any body text,
    case-insensitive). Painting annotations are never illustrations.
    """

    motivations: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    text: str | None = None

    @classmethod
    def parse(cls, spec: str | None) -> RegionSelector:
        """From a command-line string: ``motivation=tagging,tag=illustration,text=figure``."""
        if not spec:
            return cls()
        motivations: list[str] = []
        tags: list[str] = []
        text = None
        for part in spec.split(","):
            key, sep, value = part.partition("=")
            key, value = key.strip().lower(), value.strip()
            if not sep or not value:
                raise InputError(f"region selector {spec!r}: expected key=value, got {part!r}", field="selector")
            if key in ("motivation", "motivations"):
                motivations.append(value)
            elif key in ("tag", "tags"):
                tags.append(value)
            elif key == "text":
                text = value
            else:
                raise InputError(
                    f"region selector {spec!r}: unknown key {key!r} (use motivation, tag or text)",
                    field="selector",
                )
        return cls(tuple(motivations), tuple(tags), text)

    def accepts(self, motivations: Sequence[str], tags: Sequence[str], texts: Sequence[str]) -> bool:
        """Whether an annotation with these (bare, lower-case) motivations and body texts is selected."""
        if "painting" in motivations:
            return False
        if self.motivations and not {bare(m) for m in self.motivations} & set(motivations):
            return False
        if self.tags and not {t.lower() for t in self.tags} & {t.lower().strip() for t in tags}:
            return False
        if self.text:
            needle = self.text.lower()
            if not any(needle in t.lower() for t in [*texts, *tags]):
                return False
        return True


# -- annotations ---------------------------------------------------------------------------------


def _bodies(annotation: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(texts, tags) of an annotation's bodies (3.0 ``body``/``bodyValue``, 2.x ``resource``)."""
    texts: list[str] = []
    tags: list[str] = []
    if isinstance(annotation.get("bodyValue"), str):
        texts.append(annotation["bodyValue"])
    queue = as_list(annotation.get("body")) + as_list(annotation.get("resource"))
    seen = 0
    while queue and seen < 100:
        seen += 1
        body = queue.pop(0)
        if not isinstance(body, dict):
            continue
        kind = bare(json_type(body))
        if kind == "choice":
            queue.extend(as_list(body.get("items")) + as_list(body.get("item")) + as_list(body.get("default")))
            continue
        value = body.get("value", body.get("chars"))
        if not isinstance(value, str):
            continue
        purposes = {bare(p) for p in as_list(body.get("purpose")) if isinstance(p, str)}
        if kind == "tag" or "tagging" in purposes:
            tags.append(value)
        else:
            texts.append(value)
    return texts, tags


def _plain(text: str, limit: int = 80) -> str:
    """Display text from a body value that may be HTML."""
    text = html.unescape(re.sub(r"<[^>]*>", " ", text))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _layers(manifest: Manifest) -> dict[str, tuple[Canvas, ImageSource]]:
    """Image ids (every layer of a Choice, the static image, the service) -> (canvas, image)."""
    found: dict[str, tuple[Canvas, ImageSource]] = {}
    for canvas in manifest.canvases:
        for image in canvas.painted():
            for ref in (*image.layers, image.static_url, image.service_id):
                if ref:
                    found.setdefault(ref, (canvas, image))
    return found


def _on_layer(shape: Shape, canvas: Canvas, image: ImageSource) -> Shape | None:
    """A rectangle on one image (a Choice layer) in canvas units, or None when the image size is unknown."""
    if shape.unit != "pixel" or not image.width or not image.height:
        return None
    view = replace(canvas, image=replace(image, selector=None))
    return Shape("pixel", image_to_canvas(shape.xywh, view, (image.width, image.height)))


def _annotated_regions(
    manifest: Manifest,
    fetcher: Fetcher | None,
    selector: RegionSelector,
    problems: list[RegionProblem],
) -> list[tuple[int, str, tuple[int, int, int, int], str, str | None]]:
    by_id = {canvas.id: canvas for canvas in manifest.canvases}
    layers = _layers(manifest)
    sources = [(s, c) for c in manifest.canvases for s in c.annotation_sources]
    sources += [(s, None) for s in manifest.annotation_sources]
    found = []
    skipped: dict[str, list[str]] = {}
    seen: set[tuple[str | None, str, tuple[int, int, int, int]]] = set()
    for annotation, list_url, _referrer in load_annotations(sources, fetcher, problems):
        if not isinstance(annotation, dict):
            problems.append(
                RegionProblem(f"annotation list {list_url}: an entry is not an annotation", source=list_url)
            )
            continue
        motivations = [bare(m) for m in as_list(annotation.get("motivation")) if isinstance(m, str)]
        texts, tags = _bodies(annotation)
        annotation_id = json_id(annotation)
        name = f"annotation {annotation_id or '(no id)'}"
        if not selector.accepts(motivations, tags, texts):
            reason = "painting (content, not an illustration)" if "painting" in motivations else "not selected"
            skipped.setdefault(reason, []).append(annotation_id or "(no id)")
            continue
        targets = as_list(annotation.get("target", annotation.get("on")))
        if not targets:
            problems.append(RegionProblem(f"{name} has no target: not used", source=list_url))
        for target in targets[:1]:
            canvas_id, shape = target_shape(target)
            canvas = by_id.get(canvas_id or "")
            if canvas is None and canvas_id in layers and shape is not None:
                canvas, image = layers[canvas_id]
                shape = _on_layer(shape, canvas, image)
                if shape is None:
                    problems.append(
                        RegionProblem(
                            f"{name} targets image {canvas_id} of canvas {canvas.id}, whose size is unknown: not used",
                            canvas.id,
                            list_url,
                        )
                    )
                    break
            if canvas is None:
                what = (
                    f"targets {canvas_id}, which is not a canvas of this manifest"
                    if canvas_id
                    else "has a target with no canvas id (no source, no id)"
                )
                problems.append(RegionProblem(f"{name} {what}", canvas_id, list_url))
                break
            if shape is None:
                problems.append(
                    RegionProblem(
                        f"{name} targets the whole canvas {canvas.id} or a point (no region): not an illustration box",
                        canvas.id,
                        list_url,
                    )
                )
                break
            xywh = shape_on_canvas(shape, canvas)
            if xywh is None:
                problems.append(
                    RegionProblem(
                        f"{name} on canvas {canvas.id}: empty region "
                        f"{shape.unit} {shape.xywh} (outside the canvas, or a percent region on a canvas "
                        "of unknown size)",
                        canvas.id,
                        list_url,
                    )
                )
                break
            key = (annotation_id, canvas.id, xywh)
            if annotation_id is not None and key in seen:
                problems.append(RegionProblem(f"{name} appears twice: used once", canvas.id, list_url))
                break
            seen.add(key)
            text = next((_plain(t) for t in texts if _plain(t)), "")
            label = f"{canvas.label}: {text}" if text else canvas.label
            found.append((canvas.index, canvas.id, xywh, label, annotation_id))
    for reason, ids in skipped.items():
        listed = ", ".join(ids[:20]) + (f" and {len(ids) - 20} more" if len(ids) > 20 else "")
        problems.append(RegionProblem(f"{len(ids)} annotation(s) not used, {reason}: {listed}"))
    if not found and not sources:
        problems.append(RegionProblem(NO_ANNOTATIONS))
    return found


def _given_regions(
    manifest: Manifest, given: Sequence[Any]
) -> list[tuple[int, str, tuple[int, int, int, int], str, str | None]]:
    by_id = {canvas.id: canvas for canvas in manifest.canvases}
    found = []
    for position, entry in enumerate(given):
        name = f"regions[{position}]"
        if isinstance(entry, dict):
            canvas_ref, xywh_value, label = entry.get("canvas"), entry.get("xywh"), entry.get("label")
        elif isinstance(entry, list | tuple) and len(entry) == 2:
            (canvas_ref, xywh_value), label = entry, None
        else:
            raise InputError(f"{name}: expected {{'canvas': id, 'xywh': 'x,y,w,h'}}, got {entry!r:.80}", field=name)
        if isinstance(canvas_ref, int) and not isinstance(canvas_ref, bool):
            if not 0 <= canvas_ref < len(manifest.canvases):
                raise InputError(
                    f"{name}: canvas index {canvas_ref} is not in {manifest.url or manifest.id}", field=name
                )
            canvas = manifest.canvases[canvas_ref]
        else:
            canvas = by_id.get(str(canvas_ref))
            if canvas is None:
                raise InputError(
                    f"{name}: canvas {canvas_ref!r} is not a canvas of {manifest.url or manifest.id}",
                    field=name,
                )
        if isinstance(xywh_value, list | tuple) and len(xywh_value) == 4:
            xywh_value = ",".join(str(v) for v in xywh_value)
        parsed = parse_xywh(xywh_value)
        if parsed is None:
            raise InputError(f"{name}: xywh {xywh_value!r:.80} is not x,y,w,h", field=f"{name}.xywh")
        xywh = shape_on_canvas(Shape(*parsed), canvas)
        if xywh is None:
            raise InputError(f"{name}: xywh {xywh_value!r:.80} is empty on canvas {canvas.id}", field=f"{name}.xywh")
        text = label_text(label) if label is not None else ""
        found.append((canvas.index, canvas.id, xywh, text or canvas.label, None))
    return found


def find_regions(
    manifest: Manifest,
    *,
    fetcher: Fetcher | None = None,
    selector: RegionSelector | None = None,
    given: Sequence[Any] | None = None,
    whole_canvases: bool = False,
    max_regions: int | None = None,
) -> tuple[list[Region], list[RegionProblem]]:
    """Regions of a manifest in manuscript order, and the problems met on the way.

    With ``given`` (canvas id or index + xywh per region, for manifests that carry no
    annotations), those regions; with ``whole_canvases``, one region per canvas that has an image;
    else the annotations selected by ``selector`` (embedded or fetched through ``fetcher``).
    More than ``max_regions`` (default ``LimitSettings.max_regions``) raises ``LimitError``.
    """
    max_regions = LimitSettings.max_regions if max_regions is None else max_regions
    if given is not None and whole_canvases:
        raise InputError("give regions or ask for whole canvases, not both", field="whole_canvases")
    problems = [RegionProblem(p, source=manifest.url) for p in manifest.problems]
    if given is not None:
        found = _given_regions(manifest, given)
    elif whole_canvases:
        found = []
        for canvas in manifest.canvases:
            if canvas.image is None or not canvas.width or not canvas.height:
                problems.append(RegionProblem(f"canvas {canvas.id} has no image or no size: skipped", canvas.id))
                continue
            found.append((canvas.index, canvas.id, (0, 0, canvas.width, canvas.height), canvas.label, None))
    else:
        found = _annotated_regions(manifest, fetcher, selector or RegionSelector(), problems)
    if len(found) > max_regions:
        raise LimitError(
            f"{manifest.url or manifest.id} has {len(found)} regions, more than the cap of {max_regions}",
            url=manifest.url,
        )
    found.sort(key=lambda item: item[0])  # stable: annotation order within a canvas is kept
    regions = [
        Region(index=i, canvas_id=cid, canvas_index=ci, xywh=xywh, label=label, annotation_id=aid)
        for i, (ci, cid, xywh, label, aid) in enumerate(found)
    ]
    return regions, problems
