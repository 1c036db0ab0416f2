"""Dawid and Skene's tables as StructuredLabelModel's noise model on classes (a mixin):
when they apply, whether the votes identify them, and the fit.

See the ``confusion`` option of :class:`~snorkel_structured.StructuredLabelModel` and
:func:`~snorkel_structured.estimators.dawid_skene_estimate`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from snorkel_structured._validation import ABSTAIN
from snorkel_structured.estimators._em_choices import _REFIT_NATS
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.estimators.dawid_skene import (
    DawidSkeneEstimate,
    conditional_log_table,
    dawid_skene_estimate,
)
from snorkel_structured.spaces.finite import Discrete

__all__ = [
    "CONFUSION_MIN_SHARED",
    "ConfusionChoice",
    "confusion_summary",
    "tables_identified",
]

# The default fits Dawid and Skene's tables on classes only when each voting LF shares
# at least this many rows with each of two other LFs (as the triplet estimator's
# min_overlap); otherwise the distance family's choices, which fall back to the
# unweighted vote when the votes cannot tell the LFs apart.
CONFUSION_MIN_SHARED = 10
# ... and when the tables, n_lfs (k + 1) k numbers, are no more than the votes (one
# vote per number on average) and at most this many numbers (1.3e8 bytes): with
# thousands of classes the distance family's support search is the sound model.
CONFUSION_MAX_CELLS = 1 << 24


def tables_identified(stats: VoteStats) -> bool:
    """Whether every LF that votes shares at least ``CONFUSION_MIN_SHARED`` rows with
    each of two other LFs: an LF's table is read off its agreements with the others
    (three views of Y), and an LF that meets at most one other would get a table that
    only repeats its own votes (each LF "always right" where no two LFs meet). And
    whether the tables are no larger than the votes and ``CONFUSION_MAX_CELLS``."""
    voted = (np.asarray(stats.patterns) != ABSTAIN).astype(np.float64)
    counts = np.asarray(stats.counts)
    m, k = voted.shape[1], int(stats.n_labels)
    cells = m * (k + 1) * k
    if cells > CONFUSION_MAX_CELLS or cells > counts @ voted.sum(axis=1):
        return False
    if m <= 16:  # rows per set of voting LFs first: at most 2^m sets, few in practice
        code = (voted @ (2.0 ** np.arange(m))).astype(np.int64)
        per_set = np.bincount(code, weights=counts, minlength=1 << m)
        used = np.flatnonzero(per_set)
        voted, counts = (used[:, None] >> np.arange(m)) & 1, per_set[used]
        voted = voted.astype(np.float64)
    shared = (voted * counts[:, None]).T @ voted  # (m, m) rows both LFs voted on
    votes = np.diag(shared).copy()
    np.fill_diagonal(shared, 0.0)
    partners = (shared >= CONFUSION_MIN_SHARED).sum(axis=1)
    return bool(np.all((partners >= 2) | (votes == 0)))


def confusion_summary(est: DawidSkeneEstimate) -> tuple[np.ndarray, np.ndarray]:
    """theta_ and expected_sq_dist_ of Dawid and Skene's fit on classes: per LF and
    class, the theta of the distance family that is right as often among the LF's
    votes (p = 1 / (1 + (k - 1) e^-theta)), and E[d^2] = P(wrong vote)."""
    prior = est.prior
    k = prior.size
    right = np.exp(np.diagonal(conditional_log_table(est.log_table), axis1=1, axis2=2))
    right = np.clip(right, 1e-12, 1.0 - 1e-12)  # (m, k)
    theta = np.log(right * max(k - 1, 1) / (1.0 - right))
    return theta, (1.0 - right) @ prior


class ConfusionChoice:
    """Whether and how :class:`~snorkel_structured.StructuredLabelModel` fits Dawid and
    Skene's tables (it reads the model's options, ``_dependencies`` and ``_labeled``)."""

    def _fits_confusion(self, stats: VoteStats) -> bool:
        """Whether the fit is Dawid and Skene's (one full table per LF): on plain
        classes with every noise option at "auto", LFs not found or declared
        dependent, and votes that identify the tables (:func:`tables_identified`).
        Labeled rows join the tables' likelihood with their classes known.

        On classes the tables generalize every variant of the distance family (whose
        errors are spread evenly over the wrong classes); the hold-out and Snorkel
        generator figures are in the README. LFs that share a source keep the
        distance family's fallbacks and choices.
        """
        confusion = getattr(self, "confusion", "auto")  # pickles before the option
        if isinstance(confusion, str):  # "auto"
            return (
                self._confusion_applies()
                and not self._dependencies
                and tables_identified(stats)
            )
        if not confusion:
            return False
        if self._dependencies:
            raise ValueError(
                "confusion=True fits each LF's table as if the LFs were independent; "
                f"with dependencies ({self._dependencies}) use confusion='auto' (the "
                "distance family then weighs them) or pass dependencies=[]."
            )
        return True

    def _confusion_applies(self) -> bool:
        """Plain classes, "mle", and every option the tables replace left at "auto"."""
        options = (
            self.label_dependent,
            self.abstain_dependent,
            self.noise_power,
            self.outliers,
            self.shrinkage,
            self.prior_support,
        )
        return (
            isinstance(self.space, Discrete)
            and self.estimator == "mle"
            and self.n_components is None
            and all(isinstance(o, str) and o == "auto" for o in options)
        )

    def _fit_confusion(
        self, stats: VoteStats, fixed: Any, max_iter: int, tol: float
    ) -> tuple[DawidSkeneEstimate, dict[str, Any]]:
        """The tables' fit (labeled rows included) and its ``noise_model_``."""
        est = dawid_skene_estimate(
            stats,
            prior=fixed,
            labeled=self._labeled,
            max_iter=max_iter,
            # as the refit of a sampled choice: 0.2 of a standard error
            tol=max(tol, _REFIT_NATS / stats.n_samples),
        )
        noise_model: dict[str, Any] = {
            "prior": "free" if fixed is None else "fixed",
            "theta": "confusion",
            "abstain": True,
            "power": 2.0,
            "outliers": False,
            "shrinkage": 0.0,
        }
        if self._labeled is not None:  # they joined the tables' likelihood
            noise_model["dev_choice"] = "label model"
        return est, noise_model
