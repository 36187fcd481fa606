"""Web Annotations of a finished collation, built on request from the stored results.

The documents come from ``collation.publish`` (viewer layer per canvas, canonical
AnnotationCollection, derived manifests); this module chooses which correspondences they show and
where they are served. They are built from the store on request and kept in the app's ``DocumentCache``
keyed by the results' modification times, so an assessment shows at once and ids use the URL the
client used (or ``COLLATION_PUBLIC_URL``). Every URL comes from ``urls.url_scheme``.

Correspondences shown: for every pair of manuscripts and both directions, each region's ``top``
best candidates by propagated score, each unordered pair of regions once (its best rank), plus
every correspondence with a verdict of a match category (exact, partial, semantic: ``imcol:status``
``confirmed``); those with ``none`` are kept with ``imcol:status`` ``rejected``. The verdict's
category is ``imcol:verdict``. With transpositions, each correspondence carries the transposition that
gave its S (``transposition``), and one whose match is mirrored or turned gets a body that says so
("mirrored copy", "turned copy": ``collation.publish``).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

from collation.core import defaults
from collation.core.correspondence import Correspondence, Side
from collation.core.errors import InputError
from collation.core.options import CollationOptions
from collation.core.vocabulary import MATCH_CATEGORIES
from collation.iiif.manifests import Manifest, parse_manifest
from collation.iiif.regions import Region
from collation.publish.canonical import build_link_collection
from collation.publish.container import ContainerView, container_document
from collation.publish.parts import IMCOL_CONTEXT, UrlScheme
from collation.publish.viewer_layer import build_annotation_page, build_derived_manifest
from collation.service.documents import DocumentCache
from collation.service.problems import Conflict
from collation.service.results import (
    PairView,
    assessment_categories,
    check_id,
    finished_record,
    pair_results,
    top_candidates,
)
from collation.service.urls import collation_url, container_url, url_scheme
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.records import CollationRecord

TOP = 3
"""Candidates per region and direction in the annotation layers."""


def context_document() -> dict[str, Any]:
    """The ``imcol:`` JSON-LD context (served at ``urls.context_url``)."""
    return IMCOL_CONTEXT


def _method(options: CollationOptions) -> str:
    """The method as the annotations name it; options at their defaults other than the main ones are
    left out (as in the record), so the names of plain collations stay as they were."""
    extras = "".join(
        f"+{name}" if name == "partial" else f"+{name}({value})"
        for name, value in (
            ("transpositions", options.transpositions if options.n_transpositions > 1 else None),
            ("partial", options.partial),
            ("kernel", options.kernel if options.kernel != defaults.KERNEL else None),
        )
        if value
    )
    orientation = f",{options.orientation}" if options.orientation != defaults.ORIENTATION else ""
    return (
        f"{options.backbone}+{options.similarity}(seed={options.seed}){extras}"
        f"+norm({options.normalization})+prop({options.propagation}{orientation})"
    )


def _fingerprint(store: DataStore, cid: str) -> tuple:
    """Versions of everything the documents depend on (the record, verdicts, results: one listing)."""
    return tuple(sorted(store.collation_versions(cid).items()))


def _manuscripts(store: DataStore, record: CollationRecord) -> list[tuple[Manifest, list[Region]]]:
    out = []
    for m, url in enumerate(record.request.manifests):
        doc, raw = store.load_manuscript(record.id, m), store.load_manifest(record.id, m)
        if raw is None or doc is None or m not in record.usable:
            out.append((Manifest(id=url, url=url, version=3, label="", canvases=(), raw={}), []))
            continue
        out.append((parse_manifest(raw, url=url), [Region.from_dict(r.to_dict()) for r in doc.regions]))
    return out


def correspondence_list(store: DataStore, record: CollationRecord, top: int = TOP) -> list[Correspondence]:
    """The correspondences shown in the annotation layers, best ranks first (see the module docstring)."""
    cid = record.id
    candidates: list[tuple[int, int, Correspondence]] = []
    for a, b in combinations(record.usable, 2):
        res = pair_results(store, record, a, b)
        verdicts = assessment_categories(store, cid, a, b)
        for forward in (True, False):
            p_s = res.P_S if forward else res.P_S.T
            for r, order in enumerate(top_candidates(p_s, top)):
                for rank, c in enumerate(order, start=1):
                    i, j = (r, c) if forward else (c, r)
                    candidates.append((rank, len(candidates), pair_correspondence(res, a, b, i, j, rank, verdicts)))
        rows, cols = res.doc0.positions(), res.doc1.positions()  # region index -> position
        for (ri, ci), verdict in verdicts.items():
            if verdict in MATCH_CATEGORIES and ri in rows and ci in cols:
                entry = pair_correspondence(res, a, b, rows[ri], cols[ci], None, verdicts)
                candidates.append((10**9, len(candidates), entry))
    seen: set[tuple[int, int, int, int]] = set()
    out = []
    for _rank, _order, entry in sorted(candidates, key=lambda t: (t[0], t[1])):
        if entry.key not in seen:
            seen.add(entry.key)
            out.append(entry)
    return out


def pair_correspondence(
    res: PairView, a: int, b: int, i: int, j: int, rank: int | None, verdicts: dict[tuple[int, int], str]
) -> Correspondence:
    """Row ``i`` (a position in ``a``) and column ``j`` (in ``b``) of a pair's results
    (``results.pair_results``) as a ``Correspondence``; ``verdicts`` are the categories by
    (region index in a, region index in b), as ``results.assessment_categories`` gives them."""
    ri, cj = res.regions0[i].index, res.regions1[j].index
    verdict = verdicts.get((ri, cj))
    status = "proposed" if verdict is None else "confirmed" if verdict in MATCH_CATEGORIES else "rejected"
    return Correspondence(
        source=Side(a, i, ri),
        target=Side(b, j, cj),
        S=float(res.S[i, j]),
        N_S=float(res.N_S[i, j]),
        P_S=float(res.P_S[i, j]),
        rank=rank,
        cycle_consistent=(i, j) in res.cycles,
        status=status,
        verdict=verdict,
        # of region j of b, as the correspondence reads (source a)
        transposition=None if res.transpositions is None else str(res.transpositions[i, j]),
        link_id=f"{a}-{b}-{ri}-{cj}",
        weak=bool(res.weak[i, j]),
    )


def _prepared(store: DataStore, cache: DocumentCache, cid: str, base: str) -> tuple[dict, list, list, UrlScheme]:
    """(record, manuscripts, correspondences, urls) of a finished collation, from ``cache`` when unchanged."""
    record = finished_record(store, check_id(cid))
    key = (store.description, cid, base, _fingerprint(store, cid))
    return cache.get_or_build(
        key, lambda: (record, _manuscripts(store, record), correspondence_list(store, record), url_scheme(cid, base))
    )


def collection(
    store: DataStore, cache: DocumentCache, cid: str, base: str, page: int | None, page_size: int
) -> dict[str, Any]:
    """``GET /collations/{id}/annotations``: the AnnotationCollection, or its page ``page`` (from 1)."""
    record, manuscripts, corrs, urls = _prepared(store, cache, cid, base)
    doc, pages = build_link_collection(
        manuscripts,
        corrs,
        urls=urls,
        page_size=page_size,
        method=_method(record.options),
        created=record.ended,
        label=f"Image collation {cid}: correspondences",
    )
    if page is None:
        return doc
    if not 1 <= page <= len(pages):
        raise CollationNotFound(f"collation {cid} has no annotation page {page} (1..{len(pages)})", field="page")
    return pages[page - 1]


def _usable(record: CollationRecord, m: int) -> None:
    n = record.manuscript_count
    if not 0 <= m < n:
        raise CollationNotFound(f"collation {record.id} has no manuscript {m} (0..{n - 1})", field="index")
    if m not in record.usable:
        raise Conflict(f"manuscript {m} could not be read, so it has no annotations", field="index")


def derived_manifest(store: DataStore, cache: DocumentCache, cid: str, m: int, base: str) -> dict[str, Any]:
    """``GET /collations/{id}/manifests/{m}``: the input manifest pointing to its annotation pages."""
    record, manuscripts, corrs, urls = _prepared(store, cache, cid, base)
    _usable(record, m)
    return build_derived_manifest(m, manuscripts, corrs, urls=urls)


def canvas_page(
    store: DataStore, cache: DocumentCache, cid: str, m: int, canvas_number: int, base: str, version: int | None = None
) -> dict[str, Any]:
    """``GET /collations/{id}/pages/{m}/{canvas_number}``: the viewer layer of one canvas (1-based);
    ``version=2``: ``GET .../lists/{m}/{canvas_number}``, the same as a Presentation 2.1 AnnotationList."""
    record, manuscripts, corrs, urls = _prepared(store, cache, cid, base)
    _usable(record, m)
    if not 1 <= canvas_number <= len(manuscripts[m][0].canvases):
        raise CollationNotFound(f"manuscript {m} has no canvas number {canvas_number}", field="canvas")
    return build_annotation_page(m, canvas_number, manuscripts, corrs, urls=urls, created=record.ended, version=version)


def container(
    store: DataStore, cache: DocumentCache, cid: str, base: str, view: ContainerView, page_size: int
) -> dict[str, Any]:
    """``GET /collations/{id}/container/``: the canonical layer as a Web Annotation Protocol container
    (``collation.publish.container``), or one of its pages, filtered by ``view.target``."""
    record, manuscripts, corrs, urls = _prepared(store, cache, cid, base)
    _collection, pages = build_link_collection(
        manuscripts, corrs, urls=urls, page_size=10**9, method=_method(record.options), created=record.ended
    )
    items = [item for page in pages for item in page["items"]]
    try:
        return container_document(
            items,
            container=container_url(base, cid),
            view=view,
            label=f"Image collation {cid}: correspondences",
            page_size=page_size,
            modified=record.ended,
        )
    except InputError as error:  # a page past the last
        raise CollationNotFound(str(error), field="page") from None


def link_annotation(store: DataStore, cache: DocumentCache, cid: str, base: str, link: str) -> dict[str, Any]:
    """``GET /collations/{id}/links/{link}``: one canonical ``linking`` annotation at its own IRI (the
    IRIs the container gives with ``PreferContainedIRIs``), with its ``@context``; a 404 otherwise."""
    wanted = f"{collation_url(base, cid)}/links/{link}"
    for item in container(store, cache, cid, base, ContainerView(), page_size=10**9)["first"]["items"]:
        if item["id"] == wanted:
            return item
    raise CollationNotFound(f"collation {cid} has no link {link}", field="link")
