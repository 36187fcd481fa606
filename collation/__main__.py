"""``python -m collation ...``: the same as the ``collate`` command (``collate serve``, ``collate worker``...)."""

import sys

from collation.cli.main import main

sys.exit(main())
