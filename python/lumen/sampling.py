"""lumen.SamplingParams: the engine's SamplingParams (bound in python/src) with its keyword names
checked first, so that a misspelled one gets a did-you-mean."""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, List

from . import _lumen
from ._arguments import check_keywords


def _keywords() -> List[str]:
    # Each keyword of the constructor is also an attribute of the same name (a data descriptor
    # of the bound class): the attributes are the list, so it cannot drift from the binding.
    return [name for name, value in vars(_lumen.SamplingParams).items()
            if not name.startswith("_") and inspect.isdatadescriptor(value)]


_KEYWORDS = _keywords()


if TYPE_CHECKING:
    # Type checkers see the bound class's typed keywords (_lumen.pyi), not **kwargs.
    SamplingParams = _lumen.SamplingParams
else:
    class SamplingParams(_lumen.SamplingParams):
        __doc__ = _lumen.SamplingParams.__doc__

        def __init__(self, **kwargs: Any) -> None:
            check_keywords("SamplingParams", kwargs, _KEYWORDS)
            super().__init__(**kwargs)
