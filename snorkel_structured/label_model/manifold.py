"""Label model for manifold-valued labeling functions (paper section 5)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from snorkel_structured._chunks import (
    is_dask_collection,
    map_partitions_to_array,
    reduce_stats,
)
from snorkel_structured._persistence import PersistenceMixin
from snorkel_structured._validation import (
    check_is_fitted,
    check_manifold_outputs,
    check_scalar,
)
from snorkel_structured.estimators._manifold_stats import ManifoldStats
from snorkel_structured.estimators.triplet import (
    pair_sq_dist_estimate,
    triplet_estimate,
    uws_estimate,
)
from snorkel_structured.noise.manifold import make_noise
from snorkel_structured.spaces.manifolds import Euclidean, Hyperbolic, Sphere

__all__ = ["ManifoldLabelModel"]

ESTIMATORS = ("triplet", "pair_sq_dist", "uws")
WEIGHTINGS = ("inverse_variance", "beta_squared")


def _as_outputs(chunk: Any, space: Any) -> np.ndarray:
    """A chunk as (n, n_lfs, ambient_dim): 2-D chunks (Dask DataFrame partitions) hold
    each row's LF outputs side by side, n_lfs * ambient_dim columns."""
    arr = np.asarray(chunk.to_numpy() if hasattr(chunk, "to_numpy") else chunk)
    D = space.ambient_dim
    if arr.ndim == 2 and arr.shape[1] % D == 0:
        arr = arr.reshape(arr.shape[0], -1, D)
    return arr


def _chunk_stats(
    chunk: Any, *, space: Any, atol: float, n_lfs: int | None
) -> ManifoldStats:
    """ManifoldStats of one chunk (module level, so Dask workers can unpickle it)."""
    X = check_manifold_outputs(
        _as_outputs(chunk, space), space, name="X", atol=atol, n_lfs=n_lfs
    )
    if X.shape[1] < 3:
        raise ValueError(
            f"X must have at least 3 labeling functions (axis 1); got shape {X.shape}. "
            "The triplet invariants need three LFs; add LFs."
        )
    return ManifoldStats._from_checked(X, space)


def _predict_block(
    chunk: Any, *, space: Any, atol: float, n_lfs: int, weights: np.ndarray
) -> np.ndarray:
    X = check_manifold_outputs(
        _as_outputs(chunk, space), space, name="X", atol=atol, n_lfs=n_lfs
    )
    return space.frechet_mean(X, weights)


class ManifoldLabelModel(PersistenceMixin, BaseEstimator):
    """Estimate LF noise on a manifold without labels; pseudolabel by Frechet means.

    Parameters
    ----------
    space : Euclidean, Sphere or Hyperbolic
        The label manifold.
    estimator : {"triplet", "pair_sq_dist", "uws"}, default="triplet"
        ``"triplet"``: the law-of-cosines invariant (``E cosh d(la, lb) = A_a A_b`` on
        H^d, ``cos`` on S^d, ``E d^2`` additive on R^d), least squares over all pairs.
        ``"pair_sq_dist"``: lower-variance fit of the exact two-parameter map of
        ``E d^2(la, lb)``, started from the triplet estimate. ``"uws"``: the baseline of
        Shin et al. (2022), biased on curved spaces. See
        :mod:`snorkel_structured.estimators.triplet`.
    noise : {"wrapped_normal", "riemannian_gaussian"}, default="wrapped_normal"
        Noise family; ``noise_scale_`` is its parameter (``sigma2`` or ``theta``).
    weighting : {"inverse_variance", "beta_squared"}, default="inverse_variance"
        Combination weights for the pseudolabels: ``w_a ∝ 1 / E d^2(la, y)``, or the
        paper's ``beta_a^2`` with ``beta`` minimizing ``sum beta_a^2 E d^2_a`` subject to
        ``sum beta_a = 1`` (so ``w_a ∝ 1 / (E d^2_a)^2``).
    min_overlap : int, default=10
        LF pairs that co-voted on fewer rows are ignored.
    atol : float, default=1e-6
        Points within ``atol`` of the manifold are projected; farther ones raise.
    seed : None, int or numpy.random.Generator, default=None
        Kept for the common estimator contract; fitting is deterministic.

    Attributes
    ----------
    stats_ : ManifoldStats
        Accumulated sufficient statistics (``partial_fit`` adds to them).
    noise_ : WrappedNormal or RiemannianGaussian
    noise_scale_ : ndarray of shape (n_lfs,)
    expected_sq_dist_ : ndarray of shape (n_lfs,)
        Estimated ``E d^2(lambda_a, y)``.
    expected_invariant_ : ndarray of shape (n_lfs,)
        Estimated ``E cosh d`` / ``E cos d`` / ``E d^2`` to the true label.
    weights_ : ndarray of shape (n_lfs,)
        Combination weights, summing to 1.
    n_lfs_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from snorkel_structured.spaces.manifolds import Hyperbolic
    >>> from snorkel_structured.synthetic_manifold import make_manifold_data
    >>> data = make_manifold_data(20000, space=Hyperbolic(2), noise_scale=[0.2, 0.5, 1.0],
    ...                           seed=0)
    >>> lm = ManifoldLabelModel(Hyperbolic(2)).fit(data.X)
    >>> np.round(lm.noise_scale_, 1)
    array([0.2, 0.5, 1. ])
    >>> lm.predict(data.X).shape
    (20000, 3)
    """

    def __init__(
        self,
        space: Any,
        *,
        estimator: str = "triplet",
        noise: str = "wrapped_normal",
        weighting: str = "inverse_variance",
        min_overlap: int = 10,
        atol: float = 1e-6,
        seed: Any = None,
    ) -> None:
        self.space = space
        self.estimator = estimator
        self.noise = noise
        self.weighting = weighting
        self.min_overlap = min_overlap
        self.atol = atol
        self.seed = seed

    def _check_params(self) -> None:
        if not isinstance(self.space, (Euclidean, Sphere, Hyperbolic)):
            raise ValueError(
                "space must be a Euclidean, Sphere or Hyperbolic instance; got "
                f"{self.space!r}. For products, fit one model per factor."
            )
        if self.estimator not in ESTIMATORS:
            raise ValueError(
                f"estimator must be one of {ESTIMATORS}; got {self.estimator!r}."
            )
        if self.weighting not in WEIGHTINGS:
            raise ValueError(
                f"weighting must be one of {WEIGHTINGS}; got {self.weighting!r}."
            )
        check_scalar(self.min_overlap, "min_overlap", kind="int", low=1)
        check_scalar(self.atol, "atol", low=0.0)

    def _stats(self, X: Any, n_lfs: int | None = None) -> ManifoldStats:
        to_stats = functools.partial(
            _chunk_stats, space=self.space, atol=self.atol, n_lfs=n_lfs
        )
        if is_dask_collection(X) or isinstance(X, Iterator):
            return reduce_stats(X, to_stats)
        return to_stats(X)

    def fit(self, X: Any, y: None = None) -> ManifoldLabelModel:
        """Estimate every LF's noise from LF outputs alone.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_lfs, ambient_dim), iterator of chunks, or Dask collection
            LF outputs; a row of NaN is an abstain. An iterator of such chunks is
            consumed once; a Dask array (n_samples, n_lfs, ambient_dim) or a Dask
            DataFrame with n_lfs * ambient_dim columns (each LF's coordinates side by
            side) is reduced partition by partition. Same estimate as one array.
        y : None
            Ignored (no labels are used).

        Returns
        -------
        self : ManifoldLabelModel

        Raises
        ------
        ValueError
            On bad parameters, wrong shapes, fewer than 3 LFs, points off the manifold
            (naming the row and LF), or too few overlapping rows.
        """
        self._check_params()
        return self._fit_stats(self._stats(X))

    def partial_fit(self, X: Any, y: None = None) -> ManifoldLabelModel:
        """Add the statistics of a chunk of rows and re-estimate; returns self.

        ``X`` is anything ``fit`` accepts.
        """
        self._check_params()
        stats = self._stats(X, self.n_lfs_ if hasattr(self, "stats_") else None)
        if hasattr(self, "stats_"):
            stats = self.stats_ + stats
        return self._fit_stats(stats)

    def fit_stats(self, stats: ManifoldStats) -> ManifoldLabelModel:
        """Estimate from precomputed statistics (e.g. ``sum`` over Dask partitions)."""
        self._check_params()
        if not isinstance(stats, ManifoldStats) or stats.space != self.space:
            raise ValueError(
                f"stats must be ManifoldStats on {self.space!r}; got {stats!r}."
            )
        return self._fit_stats(stats)

    def _fit_stats(self, stats: ManifoldStats) -> ManifoldLabelModel:
        noise = make_noise(self.noise, self.space)
        kw = {"min_overlap": self.min_overlap}
        if self.estimator == "triplet":
            est = triplet_estimate(stats, noise, **kw)
        elif self.estimator == "uws":
            est = uws_estimate(stats, noise, **kw)
        else:
            est = pair_sq_dist_estimate(stats, noise, **kw)
        self.stats_ = stats
        self.noise_ = noise
        self.n_lfs_ = stats.n_lfs
        self.noise_scale_ = est.noise_scale
        self.expected_sq_dist_ = est.expected_sq_dist
        self.expected_invariant_ = est.expected_invariant
        inv = 1.0 / np.maximum(est.expected_sq_dist, 1e-300)
        w = inv if self.weighting == "inverse_variance" else inv**2
        self.weights_ = w / w.sum()
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Weighted Frechet mean of the votes of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_lfs, ambient_dim), or Dask collection
            LF outputs; a row of NaN is an abstain. A Dask collection (as in ``fit``)
            gives a lazy Dask array, computed partition by partition.

        Returns
        -------
        Y_hat : ndarray of shape (n_samples, ambient_dim)
            ``argmin_z sum_a w_a d^2(z, lambda_a)`` over the LFs that voted, with
            ``weights_`` renormalized over them; NaN for rows where every LF abstained.
        """
        check_is_fitted(self, "weights_")
        fn = functools.partial(
            _predict_block,
            space=self.space,
            atol=self.atol,
            n_lfs=self.n_lfs_,
            weights=self.weights_,
        )
        if is_dask_collection(X):
            if getattr(X, "ndim", 2) == 3:  # (n, m, D) -> (n, m * D): rows stay whole
                X = X.rechunk({1: -1, 2: -1}).reshape(X.shape[0], -1)
            return map_partitions_to_array(X, fn, (self.space.ambient_dim,), np.float64)
        return fn(X)
