"""Image collation: match illustrations across manuscripts (Kaoua et al., ICDAR 2021).

The modules follow the data's path: IIIF in (``collation.iiif``) → illustration regions
(``collation.engine.illustrations``) → deep features (``collation.engine.features``) → pair scores
(``collation.engine.similarity`` with ``collation.engine.ransac``) → correspondences
(``collation.engine.correspondences``) → annotations out (``collation.iiif``). ``collation.engine.pipeline`` runs
the whole path in-process; ``collation.service`` and ``collation.jobs`` run it behind an API on RQ.
"""

__version__ = "0.1.0"
