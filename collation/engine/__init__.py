"""The method, on tensors and arrays: backbones, features, similarity (S_trans), RANSAC, candidate
pairs, correspondences, the concordance, illustration detection, and ``pipeline`` (a whole collation
in one process).

Importable with torch, timm, NumPy and Pillow alone (a GPU machine has nothing else).
"""
