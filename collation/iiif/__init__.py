"""IIIF in and out: manifests, regions, Image API fetching, Web Annotations for Mirador.

Public names (signatures in each module's docstring), by module:

- reading: ``load_manifest``, ``parse_manifest``, ``detect_version`` (``manifests``: Presentation
  2.1 and 3.0), ``Manifest``, ``Canvas``, ``ImageSource``, ``AnnotationSource``, ``label_text``
  (``model``: what we keep, lenient JSON-LD helpers), ``canvas_to_image``, ``image_to_canvas``,
  ``parse_xywh`` (``geometry``); what a canvas paints is read in ``painting``
- regions: ``find_regions``, ``Region``, ``RegionProblem``, ``RegionSelector`` (``regions``),
  ``svg_bounding_box`` (``selectors``: targets and selectors to rectangles)
- fetching: ``Fetcher``, ``fetcher_for`` (``http``: the client, configured by
  ``collation.settings.FetchSettings``), ``check_url`` (``addresses``: the address policy),
  ``Response`` (``cache``), ``parse_json_bytes``, ``decode_image`` (``decode``), ``read_info``,
  ``parse_info``, ``ServiceInfo`` (``info``: Image API info.json), ``fetch_region``,
  ``target_size`` (``fetch``: region pixels)
- manifests as inputs: ``looks_like_manifest``, ``list_regions``, ``load_manuscript_regions`` (the
  one manifest-to-regions path), ``select_regions``, ``ManuscriptRegions``, ``REGION_SOURCES``,
  ``format_regions_report`` (``sources``); ``detect_regions`` (``detect``: regions found by an
  illustration detector on manifests without annotations); the command line's options in ``cli``
- writing: ``UrlScheme``, ``build_annotation_pages``, ``build_annotation_page``,
  ``build_derived_manifest``, ``build_link_collection``, ``build_assessment``, ``paginate``,
  ``IMCOL_CONTEXT`` (``annotations``: ``parts``, ``viewer`` layer, ``canonical`` layer)
- errors: ``ManifestError``, ``FetchError``, ``UnsafeURLError``, ``LimitError`` (``errors``)

Nothing here touches the network on import or reads the environment; every request goes through a
``Fetcher`` the caller creates, usually ``fetcher_for(settings, ...)`` with the process's
``collation.settings.Settings``.
"""

from collation.iiif.addresses import check_url
from collation.iiif.annotations import (
    IMCOL_CONTEXT,
    UrlScheme,
    build_annotation_page,
    build_annotation_pages,
    build_assessment,
    build_derived_manifest,
    build_link_collection,
    paginate,
)
from collation.iiif.cache import Response
from collation.iiif.decode import decode_image, parse_json_bytes
from collation.iiif.detect import detect_regions
from collation.iiif.errors import FetchError, LimitError, ManifestError, UnsafeURLError
from collation.iiif.fetch import fetch_region, target_size
from collation.iiif.geometry import canvas_to_image, image_to_canvas, parse_xywh
from collation.iiif.http import Fetcher, fetcher_for
from collation.iiif.info import ServiceInfo, parse_info, read_info
from collation.iiif.manifests import detect_version, load_manifest, parse_manifest
from collation.iiif.model import AnnotationSource, Canvas, ImageSource, Manifest, label_text
from collation.iiif.regions import Region, RegionProblem, RegionSelector, find_regions
from collation.iiif.selectors import svg_bounding_box
from collation.iiif.sources import (
    REGION_SOURCES,
    ManuscriptRegions,
    format_regions_report,
    list_regions,
    load_manuscript_regions,
    looks_like_manifest,
    select_regions,
)

__all__ = [
    "IMCOL_CONTEXT",
    "REGION_SOURCES",
    "AnnotationSource",
    "Canvas",
    "FetchError",
    "Fetcher",
    "ImageSource",
    "LimitError",
    "Manifest",
    "ManifestError",
    "ManuscriptRegions",
    "Region",
    "RegionProblem",
    "RegionSelector",
    "Response",
    "ServiceInfo",
    "UnsafeURLError",
    "UrlScheme",
    "build_annotation_page",
    "build_annotation_pages",
    "build_assessment",
    "build_derived_manifest",
    "build_link_collection",
    "canvas_to_image",
    "check_url",
    "decode_image",
    "detect_regions",
    "detect_version",
    "fetch_region",
    "fetcher_for",
    "find_regions",
    "format_regions_report",
    "image_to_canvas",
    "label_text",
    "list_regions",
    "load_manifest",
    "load_manuscript_regions",
    "looks_like_manifest",
    "paginate",
    "parse_info",
    "parse_json_bytes",
    "parse_manifest",
    "parse_xywh",
    "read_info",
    "select_regions",
    "svg_bounding_box",
    "target_size",
]
