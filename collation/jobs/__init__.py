"""Background work of the service: RQ jobs over a filesystem data store.

``tasks`` holds the job functions (plain functions of a collation id and small integers),
``scheduling`` decides which jobs a collation needs next and enqueues them idempotently,
``worker`` runs them without forking, and ``store`` is the system of record they read and write.
"""
