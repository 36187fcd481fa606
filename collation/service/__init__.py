"""The collation service: a Flask REST API over RQ jobs and a filesystem data store.

``create_app(settings)`` builds the API (``collation.app``); ``collation.cli.serve`` runs it
(``collate serve``) and the workers (``collate worker``). The contract is ``openapi.yaml`` at the
repository root.

Modules (an arrow is an import; ``tests/test_architecture.py`` checks that there are no circles)::

    api ──▶ collations, annotations, concordance_rows, health, inspection, listing, results, schemas,
            problems, auth, state, urls                (routes: parse, call a plain function, answer)
    collations ──▶ results, urls, collation.jobs       (status, correspondences, assessments, submit)
    annotations ──▶ results, urls, documents, problems (Web Annotation documents)
    urls ──▶ state                                     (every public URL)
    state ──▶ sweeper, documents, inspection           (the app's Runtime, document cache, sweeper)
    sweeper ──▶ collation.jobs                         (recovery: the scheduler's sweep)
    results ──▶ problems                               (lookup-or-problem helpers of every read)

The app factory (``collation.app``) mounts the API's blueprint and the viewer's; the viewer
(``collation.viewer``) is the layer above this one.

"""
