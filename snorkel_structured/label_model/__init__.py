"""Label models: Snorkel-facing estimators of labeling-function noise, and baselines.

The classes are imported on first access (PEP 562): ``StructuredLabelModel`` subclasses
Snorkel's ``BaseLabeler``, whose package imports PyTorch, so importing this package
(e.g. for ``ManifoldLabelModel``) does not pay for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "AggregatingVoter": "snorkel_structured.label_model.baselines",
    "ManifoldLabelModel": "snorkel_structured.label_model.manifold",
    "ManifoldMeanVoter": "snorkel_structured.label_model.baselines",
    "StructuredLabelModel": "snorkel_structured.label_model.structured",
}

__all__ = [
    "AggregatingVoter",
    "ManifoldLabelModel",
    "ManifoldMeanVoter",
    "StructuredLabelModel",
]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


if TYPE_CHECKING:
    from snorkel_structured.label_model.baselines import (
        AggregatingVoter,
        ManifoldMeanVoter,
    )
    from snorkel_structured.label_model.manifold import ManifoldLabelModel
    from snorkel_structured.label_model.structured import StructuredLabelModel
