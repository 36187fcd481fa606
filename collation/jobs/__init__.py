"""Background work of the service: the steps of a collation as RQ jobs over the data store, planned by
pure functions and run by a non-forking worker. The map of the modules is docs/architecture.md.
"""
