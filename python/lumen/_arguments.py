"""Keyword arguments checked by name before they reach the engine, so that a typo
(SamplingParams(temprature=0)) says which name was meant instead of nanobind's list of every
accepted signature."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from . import _lumen


class UnknownArgumentError(_lumen.LumenError, TypeError):
    """A keyword argument Lumen does not have. A lumen.LumenError (Lumen's error type), and a
    TypeError as Python raises for an unexpected keyword."""


def check_keywords(owner: str, given: Mapping[str, Any], known: Iterable[str]) -> None:
    """Raises UnknownArgumentError naming the first unknown keyword of `given`, with the closest
    known name when one is close (the CLI's suggestion: a prefix or a small edit distance)."""
    names = list(known)
    for name in given:
        if name in names:
            continue
        suggestion = _lumen._closest_name(name, names)
        hint = f"; did you mean {suggestion}?" if suggestion else f" (it has: {', '.join(names)})"
        raise UnknownArgumentError(f"{owner} has no argument '{name}'{hint}")
