"""The base of every layer: settings, errors, defaults, atomic writes, the options of a collation.

Nothing here imports torch, Flask, Redis or the network: the command line, the service and the engine
all start from these.
"""
