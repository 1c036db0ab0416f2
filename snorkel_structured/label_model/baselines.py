"""Baseline label models: aggregation without a noise model, behind the label-model API.

They answer a user's first question, "does the label model beat what I do now?", with the
same calls (``fit``, ``predict``, ``score``) as :class:`StructuredLabelModel` and
:class:`ManifoldLabelModel`. ``fit`` learns nothing (it checks the input and records the
number of LFs); weights, if any, are given by the user or taken from a fitted label model
(e.g. ``weights=lm.theta_``, the paper's weighted pseudolabel).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from snorkel_structured import _warnings
from snorkel_structured._validation import (
    ABSTAIN,
    check_gold_labels,
    check_label_matrix,
    check_lf_weights,
    check_manifold_outputs,
)
from snorkel_structured.aggregators import (
    borda,
    frechet_mean,
    kemeny,
    majority_vote,
    medoid,
)
from snorkel_structured.spaces.finite import FiniteMetricSpace
from snorkel_structured.spaces.permutations import Permutations

__all__ = ["AggregatingVoter", "ManifoldMeanVoter"]

_METHODS = ("majority", "kemeny", "frechet_mean", "medoid", "borda")


class AggregatingVoter(BaseEstimator):
    """Combine each row's votes by a fixed rule: majority, Kemeny, Borda, mean, medoid.

    Parameters
    ----------
    space : FiniteMetricSpace
    method : {"majority", "kemeny", "frechet_mean", "medoid", "borda"}, default="kemeny"
        See :mod:`snorkel_structured.aggregators`. ``"kemeny"`` minimizes the weighted sum
        of distances (exact Kemeny-Young aggregation for Kendall tau on permutations),
        ``"frechet_mean"`` the weighted sum of squared distances over the whole space,
        ``"medoid"`` the same over the row's own votes, ``"borda"`` the Borda count
        (``Permutations`` spaces only).
    weights : array-like of shape (n_lfs,), optional
        Finite, non-negative LF weights with a positive entry (ignored by
        ``"majority"``); default equal. A weight of 0 ignores the LF, as if it
        abstained on every row (scikit-learn's convention for a zero sample weight):
        a row on which only zero-weight LFs vote gets -1, like a row where every LF
        abstains, and ``predict`` warns with the number of such rows.
    seed : None, int or numpy.random.Generator, default=None
        Breaks majority ties at random when given; otherwise the lowest index wins.

    Attributes
    ----------
    n_lfs_ : int

    Examples
    --------
    >>> import numpy as np, snorkel_structured as ss
    >>> from snorkel_structured.label_model.baselines import AggregatingVoter
    >>> space = ss.Permutations(3)
    >>> L = space.encode([(0, 1, 2), (0, 2, 1), (1, 0, 2)])[None, :]
    >>> AggregatingVoter(space).predict(L).tolist()  # no fit needed
    [0]
    """

    def __init__(
        self,
        space: FiniteMetricSpace,
        *,
        method: str = "kemeny",
        weights: Any = None,
        seed: Any = None,
    ) -> None:
        self.space = space
        self.method = method
        self.weights = weights
        self.seed = seed

    def _check(self, L: Any) -> np.ndarray:
        if not isinstance(self.space, FiniteMetricSpace):
            raise TypeError(
                f"space must be a FiniteMetricSpace; got {type(self.space).__name__}."
            )
        if self.method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}; got {self.method!r}.")
        if self.method == "borda" and not isinstance(self.space, Permutations):
            raise ValueError(
                "method='borda' needs a Permutations space (rankings); got "
                f"{type(self.space).__name__}. Use method='kemeny' instead."
            )
        n_lfs = getattr(self, "n_lfs_", None)
        return check_label_matrix(L, n_labels=len(self.space), n_lfs=n_lfs)

    def fit(self, L_train: Any, *args: Any, **kwargs: Any) -> AggregatingVoter:
        """Check ``L_train`` (n_samples, n_lfs) and record ``n_lfs_``; returns self.

        Optional: as Snorkel's ``MajorityLabelVoter``, ``predict`` works without it
        (a fitted voter also checks that later ``L`` have ``n_lfs_`` columns).
        """
        self.__dict__.pop("n_lfs_", None)
        self.n_lfs_ = self._check(L_train).shape[1]
        return self

    def predict(self, L: Any) -> np.ndarray:
        """Aggregated label index per row, shape (n_samples,); -1 where all abstain.

        Needs no ``fit`` (the rule learns nothing), as Snorkel's ``MajorityLabelVoter``.
        """
        L = self._check(L)
        if self.method == "majority":
            tie = "lowest" if self.seed is None else "random"
            return majority_vote(L, len(self.space), tie_break=tie, seed=self.seed)
        rule = {
            "kemeny": kemeny,
            "frechet_mean": frechet_mean,
            "medoid": medoid,
            "borda": borda,
        }[self.method]
        return rule(L, self.space, self.weights)

    def score(self, L: Any, Y: Any) -> dict[str, float]:
        """Accuracy, mean distance and mean squared distance to the true labels ``Y``.

        Rows whose gold label is unknown (``Y == -1``) are left out of every metric,
        as in :meth:`StructuredLabelModel.score`. Of the other rows, those the voter
        leaves unlabeled (-1) count as wrong for accuracy and are left out of the
        distance means.

        Parameters
        ----------
        L : array-like of int of shape (n_samples, n_lfs)
        Y : array-like of int of shape (n_samples,)
            True label indices; -1 marks an unknown label (the row is left out).

        Returns
        -------
        scores : dict of str to float
            "accuracy", "mean_distance" and "mean_sq_distance"; NaN when no row
            counts.

        Raises
        ------
        ValueError
            If ``Y`` is not one integer label index per row of ``L``, each in
            ``[0, n_labels)`` or -1.
        """
        pred = self.predict(L)
        # The label model's check of gold labels: both score the same Y alike.
        y = check_gold_labels(
            Y, len(self.space), "Y", pred.shape[0], allow_unknown=True
        )
        known = y != ABSTAIN
        if not known.any():
            _warnings.warn(
                "Every gold label in Y is -1 (unknown): there is nothing to score and "
                "every metric is NaN.",
                UserWarning,
                stacklevel=2,
            )
        pred, y = pred[known], y[known]
        labeled = pred != ABSTAIN
        d = self.space.dist(pred[labeled], y[labeled])
        return {
            "accuracy": float(np.mean(pred == y)) if y.size else float("nan"),
            "mean_distance": float(np.mean(d)) if d.size else float("nan"),
            "mean_sq_distance": float(np.mean(d**2)) if d.size else float("nan"),
        }


class ManifoldMeanVoter(BaseEstimator):
    """The (weighted) Frechet mean of each row's LF outputs, without a noise model.

    Parameters
    ----------
    space : Euclidean, Sphere or Hyperbolic
    weights : array-like of shape (n_lfs,), optional
        Finite, non-negative LF weights, at least one of them positive; default
        equal (the unweighted Frechet mean). A weight of 0 ignores the LF, as if it
        abstained on every row (scikit-learn's convention for a zero sample weight):
        a row on which only zero-weight LFs vote gets NaN, like a row where every LF
        abstains, and ``predict`` warns with the number of such rows.
    atol : float, default=1e-6
        Outputs within ``atol`` of the manifold are projected; farther ones raise.

    Attributes
    ----------
    n_lfs_ : int

    Examples
    --------
    >>> import numpy as np, snorkel_structured as ss
    >>> X = np.array([[[0.0], [2.0], [np.nan]], [[np.nan], [np.nan], [np.nan]]])
    >>> ss.ManifoldMeanVoter(ss.Euclidean(1), weights=[1.0, 3.0, 1.0]).predict(X)
    array([[1.5],
           [nan]])
    """

    def __init__(self, space: Any, *, weights: Any = None, atol: float = 1e-6) -> None:
        self.space = space
        self.weights = weights
        self.atol = atol

    def _check_weights(self, n_lfs: int) -> np.ndarray | None:
        """``weights`` as a fresh (n_lfs,) float64 array, or None for equal weights."""
        if self.weights is None:
            return None
        return check_lf_weights(self.weights, n_lfs, "unlabeled (NaN)")

    def fit(self, X: Any, y: Any = None) -> ManifoldMeanVoter:
        """Check ``X`` (n_samples, n_lfs, ambient_dim) and record ``n_lfs_``; returns self.

        Optional: ``predict`` works without it (the mean learns nothing).

        Raises
        ------
        ValueError
            If ``X`` is malformed, or ``weights`` is not ``n_lfs`` finite,
            non-negative numbers with a positive one.
        """
        self.__dict__.pop("n_lfs_", None)
        n_lfs = check_manifold_outputs(X, self.space, atol=self.atol).shape[1]
        self._check_weights(n_lfs)
        self.n_lfs_ = n_lfs
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Frechet mean per row, shape (n_samples, ambient_dim); NaN where unlabeled.

        Needs no ``fit``, as Snorkel's ``MajorityLabelVoter``. A row is unlabeled
        (NaN) when every LF abstains on it, or when only LFs of weight 0 vote on it.

        Raises
        ------
        ValueError
            If ``X`` is malformed, or ``weights`` is not ``n_lfs`` finite,
            non-negative numbers with a positive one.

        Warns
        -----
        UserWarning
            When some rows are unlabeled although an LF voted on them (every LF
            that voted has weight 0), with their number.
        """
        X = check_manifold_outputs(
            X, self.space, atol=self.atol, n_lfs=getattr(self, "n_lfs_", None)
        )
        w = self._check_weights(X.shape[1])
        mean = self.space.frechet_mean(X, w)
        if w is not None:
            voted = ~np.isnan(X[..., 0])  # an abstain is a whole row of NaN
            ignored = voted.any(axis=1) & ~(voted & (w > 0)).any(axis=1)
            if ignored.any():
                zero = np.flatnonzero(w == 0).tolist()
                _warnings.warn(
                    f"{int(ignored.sum())} of {len(X)} rows are unlabeled (NaN) "
                    "although an LF voted on them: every LF that voted there has "
                    f"weight 0 (LFs {zero}), and a weight of 0 ignores an LF. Give "
                    "those LFs a positive weight, or drop these rows (NaN "
                    "predictions) before training on the labels.",
                    UserWarning,
                    stacklevel=2,
                )
        return mean

    def score(self, X: Any, Y: Any) -> dict[str, float]:
        """Mean distance and mean squared distance to the true labels ``Y`` (n, ambient)."""
        pred = self.predict(X)
        Y = np.asarray(Y, dtype=np.float64)
        if Y.shape != pred.shape:
            raise ValueError(f"Y must have shape {pred.shape}; got {Y.shape}.")
        ok = ~np.isnan(pred).any(axis=1)
        d = self.space.dist(pred[ok], Y[ok])
        return {
            "mean_distance": float(np.mean(d)),
            "mean_sq_distance": float(np.mean(d**2)),
        }
