"""Detect pairs of labeling functions that agree more than conditional independence allows.

The structured analogue of dependency structure learning for Snorkel (Varma et al., ICML
2019): with m >= 4 LFs the pairwise LF-LF statistics over-identify a conditionally
independent model, so a pair that is *too close* (copies, shared sources) shows up as a
residual the independent model cannot explain. No label model is fitted: the test only
compares the LFs' statistics with each other, so it can run inside a label model's fit.

Modules (one idea each):

- ``_finite``: finite spaces. Each pair's agreement mass is predicted from the other
  LFs' joint tables by the multi-view identity ``J_ab = J_{a,O1} (J_{O2,O1})^+
  J_{O2,b}``, in k-dimensional features of the votes, from the vote-pattern counts of
  a ``VoteStats`` (cost O(n_patterns), not O(n_rows)); cross-fitted over two random
  folds of the rows, with delta-method (influence-function) standard errors.
- ``_manifold``: ``Euclidean``, ``Sphere``, ``Hyperbolic``. Each pair's law-of-cosines
  invariant (``d^2``, ``cos d``, ``cosh d``) is predicted from the other pairs by
  weighted least squares, from the additive :class:`ManifoldPairStats`.
- ``_calibration``: the family-wise decision. Bootstrap max-T step-down (Westfall and
  Young 1993; Romano and Wolf 2005) with the null maximum drawn from the normal law of
  the studentized statistics (the multiplier bootstrap of Chernozhukov, Chetverikov
  and Kato 2013): the most significant open pair is flagged while its z beats the
  1 - alpha quantile of the maximum over the open pairs; a flagged pair then leaves
  the other pairs' predictions, which are recomputed, and the step repeats. Only
  "too close" is evidence (one-sided).
- ``_api``: :func:`lf_dependency_test` (votes in, one row per pair out),
  :func:`detect_dependent_pairs` (the numerical-core entry point for label models:
  statistics in, flagged pairs and the frame out) and :func:`dependent_pairs`.

The score test against a fitted label model (``method="model"``) needs the label-model
layer and lives in ``snorkel_structured.label_model._dependency_score``. Measured
false-alarm rates, power and run times: ``benchmarks/bench_dependency_test.py``.
"""

from snorkel_structured.estimators.dependencies._api import (
    dependent_pairs,
    detect_dependent_pairs,
    lf_dependency_test,
)
from snorkel_structured.estimators.dependencies._finite import estimate_n_components
from snorkel_structured.estimators.dependencies._manifold import ManifoldPairStats

__all__ = [
    "ManifoldPairStats",
    "dependent_pairs",
    "detect_dependent_pairs",
    "estimate_n_components",
    "lf_dependency_test",
]
