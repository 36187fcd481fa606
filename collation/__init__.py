"""Image collation: match illustrations across manuscripts (Kaoua et al., ICDAR 2021).

The modules follow the data's path: IIIF in (``collation.iiif``) → illustration regions
(``collation.illustrations``) → deep features (``collation.features``) → pair scores
(``collation.similarity`` with ``collation.ransac``) → correspondences
(``collation.correspondences``) → annotations out (``collation.iiif``). ``collation.pipeline`` runs
the whole path in-process; ``collation.service`` and ``collation.jobs`` run it behind an API on RQ.
"""

__version__ = "0.1.0"
