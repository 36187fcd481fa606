"""The service tests' fixtures are tests/conftest.py's, shared with the hostile and viewer tests: a private
Redis, the loopback site with synthetic manuscripts (and a mirrored copy of one), the app with its test
client, in-process and subprocess workers, the OpenAPI client, the browser; and the Physiologus
fixtures (``physiologus``, ``iipsrv``). Nothing here reaches a server those fixtures did not start."""
