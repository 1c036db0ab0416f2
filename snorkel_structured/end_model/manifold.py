"""Weighted kernel end model for manifold-valued labels (paper section 5)."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from snorkel_structured._persistence import (
    PersistenceMixin,
    check_state_array,
    state_attr,
    state_float,
    state_int,
)
from snorkel_structured._validation import (
    check_is_fitted,
    check_manifold_outputs,
    check_points,
    check_scalar,
)
from snorkel_structured.end_model._kernels import (
    KERNELS,
    check_features,
    kernel_matrix,
    resolve_gamma,
    ridge_factor,
    ridge_weights,
    squared_distances,
)

__all__ = ["KernelManifoldRegressor"]

_MAX_BLOCK = 4_000_000  # floats per (queries x train points x ambient) block in predict


class KernelManifoldRegressor(PersistenceMixin, BaseEstimator):
    """Kernel ridge structured predictor on a manifold, trained on weak LF outputs.

    ``f(x) = argmin_z sum_i alpha_i(x) sum_a beta_a d^2(z, lambda_a(x_i))`` with
    ``alpha(x) = (K + n nu I)^-1 K_x`` (Ciliberto et al. 2016; Rudi et al. 2018) and
    ``beta_a`` the label model's combination weights (``weights_``); with clean labels
    the inner sum is ``d^2(z, y_i)``.

    Parameters
    ----------
    space : Euclidean, Sphere, Hyperbolic or ProductManifold
    kernel : {"rbf", "linear"}, default="rbf"
    gamma : float or "scale", default="scale"
        RBF bandwidth; ``"scale"`` = 1 / (n_features * X.var()).
    nu : float, default=1e-3
        Ridge regularization (``K + n nu I``).
    tol, max_iter : float, int
        Passed to ``space.frechet_mean``.

    Attributes
    ----------
    X_fit_ : ndarray of shape (n_samples, n_features)
    n_features_in_ : int
    targets_ : ndarray of shape (n_samples, n_lfs, ambient_dim)
        Training LF outputs (NaN = abstain), or clean labels with ``n_lfs = 1``.
    beta_ : ndarray of shape (n_lfs,)
    gamma_ : float

    Notes
    -----
    **Negative kernel weights.** Kernel ridge weights ``alpha_i(x)`` can be negative.
    With negative weights the Frechet objective ``sum_i w_i d^2(z, y_i)`` is not convex
    and can be unbounded below (on R^d and H^d, ``-d^2(z, y_i) -> -inf`` as z moves
    away), so its "argmin" may not exist. We therefore clip the weights at 0 and
    renormalize: the prediction is the Frechet mean of the training targets under the
    positive part of ``alpha(x)``, a well-posed (geodesically convex on R^d and H^d)
    problem. Where every ``alpha_i(x) <= 0`` the target of the largest ``alpha_i(x)`` is
    used. On R^d with clean labels this differs from the linear kernel ridge
    prediction only where alpha has negative entries.

    Examples
    --------
    >>> import numpy as np
    >>> from snorkel_structured.spaces.manifolds import Sphere
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(50, 2))
    >>> Y = Sphere(2).projection(np.c_[X, np.ones(50)])
    >>> model = KernelManifoldRegressor(Sphere(2)).fit(X, Y)
    >>> model.predict(X[:3]).shape
    (3, 3)
    """

    def __init__(
        self,
        space: Any,
        *,
        kernel: str = "rbf",
        gamma: float | str = "scale",
        nu: float = 1e-3,
        tol: float = 1e-10,
        max_iter: int = 100,
    ) -> None:
        self.space = space
        self.kernel = kernel
        self.gamma = gamma
        self.nu = nu
        self.tol = tol
        self.max_iter = max_iter

    def fit(
        self, X: Any, lf_outputs: Any, label_model: Any = None
    ) -> KernelManifoldRegressor:
        """Fit on features and weak LF outputs (with a fitted label model) or labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        lf_outputs : array-like of shape (n_samples, n_lfs, ambient_dim) or (n_samples, ambient_dim)
            LF outputs (NaN rows = abstain) together with ``label_model``, or clean
            labels (then ``label_model`` must be None); on a line (ambient_dim 1),
            clean labels may also be a 1-D array of shape (n_samples,).
        label_model : ManifoldLabelModel, optional
            Fitted on the same space and LFs; supplies ``beta = weights_``.

        Returns
        -------
        self : KernelManifoldRegressor

        Raises
        ------
        ValueError
            On bad parameters, shapes, points off the manifold, or a missing/unfitted
            label model for 3-D ``lf_outputs``.
        """
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}; got {self.kernel!r}.")
        nu = check_scalar(self.nu, "nu", low=0.0, low_inclusive=False)
        X = check_features(X)
        T = self._as_points(lf_outputs)
        if T.ndim == 3:
            if label_model is None or not hasattr(label_model, "weights_"):
                raise ValueError(
                    "label_model must be a fitted ManifoldLabelModel when lf_outputs has "
                    f"shape (n_samples, n_lfs, ambient_dim); got {label_model!r}. Fit it "
                    "on these LF outputs first, or pass clean labels of shape "
                    "(n_samples, ambient_dim)."
                )
            if label_model.space != self.space:
                raise ValueError(
                    f"label_model is fitted on {label_model.space!r}, not {self.space!r}."
                )
            T = check_manifold_outputs(
                T, self.space, name="lf_outputs", n_lfs=label_model.n_lfs_
            )
            beta = np.asarray(label_model.weights_, dtype=np.float64)
        elif T.ndim == 2:
            if label_model is not None:
                raise ValueError(
                    "label_model must be None when lf_outputs are clean labels of shape "
                    f"(n_samples, ambient_dim); got shape {T.shape} and a label model."
                )
            T = check_points(T, self.space, name="lf_outputs")[:, None, :]
            beta = np.ones(1)
        else:
            raise ValueError(
                "lf_outputs must have shape (n_samples, n_lfs, ambient_dim) or "
                f"(n_samples, ambient_dim); got {T.shape}."
            )
        if T.shape[0] != X.shape[0]:
            raise ValueError(
                f"X and lf_outputs must have the same number of rows; got {X.shape[0]} "
                f"and {T.shape[0]}."
            )
        self.gamma_ = resolve_gamma(X, self.gamma)
        K = kernel_matrix(X, X, self.kernel, self.gamma_)
        self.factor_ = ridge_factor(K, nu)
        self.X_fit_ = X
        self.n_features_in_ = X.shape[1]
        self.targets_ = T
        self.beta_ = beta
        return self

    def _as_points(self, Y: Any) -> np.ndarray:
        # A 1-D target is a column of points when the space is a line (scikit-learn's
        # regression convention); elsewhere the shape check refuses it.
        Y = np.asarray(Y)
        return Y[:, None] if Y.ndim == 1 and self.space.ambient_dim == 1 else Y

    def _validate_state(self) -> None:
        """Check a loaded fitted state (for ``load``): shapes agree, arrays finite."""
        X = check_state_array(state_attr(self, "X_fit_"), "X_fit_", (None, None))
        n, p = X.shape
        if state_int(self, "n_features_in_", low=1) != p:
            raise ValueError(
                f"the fitted attribute n_features_in_ is {self.n_features_in_} but "
                f"X_fit_ has {p} columns."
            )
        if state_float(self, "gamma_") < 0:
            raise ValueError(
                f"the fitted attribute gamma_ must be >= 0; got {self.gamma_}."
            )
        factor = state_attr(self, "factor_", tuple)
        if len(factor) != 2:
            raise ValueError(
                "the fitted attribute factor_ must be a (Cholesky factor, lower) pair; "
                f"got {len(factor)} entries."
            )
        check_state_array(factor[0], "factor_[0]", (n, n))
        targets = check_state_array(
            state_attr(self, "targets_"),
            "targets_",
            (n, None, self.space.ambient_dim),
            finite=None,  # NaN rows are abstains
        )
        if np.isinf(targets).any():
            raise ValueError("the fitted attribute targets_ holds an infinite entry.")
        check_state_array(state_attr(self, "beta_"), "beta_", (targets.shape[1],))

    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels, shape (n_new, ambient_dim)."""
        check_is_fitted(self, "factor_")
        X = check_features(X, n_features=self.n_features_in_, estimator=self)
        alpha = ridge_weights(
            self.factor_, kernel_matrix(self.X_fit_, X, self.kernel, self.gamma_)
        ).T
        n, m, D = self.targets_.shape
        # a training row counts only if it has a vote of positive weight
        useful = (~np.isnan(self.targets_[:, :, 0]) & (self.beta_ > 0)[None, :]).any(1)
        w = np.maximum(alpha, 0.0) * useful[None, :]  # (n_new, n_train); see Notes
        none = np.flatnonzero(w.sum(axis=1) <= 0)
        if none.size:
            # No positive kernel weight on a useful row (e.g. a query far from every
            # training row): the nearest useful training row in feature space, the
            # kernel's limit for that query.
            cand = np.flatnonzero(useful)
            if cand.size == 0:
                raise ValueError(
                    "No training row has a vote of positive weight; refit on rows "
                    "where some labeling function voted."
                )
            d2 = squared_distances(X[none], self.X_fit_[cand])
            w[none, cand[np.argmin(d2, axis=1)]] = 1.0
        points = self.targets_.reshape(n * m, D)
        weights = (w[:, :, None] * self.beta_[None, None, :]).reshape(len(X), n * m)
        present = ~np.isnan(points[:, 0])
        points, weights = points[present], weights[:, present]
        block = max(1, _MAX_BLOCK // max(1, points.shape[0] * D))
        out = np.empty((len(X), D))
        for s in range(0, len(X), block):
            wb = weights[s : s + block]
            pts = np.broadcast_to(points, (len(wb), *points.shape))
            out[s : s + block] = self.space.frechet_mean(
                pts, wb, tol=self.tol, max_iter=self.max_iter
            )
        return out

    def score(self, X: Any, y: Any) -> float:
        """Negative mean squared geodesic error to the labels ``y`` (higher is better).

        ``y`` has shape (n_samples, ambient_dim) (or (n_samples,) on a line), named as
        in scikit-learn's ``score(X, y)``.
        """
        pred = self.predict(X)
        y = check_points(self._as_points(y), self.space, name="y")
        return -float(np.mean(self.space.squared_dist(pred, y)))
