"""Parameter estimation from labeling-function outputs (numpy/scipy only)."""

from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.estimators.tensor import TensorEstimate, tensor_estimate
from snorkel_structured.estimators.uws_finite import uws_estimate

__all__ = ["TensorEstimate", "tensor_estimate", "uws_estimate", "VoteStats"]
