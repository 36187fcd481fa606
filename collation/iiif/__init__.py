"""IIIF in and out: manifests, regions, Image API fetching, Web Annotations for Mirador.

Public names (signatures in each module's docstring), by module:

- reading: ``load_manifest``, ``parse_manifest``, ``detect_version`` (``manifests``: Presentation
  2.1 and 3.0), ``Manifest``, ``Canvas``, ``ImageSource``, ``AnnotationSource``, ``label_text``
  (``model``: what we keep, lenient JSON-LD helpers), ``canvas_to_image``, ``image_to_canvas``,
  ``parse_xywh`` (``geometry``); what a canvas paints is read in ``painting``
- regions: ``find_regions``, ``Region``, ``RegionProblem``, ``RegionSelector`` (``regions``),
  ``svg_bounding_box`` (``selectors``: targets and selectors to rectangles)
- fetching: ``Fetcher``, ``fetcher_for`` (``http``: the client, configured by
  ``collation.core.settings.FetchSettings``), ``check_url`` (``addresses``: the address policy),
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
``collation.core.settings.Settings``.
"""
