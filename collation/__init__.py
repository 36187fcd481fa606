"""Image collation: match illustrations across manuscripts (Kaoua et al., ICDAR 2021).

Each folder is a layer, imports go down them, and the modules follow the data's path: docs/architecture.md
draws them.
"""

__version__ = "0.1.0"
