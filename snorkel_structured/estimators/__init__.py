"""Parameter estimation from labeling-function outputs (numpy/scipy only)."""

from snorkel_structured.estimators._stats import VoteStats

__all__ = ["VoteStats"]
