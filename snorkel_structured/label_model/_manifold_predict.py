"""ManifoldLabelModel's prediction methods (a mixin) and the weighted Frechet means they use."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from snorkel_structured._chunks import (
    is_dask_collection,
    map_partitions_to_array,
)
from snorkel_structured._validation import (
    check_is_fitted,
    check_manifold_outputs,
    check_points,
)
from snorkel_structured.estimators.robust_manifold import (
    robust_frechet_mean,
    robust_responsibilities,
    split_group_weights,
)
from snorkel_structured.label_model._manifold_checks import _as_outputs  # noqa: E402
from snorkel_structured.label_model._manifold_scoring import (
    posterior_spread,
    score_points,
)

__all__ = ["ManifoldPredictMethods"]


def _predict_block(
    chunk: Any,
    *,
    space: Any,
    atol: float,
    n_lfs: int,
    weights: np.ndarray,
    groups: np.ndarray,
    robust: dict | None,
) -> np.ndarray:
    X = check_manifold_outputs(
        _as_outputs(chunk, space), space, name="X", atol=atol, n_lfs=n_lfs
    )
    return _combine(space, X, weights, groups, robust)[0]


def _combine(
    space: Any,
    X: np.ndarray,
    weights: np.ndarray,
    groups: np.ndarray,
    robust: dict | None,
) -> tuple[np.ndarray, np.ndarray]:
    """(pseudolabels, responsibilities) of checked outputs under one model variant."""
    voted = ~np.isnan(X[..., 0])
    if robust is None:
        w = split_group_weights(np.broadcast_to(weights, voted.shape), voted, groups)
        return space.frechet_mean(X, w), voted.astype(np.float64)
    return robust_frechet_mean(space, X, weights=weights, groups=groups, **robust)


class ManifoldPredictMethods:
    """Prediction from a fitted :class:`~snorkel_structured.ManifoldLabelModel`: weighted Frechet means, responsibilities, scores and weights."""

    def responsibilities(self, X: Any) -> np.ndarray:
        """Probability that each vote is an inlier (robust model; 1 for the plain one).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_lfs, ambient_dim)

        Returns
        -------
        resp : ndarray of shape (n_samples, n_lfs)
            0 where the LF abstained.
        """
        check_is_fitted(self, "weights_")
        X = self._check_X(X)
        if self._robust_params is None:
            return (~np.isnan(X[..., 0])).astype(np.float64)
        return robust_responsibilities(
            self.space,
            X,
            weights=self.weights_,
            groups=self.groups_,
            **self._robust_params,
        )

    def predict(self, X: Any, return_spread: bool = False) -> Any:
        """Weighted (robust, if chosen) Frechet mean of the votes of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_lfs, ambient_dim), or Dask collection
            LF outputs; a row of NaN is an abstain. A Dask collection (as in ``fit``)
            gives a lazy Dask array, computed partition by partition.
        return_spread : bool, default=False
            Also return each row's posterior spread: the expected squared distance
            from the pseudolabel to the true label under the fitted model, given
            which LFs voted (in-memory input only). It plays the part of
            ``predict_proba``'s confidence for finite labels: filter rows with
            :func:`snorkel_structured.labeling.filter_unlabeled_manifold`, or weight
            them by ``1 / spread``.

        Returns
        -------
        Y_hat : ndarray of shape (n_samples, ambient_dim)
            ``argmin_z sum_a w_ia d^2(z, lambda_a)`` over the LFs that voted, with
            ``w_ia`` = ``weights_`` times the vote's responsibility (robust model),
            shared within dependency groups; NaN for rows where every LF abstained.
        spread : ndarray of shape (n_samples,)
            Only with ``return_spread``: ``sum_a w_ia^2 E d^2_a / (sum_a w_ia)^2``
            (``expected_sq_dist_``; LFs of a dependency group count as perfectly
            correlated), exact on ``Euclidean`` spaces and to first order in the
            noise on curved ones; ``1 / sum_a (1 / E d^2_a)`` with inverse-variance
            weights. NaN where every LF abstained.

        Raises
        ------
        ValueError
            For ``return_spread=True`` with a Dask collection.
        """
        check_is_fitted(self, "weights_")
        fn = functools.partial(
            _predict_block,
            space=self.space,
            atol=self.atol,
            n_lfs=self.n_lfs_,
            weights=self.weights_,
            groups=self.groups_,
            robust=self._robust_params,
        )
        if is_dask_collection(X):
            if return_spread:
                raise ValueError(
                    "Over a Dask collection, predict does not return the spread; "
                    "compute it on in-memory chunks (X.compute() per partition)."
                )
            if getattr(X, "ndim", 2) == 3:  # (n, m, D) -> (n, m * D): rows stay whole
                X = X.rechunk({1: -1, 2: -1}).reshape(X.shape[0], -1)
            return map_partitions_to_array(X, fn, (self.space.ambient_dim,), np.float64)
        if not return_spread:
            return fn(X)
        X = self._check_X(X)
        pred, resp = _combine(
            self.space, X, self.weights_, self.groups_, self._robust_params
        )
        voted = ~np.isnan(X[..., 0])
        w = self.weights_[None, :]
        if self._robust_params is not None:  # as robust_frechet_mean weighs the votes
            w = w * np.maximum(resp, 1e-12)
        row_w = split_group_weights(
            np.broadcast_to(w, voted.shape), voted, self.groups_
        )
        spread = posterior_spread(row_w, self.expected_sq_dist_, self.groups_)
        return pred, spread

    def _check_X(self, X: Any, name: str = "X") -> np.ndarray:
        return check_manifold_outputs(
            _as_outputs(X, self.space),
            self.space,
            name=name,
            atol=self.atol,
            n_lfs=self.n_lfs_,
        )

    def score(
        self,
        X: Any,
        Y: Any,
        metrics: list[str] | None = ["mean_distance"],  # noqa: B006 - Snorkel's form
    ) -> dict[str, float]:
        """Score the pseudolabels against true labels, with Snorkel's conventions.

        As ``StructuredLabelModel.score`` (and Snorkel's ``LabelModel.score``):
        "coverage" is the fraction of rows the model labels (some LF voted); every
        other metric is computed over the rows the model labels and whose true label
        is known (a row of NaN in ``Y`` marks an unknown label).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_lfs, ambient_dim)
            LF outputs; a row of NaN is an abstain.
        Y : array-like of shape (n_samples, ambient_dim)
            True labels (points of ``space``); a row of NaN is unknown.
        metrics : list of str, default=["mean_distance"]
            Any of "mean_distance" (geodesic distance to the true label),
            "mean_sq_distance" and "coverage". ``None`` scores nothing, as in Snorkel.

        Returns
        -------
        scores : dict of str to float
            In the order of ``metrics``; NaN (with a ``UserWarning``) when no row has
            both a pseudolabel and a known true label.

        Raises
        ------
        ValueError
            For an unknown metric ("Unrecognized metric: ..."), or ``Y`` of the wrong
            shape or off the manifold.
        """
        check_is_fitted(self, "weights_")
        X = self._check_X(X)
        Yc = check_points(Y, self.space, name="Y", atol=self.atol, allow_nan=True)
        if Yc.shape != (X.shape[0], self.space.ambient_dim):
            raise ValueError(
                f"Y must have shape ({X.shape[0]}, {self.space.ambient_dim}), one true "
                f"label per row of X (NaN rows for unknown labels); got shape "
                f"{Yc.shape}."
            )
        pred = _combine(self.space, X, self.weights_, self.groups_, self._robust_params)
        return score_points(self.space, pred[0], Yc, metrics)

    def get_weights(self) -> np.ndarray:
        """Each LF's combination weight in the pseudolabels, shape (n_lfs,), sum 1.

        The manifold counterpart of Snorkel's ``LabelModel.get_weights`` (there: LF
        accuracies). A copy of ``weights_``: ``w_a ∝ (shrunk E d^2_a)^-p``, so an LF
        with twice the weight has half the (shrunk) expected squared distance to the
        true label under inverse-variance weighting. On each row the weights of the
        LFs that voted are renormalized (and, for the robust model, multiplied by
        each vote's responsibility).
        """
        check_is_fitted(self, "weights_")
        return self.weights_.copy()
