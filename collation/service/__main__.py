"""``python -m collation.service serve|worker`` (the same as ``collate serve|worker``)."""

import sys

from .cli import main

sys.exit(main())
