"""The collation service: a Flask REST API over RQ jobs and the data store, whose contract is
``openapi.yaml`` at the repository root. Routes parse, call a plain function and answer.

The app factory (``collation.app``) mounts this layer's blueprint and the viewer's; the map of the
modules is docs/architecture.md.
"""
