"""Correspondences out as W3C Web Annotations: a viewer layer for Mirador and a canonical layer.

Two layers from the same correspondences (see ``docs/annotations.md``):

- **viewer layer**: per canvas, an AnnotationPage (Presentation 3) or AnnotationList (2.1) of
  ``commenting`` annotations on the canvas's own region, one per correspondence and side, with an
  HTML body naming the counterpart, the scores and links; every Mirador version lists and draws it;
- **canonical layer**: an AnnotationCollection of ``linking`` annotations, target = region A,
  body = region B (pairs ordered canonically and stored once), scores as ``imcol:`` extension
  properties; expert verdicts are separate ``assessing`` annotations on a link;
- **derived manifests**: a copy of each input manifest (same Presentation version, canvas ids
  unchanged, new id) whose canvases point to their annotation pages.

Everything here is pure: plain data in, JSON-ready dicts out. Inputs::

    manuscripts: Sequence[tuple[Manifest, Sequence[Region]]]   # one entry per manuscript
    correspondences: Sequence[Correspondence]                  # collation.core.correspondence

    Correspondence(
        source=Side(manuscript=a, position=i, region=ri),  # region: optional, checked when given
        target=Side(manuscript=b, position=j, region=rj),
        S=0.87, N_S=1.91, P_S=2.34,     # NaN or inf (the default: unknown) are left out
        rank=1,                          # optional
        cycle_consistent=True,           # imcol:mutualBest
        status="proposed",               # proposed | confirmed | rejected
        verdict="partial",               # optional expert category: exact | partial | semantic | none
        transposition="mirror",          # optional: adds a tagging body "mirrored copy" / "turned copy"
                                         # (TRANSPOSITION_LABELS); None or "identity": as drawn
        link_id="0-1-3-5",               # optional link id (default: position in the list)
    )

``position`` is a position in that manuscript's ``regions`` sequence; ``region``, when given, must be
the ``Region.index`` of the region there (annotations name the region by ``Region.index``). A bad
entry raises ``InputError`` naming it (``correspondences[k].target.position``, ``...status``). URLs
come from a ``UrlScheme`` (format strings or callables), so the service chooses where it serves each
document.

API::

    urls = UrlScheme(base="https://host/api/v1/collations/7f3c")
    pages = build_annotation_pages(m, manuscripts, correspondences, urls=urls)  # {canvas_number: page}
    page = build_annotation_page(m, canvas_number, manuscripts, correspondences, urls=urls)
    manifest = build_derived_manifest(m, manuscripts, correspondences, urls=urls)
    collection, link_pages = build_link_collection(manuscripts, correspondences, urls=urls, page_size=100)
    assessment = build_assessment(link_id, "exact", assessor={"id": ..., "type": "Person"}, id=...)
    IMCOL_CONTEXT                                   # the JSON-LD document to serve at urls.context

``canvas_number`` is 1-based: the canvas's position in its manifest plus one.

The map of the modules is docs/architecture.md.
"""
