"""The system of record: the data store (a folder or an S3-compatible object store), the typed documents
it holds (records, prepared manuscripts, pair results, verdicts), Redis keys and the store's formats.
The map of the modules is docs/architecture.md.
"""
