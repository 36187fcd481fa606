"""The base of every layer: settings, options, the service's vocabulary, errors, defaults, formats.

Nothing here imports torch, Flask, Redis or the network: the command line, the service and the engine all
start from these. The map of the modules is docs/architecture.md.
"""
