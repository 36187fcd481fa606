"""IIIF in: manifests of Presentation 2.1 and 3.0, the illustration regions they give or that are detected on
their canvases, and the region images fetched through the Image API.

Nothing here touches the network on import or reads the environment: every request goes through a
``collation.net.http.Fetcher`` the caller creates. The map of the modules is docs/architecture.md.
"""
