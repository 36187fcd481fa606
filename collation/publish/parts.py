"""What both annotation layers share: the ``imcol:`` vocabulary, where documents live (``UrlScheme``),
the correspondences read and checked once (``Link`` between two ``End``s), and the annotation
parts written alike in every layer (scores, region targets, the software agent).

``read_links(manuscripts, correspondences)`` takes the inputs described in ``collation.publish``
(``collation.core.correspondence.Correspondence`` objects) and raises ``InputError`` naming the
faulty entry.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from collation import __version__
from collation.core.correspondence import STATUSES, Correspondence, Side
from collation.core.errors import InputError
from collation.core.options import TURNS
from collation.iiif.model import Canvas, Manifest
from collation.iiif.regions import Region

PROJECT_URL = "https://github.com/image-collation/image-collation"
"""The base of the ``imcol:`` namespace IRIs: a name for the terms, which the context served at
``UrlScheme.context`` defines (the annotations' creator is the service itself, ``software_agent``)."""

PRESENTATION_3 = "http://iiif.io/api/presentation/3/context.json"
PRESENTATION_2 = "http://iiif.io/api/presentation/2/context.json"
ANNOTATION_CONTEXT = "http://www.w3.org/ns/anno.jsonld"
MEDIA_FRAGMENTS = "http://www.w3.org/TR/media-frags/"

IMCOL_NAMESPACE = f"{PROJECT_URL}/ns/imcol#"
"""IRI prefix of the ``imcol:`` terms."""

IMCOL_CONTEXT: dict[str, Any] = {
    "@context": {
        "imcol": IMCOL_NAMESPACE,
        "xsd": "http://www.w3.org/2001/XMLSchema#",
        "imcol:rawScore": {"@type": "xsd:double"},
        "imcol:normalizedScore": {"@type": "xsd:double"},
        "imcol:propagatedScore": {"@type": "xsd:double"},
        "imcol:rank": {"@type": "xsd:integer"},
        "imcol:mutualBest": {"@type": "xsd:boolean"},
        "imcol:status": {"@type": "xsd:string"},
        "imcol:verdict": {"@type": "xsd:string"},
        "imcol:method": {"@type": "xsd:string"},
        "imcol:correspondence": {"@type": "@id"},
        "imcol:counterpart": {"@type": "@id"},
        "imcol:detectionScore": {"@type": "xsd:double"},
    }
}
"""The JSON-LD context of the extension terms; serve it at ``UrlScheme.context`` and list that URL
before the IIIF context. Documented in docs/annotations.md."""

VERDICTS = ("exact", "partial", "semantic", "none")
"""Expert verdicts (body value of ``assessing`` annotations, ``imcol:verdict`` of links): exact copy,
partial copy, same subject (different composition), no match."""
VERDICT_LABELS = {
    "exact": "exact copy",
    "partial": "partial copy",
    "semantic": "same subject (different composition)",
    "none": "no match",
}

TRANSPOSITION_LABELS = {
    "identity": None,
    "mirror": "mirrored copy",
    "rot90": "turned copy",
    "rot180": "turned copy",
    "rot270": "turned copy",
    "flip": "vertically mirrored copy",
    **{name: "turned copy" for name in TURNS},
}
"""What a correspondence's ``transposition`` (``collation.core.options.TRANSPOSITION_NAMES``: the one that
made the match) is called in its annotations' tagging body; None (as drawn) adds no body. Each name
reads the same either way round (a mirror's inverse is a mirror, a turn's a turn), so both ends of
a link carry the same words."""

Template = str | Callable[..., str]


@dataclass(frozen=True)
class UrlScheme:
    """Where the documents live. Each field is a format string over ``{base}``, ``{root}`` (scheme
    and host of base) and the named fields, or a callable taking those as keyword arguments."""

    base: str
    manifest: Template = "{base}/manifests/{manuscript}"
    page: Template = "{base}/pages/{manuscript}/{canvas_number}"
    display: Template = "{base}/display/{link}-{side}"
    link: Template = "{base}/links/{link}"
    collection: Template = "{base}/annotations"
    collection_page: Template = "{base}/annotations?page={page}"
    context: Template = "{root}/ns/imcol/1/context.json"
    software: Template = "{root}/"  # the service that computed the correspondences: their creator
    viewer: Template | None = None  # e.g. "{base}/view/{link}": a Mirador compare view

    def render(self, name: str, **fields: Any) -> str:
        """The URL ``name`` (a field of this class) for the given fields."""
        template = getattr(self, name)
        if template is None:
            raise ValueError(f"UrlScheme has no {name} template")
        parts = urlsplit(self.base)
        values = {"base": self.base.rstrip("/"), "root": f"{parts.scheme}://{parts.netloc}", **fields}
        if callable(template):
            return template(**values)
        return template.format(**values)


@dataclass(frozen=True)
class End:
    """One side of a correspondence, resolved: a region of a canvas of a manuscript."""

    manuscript: int
    manifest: Manifest
    canvas: Canvas
    region: Region


@dataclass(frozen=True)
class Link:
    """A correspondence between two regions, resolved, with its scores and status."""

    key: str  # link id as used in URLs
    a: End  # source side
    b: End  # target side
    correspondence: Correspondence


# -- inputs --------------------------------------------------------------------------------------


def read_end(side: Any, manuscripts: Sequence[tuple[Manifest, Sequence[Region]]], name: str) -> End:
    """The ``End`` a ``Side`` names: its position checked against the manuscript's regions, and its
    region index, when given, against the region at that position."""
    if not isinstance(side, Side):
        raise InputError(f"{name}: expected a Side(manuscript, position), not {side!r}", field=name)
    m, i = side.manuscript, side.position
    if not isinstance(m, int) or isinstance(m, bool) or not 0 <= m < len(manuscripts):
        raise InputError(f"{name}.manuscript: {m!r} is not a manuscript index", field=f"{name}.manuscript")
    manifest, regions = manuscripts[m]
    if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(regions):
        raise InputError(f"{name}.position: {i!r} is not a region position in manuscript {m}", field=f"{name}.position")
    region = regions[i]
    if side.region is not None and side.region != region.index:
        raise InputError(
            f"{name}.region: {side.region!r} is not the index of the region at position {i} of manuscript {m} "
            f"({region.index})",
            field=f"{name}.region",
        )
    canvas = manifest.canvas(region.canvas_id)
    if canvas is None:
        raise InputError(f"{name}: region {i} is on {region.canvas_id}, not a canvas of manuscript {m}", field=name)
    return End(m, manifest, canvas, region)


def read_links(
    manuscripts: Sequence[tuple[Manifest, Sequence[Region]]], correspondences: Sequence[Correspondence]
) -> list[Link]:
    links = []
    for k, c in enumerate(correspondences):
        name = f"correspondences[{k}]"
        if not isinstance(c, Correspondence):
            raise InputError(f"{name}: expected a Correspondence, not {type(c).__name__}", field=name)
        if c.status not in STATUSES:
            raise InputError(f"{name}.status: {c.status!r} is not one of {STATUSES}", field=f"{name}.status")
        if c.transposition is not None and c.transposition not in TRANSPOSITION_LABELS:
            raise InputError(
                f"{name}.transposition: {c.transposition!r} is not one of {tuple(TRANSPOSITION_LABELS)}",
                field=f"{name}.transposition",
            )
        key = c.link_id if c.link_id is not None else str(k)
        links.append(
            Link(
                key,
                read_end(c.source, manuscripts, f"{name}.source"),
                read_end(c.target, manuscripts, f"{name}.target"),
                c,
            )
        )
    return links


def finite_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def score_properties(c: Correspondence) -> dict[str, Any]:
    """The ``imcol:`` properties of a correspondence (non-finite numbers are left out)."""
    out: dict[str, Any] = {}
    for value, term in ((c.S, "rawScore"), (c.N_S, "normalizedScore"), (c.P_S, "propagatedScore")):
        number = finite_number(value)
        if number is not None:
            out[f"imcol:{term}"] = round(number, 6)
    if isinstance(c.rank, int) and not isinstance(c.rank, bool):
        out["imcol:rank"] = c.rank
    if isinstance(c.cycle_consistent, bool):
        out["imcol:mutualBest"] = c.cycle_consistent
    out["imcol:status"] = c.status
    if c.verdict in VERDICTS:
        out["imcol:verdict"] = c.verdict
    return out


def transposition_label(c: Correspondence) -> str | None:
    """The words for a correspondence whose match is transposed ("mirrored copy", "turned copy",
    "vertically mirrored copy": ``TRANSPOSITION_LABELS``); None for one as drawn or without a transposition."""
    return TRANSPOSITION_LABELS.get(c.transposition) if c.transposition is not None else None


def transposition_body(c: Correspondence, version: int = 3) -> dict[str, Any] | None:
    """The tagging body naming a transposed copy (a TextualBody, or an ``oa:Tag`` in Presentation 2.1),
    or None when the match is as drawn."""
    label = transposition_label(c)
    if label is None:
        return None
    if version == 2:
        return {"@type": "oa:Tag", "chars": label}
    return {"type": "TextualBody", "purpose": "tagging", "value": label}


def xywh_fragment(region: Region) -> str:
    x, y, w, h = (int(v) for v in region.xywh)
    return f"xywh={x},{y},{w},{h}"


def software_agent(urls: UrlScheme, method: str | None = None) -> dict[str, Any]:
    """The creator of the service's annotations: the service itself, by its own URL (``urls.software``,
    the home page of the deployment that computed them), and its version and method by name."""
    name = f"image-collation {__version__}" + (f" ({method})" if method else "")
    return {"id": urls.render("software"), "type": "Software", "name": name}


def manifest_label(manifest: Manifest, number: int) -> str:
    return manifest.label or f"manuscript {number + 1}"


def specific_resource(end: End) -> dict[str, Any]:
    return {
        "type": "SpecificResource",
        "source": {
            "id": end.canvas.id,
            "type": "Canvas",
            "partOf": [{"id": end.manifest.id, "type": "Manifest"}],
        },
        "selector": {"type": "FragmentSelector", "conformsTo": MEDIA_FRAGMENTS, "value": xywh_fragment(end.region)},
    }


def manuscript_manifest(manuscript: int, manuscripts: Sequence[tuple[Manifest, Sequence[Region]]]) -> Manifest:
    if not 0 <= manuscript < len(manuscripts):
        raise InputError(f"manuscript {manuscript} does not exist", field="manuscript")
    return manuscripts[manuscript][0]
