"""Background work of the service: RQ jobs over the data store (``collation.store``).

Layers, each importing only those before it:

- ``planning``: which steps a collation needs next, pure functions over what the store holds;
- ``scheduling``: the ``Scheduler`` that enqueues those steps idempotently (by dotted path), and the
  failure callback;
- ``manuscripts``, ``results``, ``steps``: what the steps do, plain functions of a runtime;
- ``tasks``: the RQ entry points, thin wrappers that pass the current runtime;
- ``worker``: a non-forking worker that makes its runtime current around every job.
"""
