"""The method, on tensors and arrays: from illustrations to features, scores, correspondences and the
concordance, and ``pipeline``, a whole collation in one process.

Importable with torch, timm, NumPy and Pillow alone (a GPU machine has nothing else). The map of the
modules is docs/architecture.md.
"""
