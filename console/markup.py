"""Safe HTML building for the console's pages.

Keys, values, headers, topic names, group ids and client ids are whatever a client
sent: attacker data as far as a browser is concerned. Every page is built from
``Html`` fragments, and anything that is not already ``Html`` is escaped on the way
in, so forgetting to escape means double-escaping (visible, harmless), never markup
injection.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from html import escape
from typing import Any


class Html(str):
    """A string that is already markup (escaped or written by us)."""

    __slots__ = ()


def esc(value: object) -> Html:
    """``value`` as text inside markup: escaped unless it already is ``Html``."""
    if isinstance(value, Html):
        return value
    return Html(escape("" if value is None else str(value), quote=True))


def html(template: str, *args: object, **kwargs: object) -> Html:
    """``template.format(...)`` with every argument escaped (``Html`` passes as is).

    The template itself is ours: it must never contain client data.
    """
    return Html(template.format(*(esc(a) for a in args), **{k: esc(v) for k, v in kwargs.items()}))


def join(parts: Iterable[object], sep: str = "") -> Html:
    return Html(sep.join(esc(p) for p in parts))


def json_attr(data: Any) -> Html:
    """JSON for a ``data-*`` attribute (the browser unescapes it before the script reads it)."""
    return esc(json.dumps(data, separators=(",", ":")))
