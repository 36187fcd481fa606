"""The collation service: a Flask REST API over RQ jobs and a filesystem data store.

``create_app(settings)`` builds the API (``collation.app``); ``collation.cli.serve`` runs it
(``collate serve``) and the workers (``collate worker``). The contract is ``openapi.yaml`` at the
repository root.

Modules (an arrow is an import; there are no circles, ``tests/service/test_api.py`` checks it)::

    cli ──▶ app, local, state, jobs_bridge
    app ──▶ routes, viewer.routes, problems, state, urls
    routes ──▶ collations, layers, health, results, schemas, problems, state, urls
    collations ──▶ jobs_bridge, results, urls          (status, correspondences, assessments)
    layers ──▶ results, urls, cache, problems          (Web Annotation documents)
    viewer.routes ──▶ viewer.data, viewer.matrix, results, schemas, state, urls
    viewer.data ──▶ results, urls
    urls ──▶ state                                     (every public URL)
    state ──▶ sweeper, cache                           (the app's Runtime, document cache, sweeper)
    sweeper ──▶ jobs_bridge ──▶ problems, collation.jobs   (the one doorway into the jobs layer)
    results ──▶ problems                               (lookup-or-problem helpers of every read)
"""
