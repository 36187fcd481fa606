"""The ``collate`` command: one program for the command line, the service and its maintenance.

Its place among the layers, and each module's part, are drawn in docs/architecture.md.
"""
