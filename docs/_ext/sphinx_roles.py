"""Griffe extension: render the Sphinx roles used in pandas-dp docstrings as API links.

The docstrings are written for pydoc, Sphinx and mkdocstrings alike, so they use roles such as
``:class:`~pandas_dp.PrivacyLeakWarning``` and ``:meth:`sum```. mkdocstrings would print those
verbatim. This extension rewrites each role into an *optional* cross-reference: a link when the
target is documented on the site, plain code otherwise (so it never breaks a strict build).
It also turns reStructuredText's ``text::`` (a literal block follows) into ``text:``, and
fills the shared parameter blocks (``{epsilon}``) as :func:`pandas_dp.api.docstrings.fill`
does at import time, since griffe reads the docstrings from the source.
Loaded from ``mkdocs.yml`` (``plugins.mkdocstrings.handlers.python.options.extensions``).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

from pandas_dp.api.docstrings import fill

_ROLE = re.compile(r":(?:class|meth|func|attr|data|mod|exc|obj):`(~?)([\w.]+)(?:\(\))?`")
_LITERAL_INTRO = re.compile(r"(?<=\S)::$", re.MULTILINE)


def _resolve(obj: griffe.Object, name: str) -> str:
    """The full path of ``name`` as seen from ``obj``'s docstring (best effort)."""
    scope: griffe.Object | griffe.Alias | None = obj
    while scope is not None:  # the object itself, then its class, module, package
        if name in scope.members:
            return f"{scope.path}.{name}"
        scope = scope.parent
    head, _, rest = name.partition(".")
    if head == obj.package.name and rest:
        try:
            target = obj.package[rest]
        except (KeyError, ValueError):
            return name
        if isinstance(target, griffe.Alias):
            return target.target_path
        return str(target.path)
    return name


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx cross-reference roles in docstrings into optional autorefs."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the roles in ``obj``'s docstring, once the object tree is complete."""
        docstring = obj.docstring
        if docstring is None:
            return

        def link(match: re.Match[str]) -> str:
            short, name = match.group(1), match.group(2)
            shown = name.rsplit(".", 1)[-1] if short else name
            target = _resolve(obj, name)
            return f'<autoref identifier="{target}" optional><code>{shown}</code></autoref>'

        text = _ROLE.sub(link, fill(docstring.value))
        docstring.value = _LITERAL_INTRO.sub(":", text)
