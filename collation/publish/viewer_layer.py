"""The viewer layer: per-canvas pages of ``commenting`` annotations that every Mirador version lists
and draws, and the derived manifests whose canvases point to them.

Each correspondence gives two display annotations, one on each side's region, with an HTML body
naming the counterpart in words and links (the scores are its ``imcol:`` properties); pages are
AnnotationPages (Presentation 3) or AnnotationLists (2.1), in the version of the manuscript's own manifest.
Regions found by an illustration detector (``Region.score``) also get one annotation each ("Illustration
found by detection (illustration 3, the detector is confident)", the score in ``imcol:detectionScore``),
with or without a correspondence, so that a historian sees in the viewer what was found.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from collation.core.correspondence import Correspondence
from collation.core.errors import InputError
from collation.core.vocabulary import CATEGORY_LABELS
from collation.iiif.geometry import canvas_to_image
from collation.iiif.links import is_web_link, web_links_only
from collation.iiif.model import Manifest, label_text
from collation.iiif.regions import Region
from collation.publish.parts import (
    ANNOTATION_CONTEXT,
    PRESENTATION_2,
    PRESENTATION_3,
    End,
    Link,
    UrlScheme,
    manifest_label,
    manuscript_manifest,
    read_links,
    score_properties,
    software_agent,
    specific_resource,
    transposition_body,
    transposition_label,
    xywh_fragment,
)


def _region_image_url(end: End) -> str | None:
    """An Image API URL showing the region, when the image size is declared in the manifest."""
    image = end.canvas.image
    if image is None or not image.service_id or not image.width or not image.height:
        return None
    if not is_web_link(image.service_id):  # a javascript: service would make the link a script
        return None
    try:
        x, y, w, h = canvas_to_image(tuple(float(v) for v in end.region.xywh), end.canvas)  # type: ignore[arg-type]
    except InputError:
        return None
    x0, y0, x1, y1 = (
        max(0, round(x)),
        max(0, round(y)),
        min(image.width, round(x + w)),
        min(image.height, round(y + h)),
    )
    if x1 <= x0 or y1 <= y0:
        return None
    quality = "native" if image.service_version == 1 else "default"
    return f"{image.service_id}/{x0},{y0},{x1 - x0},{y1 - y0}/{min(600, x1 - x0)},/0/{quality}.jpg"


def _summary_html(link: Link, mine: End, other: End, urls: UrlScheme) -> str:
    """The annotation's text in a historian's words (issue 39, item 4): the counterpart, whether each is the
    other's best match, the transposition, the status and the expert's verdict. The scores are not in the
    text (Mirador shows no "details" toggle): they are the annotation's ``imcol:`` properties. Illustrations
    are counted from 1, as on the pages."""
    c = link.correspondence
    head = f"Match {c.rank}" if isinstance(c.rank, int) and not isinstance(c.rank, bool) else "Match"
    where = (
        f"{html.escape(manifest_label(other.manifest, other.manuscript))}, "
        f"{html.escape(other.canvas.label)} (illustration {other.region.index + 1})"
    )
    words = []
    if c.cycle_consistent is True:
        words.append("each other’s best match")
    if transposition_label(c):
        words.append(transposition_label(c))
    words.append(html.escape(str(c.status)))  # proposed, confirmed or rejected
    if c.verdict in CATEGORY_LABELS:
        words.append(f"judged: {CATEGORY_LABELS[c.verdict]}")
    links = []
    image_url = _region_image_url(other)
    if image_url:
        links.append(f'<a href="{html.escape(image_url)}">see the counterpart</a>')
    if urls.viewer is not None:
        viewer = urls.render("viewer", link=link.key, side="a" if mine is link.a else "b")
        links.append(f'<a href="{html.escape(viewer)}">compare in Mirador</a>')
    parts = [f"<p><b>{head}</b> → {where}</p>", f"<p>{' · '.join(words)}</p>"]
    if links:
        parts.append(f"<p>{' · '.join(links)}</p>")
    return "".join(parts)


# -- viewer layer --------------------------------------------------------------------------------


def _display_v3(link: Link, mine: End, other: End, urls: UrlScheme, created: str | None) -> dict[str, Any]:
    side, other_side = ("a", "b") if mine is link.a else ("b", "a")
    annotation: dict[str, Any] = {
        "id": urls.render("display", link=link.key, side=side),
        "type": "Annotation",
        "motivation": "commenting",
    }
    if created:
        annotation["created"] = created
    annotation["creator"] = software_agent(urls)
    annotation["body"] = [
        {
            "type": "TextualBody",
            "purpose": "commenting",
            "format": "text/html",
            "language": "en",
            "value": _summary_html(link, mine, other, urls),
        }
    ]
    tag = transposition_body(link.correspondence)
    if tag:  # "mirrored copy": a body of its own, which viewers show as a tag
        annotation["body"].append(tag)
    annotation["target"] = specific_resource(mine)
    annotation["imcol:correspondence"] = urls.render("link", link=link.key)
    annotation["imcol:counterpart"] = urls.render("display", link=link.key, side=other_side)
    annotation.update(score_properties(link.correspondence))
    return annotation


def _display_v2(link: Link, mine: End, other: End, urls: UrlScheme, created: str | None) -> dict[str, Any]:
    side, other_side = ("a", "b") if mine is link.a else ("b", "a")
    tag = transposition_body(link.correspondence, version=2)
    annotation: dict[str, Any] = {
        "@id": urls.render("display", link=link.key, side=side),
        "@type": "oa:Annotation",
        "motivation": "oa:commenting",
        "resource": [
            {"@type": "dctypes:Text", "format": "text/html", "chars": _summary_html(link, mine, other, urls)},
            *([tag] if tag else []),
        ],
        "on": {
            "@type": "oa:SpecificResource",
            "full": mine.canvas.id,
            "selector": {"@type": "oa:FragmentSelector", "value": xywh_fragment(mine.region)},
            "within": {"@id": mine.manifest.id, "@type": "sc:Manifest"},
        },
    }
    if created:
        annotation["created"] = created
    annotation["imcol:correspondence"] = urls.render("link", link=link.key)
    annotation["imcol:counterpart"] = urls.render("display", link=link.key, side=other_side)
    annotation.update(score_properties(link.correspondence))
    return annotation


def _page_document(
    manuscript: int,
    canvas_number: int,
    manifest: Manifest,
    items: list[dict[str, Any]],
    urls: UrlScheme,
    version: int | None = None,
) -> dict[str, Any]:
    """The page of one canvas, in the manifest's version; ``version=2`` asks for the AnnotationList
    served beside the pages (``urls.annotation_list``), whatever the manifest's version."""
    name = "annotation_list" if version == 2 else "page"
    page_id = urls.render(name, manuscript=manuscript, canvas_number=canvas_number)
    canvas = manifest.canvases[canvas_number - 1]
    label = f"Image collation: {manifest_label(manifest, manuscript)}, {canvas.label}"
    if (version or manifest.version) == 2:
        return {
            "@context": PRESENTATION_2,
            "@id": page_id,
            "@type": "sc:AnnotationList",
            "label": label,
            "resources": items,
        }
    return {
        "@context": [urls.render("context"), PRESENTATION_3],
        "id": page_id,
        "type": "AnnotationPage",
        "label": {"en": [label]},
        "items": items,
    }


def _certainty(score: float) -> str:
    """The detector's score in words (the number is ``imcol:detectionScore``)."""
    if score >= 0.8:
        return "the detector is confident"
    return "the detector is fairly confident" if score >= 0.5 else "the detector is unsure"


def _detected(end: End, urls: UrlScheme, created: str | None, version: int | None = None) -> dict[str, Any]:
    """The annotation of a region found by detection, on its canvas (Mirador lists and draws it)."""
    score = float(end.region.score or 0.0)
    page = urls.render("page", manuscript=end.manuscript, canvas_number=end.canvas.index + 1)
    text = f"<p><b>Illustration found by detection</b> (illustration {end.region.index + 1}, {_certainty(score)})</p>"
    if (version or end.manifest.version) == 2:
        annotation: dict[str, Any] = {
            "@id": f"{page}#detected-{end.region.index}",
            "@type": "oa:Annotation",
            "motivation": "oa:commenting",
            "resource": [{"@type": "dctypes:Text", "format": "text/html", "chars": text}],
            "on": {
                "@type": "oa:SpecificResource",
                "full": end.canvas.id,
                "selector": {"@type": "oa:FragmentSelector", "value": xywh_fragment(end.region)},
                "within": {"@id": end.manifest.id, "@type": "sc:Manifest"},
            },
        }
    else:
        annotation = {
            "id": f"{page}#detected-{end.region.index}",
            "type": "Annotation",
            "motivation": "commenting",
            "creator": software_agent(urls),
            "body": [
                {"type": "TextualBody", "purpose": "commenting", "format": "text/html", "language": "en", "value": text}
            ],
            "target": specific_resource(end),
        }
    if created:
        annotation["created"] = created
    annotation["imcol:detectionScore"] = round(score, 4)
    return annotation


def _display_items(
    manuscript: int,
    links: Sequence[Link],
    urls: UrlScheme,
    created: str | None,
    manuscripts: Sequence[tuple[Manifest, Sequence[Region]]] = (),
    version: int | None = None,
) -> dict[int, list[dict[str, Any]]]:
    """Display annotations of one manuscript, grouped by canvas number, in correspondence order,
    then those of its detected regions (``manuscripts`` given); in ``version`` (default: the manifest's)."""
    by_canvas: dict[int, list[dict[str, Any]]] = {}
    for link in links:
        for mine, other in ((link.a, link.b), (link.b, link.a)):
            if mine.manuscript != manuscript:
                continue
            build = _display_v2 if (version or mine.manifest.version) == 2 else _display_v3
            by_canvas.setdefault(mine.canvas.index + 1, []).append(build(link, mine, other, urls, created))
    if 0 <= manuscript < len(manuscripts):
        manifest, regions = manuscripts[manuscript]
        for region in regions:
            canvas = manifest.canvas(region.canvas_id) if region.score is not None else None
            if canvas is not None:
                end = End(manuscript, manifest, canvas, region)
                by_canvas.setdefault(canvas.index + 1, []).append(_detected(end, urls, created, version))
    return by_canvas


def build_annotation_pages(
    manuscript: int,
    manuscripts: Sequence[tuple[Manifest, Sequence[Region]]],
    correspondences: Sequence[Correspondence],
    *,
    urls: UrlScheme,
    created: str | None = None,
) -> dict[int, dict[str, Any]]:
    """Viewer-layer pages of one manuscript: ``{canvas_number: AnnotationPage or AnnotationList}``
    for every canvas that has at least one correspondence or detected region, in the manifest's
    Presentation version."""
    manifest = manuscript_manifest(manuscript, manuscripts)
    by_canvas = _display_items(manuscript, read_links(manuscripts, correspondences), urls, created, manuscripts)
    return {
        number: _page_document(manuscript, number, manifest, items, urls) for number, items in sorted(by_canvas.items())
    }


def build_annotation_page(
    manuscript: int,
    canvas_number: int,
    manuscripts: Sequence[tuple[Manifest, Sequence[Region]]],
    correspondences: Sequence[Correspondence],
    *,
    urls: UrlScheme,
    created: str | None = None,
    version: int | None = None,
) -> dict[str, Any]:
    """One viewer-layer page (empty when the canvas has no correspondence); ``InputError`` when
    the canvas number is not in the manifest. ``version=2``: the Presentation 2.1 AnnotationList of
    the canvas (at ``urls.annotation_list``) for a manifest of either version, for the viewers and
    annotation servers that read only ``otherContent`` lists (Mirador 2, SimpleAnnotationServer)."""
    manifest = manuscript_manifest(manuscript, manuscripts)
    if not 1 <= canvas_number <= len(manifest.canvases):
        raise InputError(f"canvas number {canvas_number} is not in manuscript {manuscript}", field="canvas_number")
    links = read_links(manuscripts, correspondences)
    by_canvas = _display_items(manuscript, links, urls, created, manuscripts, version)
    return _page_document(manuscript, canvas_number, manifest, by_canvas.get(canvas_number, []), urls, version)


# -- derived manifests ---------------------------------------------------------------------------


def _with_suffix(label: Any, suffix: str, version: int) -> Any:
    if version == 2:
        return (label_text(label) or "Manuscript") + suffix
    if isinstance(label, dict) and label and all(isinstance(v, list) for v in label.values()):
        return {
            lang: [f"{v}{suffix}" if isinstance(v, str) else v for v in values] or [suffix.strip()]
            for lang, values in label.items()
        }
    text = label_text(label)
    return {"none": [f"{text}{suffix}" if text else suffix.strip()]}


def build_derived_manifest(
    manuscript: int,
    manuscripts: Sequence[tuple[Manifest, Sequence[Region]]],
    correspondences: Sequence[Correspondence],
    *,
    urls: UrlScheme,
    label_suffix: str = " (image collation)",
) -> dict[str, Any]:
    """A copy of the input manifest with a new id and label, the same Presentation version and
    canvas ids, whose canvases with correspondences point to their annotation pages (3.0:
    ``annotations`` AnnotationPage references; 2.1: ``otherContent`` AnnotationList references).
    Its links keep only the http(s) ones (``collation.iiif.links``): the service publishes no
    ``javascript:`` link a viewer would show."""
    manifest = manuscript_manifest(manuscript, manuscripts)
    numbers = set(_display_items(manuscript, read_links(manuscripts, correspondences), urls, None, manuscripts))
    pages = {manifest.canvases[n - 1].id: urls.render("page", manuscript=manuscript, canvas_number=n) for n in numbers}
    doc = web_links_only(manifest.raw)  # a copy
    new_id = urls.render("manifest", manuscript=manuscript)
    if manifest.version == 2:
        doc.pop("id", None)
        doc["@id"] = new_id
        doc["label"] = _with_suffix(doc.get("label"), label_suffix, 2)
        sequences = doc.get("sequences")
        sequences = [sequences] if isinstance(sequences, dict) else sequences
        raw_canvases = sequences[0].get("canvases", []) if sequences and isinstance(sequences[0], dict) else []
        key, reference = "otherContent", lambda url: {"@id": url, "@type": "sc:AnnotationList"}
    else:
        doc.pop("@id", None)
        doc["id"] = new_id
        doc["label"] = _with_suffix(doc.get("label"), label_suffix, 3)
        raw_canvases = doc.get("items", [])
        key, reference = "annotations", lambda url: {"id": url, "type": "AnnotationPage"}
    for raw in raw_canvases if isinstance(raw_canvases, list) else []:
        if not isinstance(raw, dict):
            continue
        canvas_id = raw.get("id", raw.get("@id"))
        canvas_id = canvas_id.strip() if isinstance(canvas_id, str) else canvas_id
        if canvas_id in pages:
            existing = raw.get(key)
            existing = existing if isinstance(existing, list) else ([existing] if existing else [])
            raw[key] = [*existing, reference(pages[canvas_id])]
            if urls.canvas_links is not None:
                _add_see_also(raw, urls.render("canvas_links", canvas=canvas_id), manifest.version)
    return doc


def _add_see_also(raw: dict[str, Any], url: str, version: int) -> None:
    """Adds to a canvas's ``seeAlso`` the container filtered to the links that touch it (a machine-
    readable document: viewers do not load it, a client asking for one canvas's links does)."""
    profile, label = ANNOTATION_CONTEXT, "Image collation: the links that touch this canvas"
    if version == 2:
        entry: dict[str, Any] = {"@id": url, "format": "application/ld+json", "profile": profile, "label": label}
    else:
        entry = {"id": url, "type": "Dataset", "format": "application/ld+json", "profile": profile}
        entry["label"] = {"en": [label]}
    existing = raw.get("seeAlso")
    existing = existing if isinstance(existing, list) else ([existing] if existing else [])
    raw["seeAlso"] = [*existing, entry]
