"""The page itself: Jinja2 templates shipped with kplan, rendered to one self-contained file.

Styles and the small sorting/paging script are inlined from the templates folder, so a page
needs nothing at view time: no network, no server, and it stays readable with scripting off.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from kplan.errors import InputError

TEMPLATES = Path(__file__).parent / "templates"


@lru_cache(maxsize=1)
def environment():
    import jinja2
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, trim_blocks=True,
                             lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters["pct"] = percent
    env.filters["wordbreaks"] = word_breaks
    from kplan.report.html.placement import heat_steps
    env.globals["heat_steps"] = heat_steps()
    return env


def percent(ratio: float | None, digits: int = 0) -> str:
    """A ratio as a percentage for reading ("45%"), or an em dash where there is none."""
    if ratio is None:
        return "—"
    return f"{ratio * 100:.{digits}f}%"


def word_breaks(name: str):
    """A CamelCase plugin name that may wrap between its words (NodeResources<wbr>Fit)."""
    from markupsafe import Markup, escape
    return Markup(re.sub(r"(?<=[a-z])(?=[A-Z])", "<wbr>", str(escape(name))))


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def write_page(path: str, text: str) -> None:
    """Writes the page; an unwritable path is an input error naming it."""
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    except OSError as err:
        raise InputError(f"--html: cannot write: {err.strerror}", path) from None
