"""IIIF in and out: manifests, regions, Image API fetching, Web Annotations for Mirador.

Public names (signatures in each module's docstring):

- reading: ``load_manifest``, ``parse_manifest``, ``detect_version``, ``label_text``,
  ``Manifest``, ``Canvas``, ``ImageSource``, ``AnnotationSource``
- regions: ``find_regions``, ``Region``, ``RegionProblem``, ``RegionSelector``, ``svg_bounding_box``
- fetching: ``Fetcher``, ``check_url``, ``fetch_region``, ``read_info``, ``ServiceInfo``,
  ``target_size``, ``LONG_SIDE``
- command line: ``looks_like_manifest``, ``list_regions``, ``load_manuscript_regions``,
  ``ManuscriptRegions``, ``format_regions_report``
- writing: ``UrlScheme``, ``build_annotation_pages``, ``build_annotation_page``,
  ``build_derived_manifest``, ``build_link_collection``, ``build_assessment``, ``paginate``,
  ``IMCOL_CONTEXT``
- errors: ``ManifestError``, ``FetchError``, ``UnsafeURLError``, ``LimitError``

Nothing here touches the network on import; every request goes through a ``Fetcher`` the caller
creates (and configures: cache directory, allowed hosts, politeness).
"""

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
from collation.iiif.errors import FetchError, LimitError, ManifestError, UnsafeURLError
from collation.iiif.fetch import LONG_SIDE, ServiceInfo, fetch_region, read_info, target_size
from collation.iiif.http import Fetcher, check_url, fetcher_for
from collation.iiif.manifests import (
    AnnotationSource,
    Canvas,
    ImageSource,
    Manifest,
    detect_version,
    label_text,
    load_manifest,
    parse_manifest,
)
from collation.iiif.regions import Region, RegionProblem, RegionSelector, find_regions, svg_bounding_box
from collation.iiif.sources import (
    ManuscriptRegions,
    format_regions_report,
    list_regions,
    load_manuscript_regions,
    looks_like_manifest,
)

__all__ = [
    "IMCOL_CONTEXT",
    "LONG_SIDE",
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
    "ServiceInfo",
    "UnsafeURLError",
    "UrlScheme",
    "build_annotation_page",
    "build_annotation_pages",
    "build_assessment",
    "build_derived_manifest",
    "build_link_collection",
    "check_url",
    "detect_version",
    "fetch_region",
    "fetcher_for",
    "find_regions",
    "format_regions_report",
    "label_text",
    "list_regions",
    "load_manifest",
    "load_manuscript_regions",
    "looks_like_manifest",
    "paginate",
    "parse_manifest",
    "read_info",
    "svg_bounding_box",
    "target_size",
]
