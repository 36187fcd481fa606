"""The ``collate`` command (``main``) and its sub-commands: ``match`` and ``regions`` (``manifest_options``),
``detect`` (``detect``), ``serve`` and ``worker`` (``serve``), with the private servers they start.
"""
