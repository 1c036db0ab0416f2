"""Parameter estimation from labeling-function outputs (numpy/scipy only)."""

from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.estimators.dawid_skene import (
    DawidSkeneEstimate,
    dawid_skene_estimate,
)
from snorkel_structured.estimators.tensor import TensorEstimate, tensor_estimate
from snorkel_structured.estimators.uws_finite import uws_estimate

__all__ = [
    "DawidSkeneEstimate",
    "TensorEstimate",
    "VoteStats",
    "dawid_skene_estimate",
    "tensor_estimate",
    "uws_estimate",
]
