"""The README's configuration table: one row per field of the settings dataclasses, its variable, its
default and its help text (``python -m collation.core.settings`` prints it; ``settings.settings_table``).

Apart from ``collation.core.settings`` so that the one settings surface stays under the line limit;
it takes the classes and the value formatter as arguments and imports nothing of the package.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any


def default_text(f: dataclasses.Field, format_value: Callable[[Any], str]) -> str:
    """A field's default as the table shows it: ``unset``, nothing (a nested group), or in backquotes."""
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return ""
    if f.default is None or f.default == ():
        return "unset"
    return f"`{format_value(f.default)}`"


def markdown_table(sections: Sequence[tuple[str, type]], format_value: Callable[[Any], str], skip: str = "iiif") -> str:
    """The Markdown table of every field of each ``(variable prefix, dataclass)``, but ``skip``."""
    lines = ["| Variable | Default | Meaning |", "|---|---|---|"]
    for prefix, cls in sections:
        for f in dataclasses.fields(cls):
            if f.name != skip:
                lines.append(f"| `{prefix}{f.name.upper()}` | {default_text(f, format_value)} | {f.metadata['help']} |")
    return "\n".join(lines) + "\n"
