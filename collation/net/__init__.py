"""The hardened HTTP client every fetch goes through: the address policy, pinned connections with a
wall-clock deadline, politeness per host, an on-disk cache of bodies, and decoding with limits.
The map of the modules is docs/architecture.md.
"""
