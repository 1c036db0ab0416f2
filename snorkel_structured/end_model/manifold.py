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
    check_seed,
)
from snorkel_structured.end_model._frechet import frechet_means, truncate_weights
from snorkel_structured.end_model._kernels import (
    BLOCK_FLOATS,
    EXACT_MAX_SAMPLES_MANIFOLD,
    GAMMA_GRID,
    KERNELS,
    NU_GRID,
    check_features,
    check_finite_output,
    check_kernel_range,
    check_kernel_state,
    check_n_components,
    choose_n_components,
    kernel_matrix,
    kernel_scale,
    nystroem_system,
    pick_landmarks,
    resolve_gamma,
    ridge_factor,
    ridge_weights,
    select_gamma_nu,
    squared_distances,
)
from snorkel_structured.end_model._streaming import iter_feature_chunks
from snorkel_structured.end_model.structured import _upgrade_exact_state

__all__ = ["KernelManifoldRegressor"]


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
    gamma : float, "scale" or "auto", default="scale"
        RBF bandwidth; ``"scale"`` = 1 / (n_features * X.var()); ``"auto"`` picks a
        multiple 2^-3 ... 2^3 of it by generalized cross-validation (GCV) of a kernel
        ridge fit of the training targets' extrinsic means (as
        :class:`KernelStructuredPredictor`).
    nu : float or "auto", default=1e-3
        Ridge regularization (``K + n nu I``); ``"auto"``: by GCV as above.
    tol : float, default=1e-10
        Gradient tolerance of each Frechet mean (as ``space.frechet_mean``).
    max_iter : int, default=100
        Newton steps per Frechet mean before a row is handed to
        ``space.frechet_mean``.
    n_components : int, "auto" or None, default="auto"
        None: exact n x n kernel solve; an int m: Nystroem kernel on m landmark rows
        (all rows when m >= n: the exact solution); "auto": exact up to 5,000
        training rows, 1,000 landmarks above.
    weight_tol : float in [0, 1), default=1e-3
        Per query, keep only the training rows holding the top ``1 - weight_tol`` of
        the positive kernel weight (0 keeps every row). The prediction then moves by
        at most ``eps * R`` on Euclidean and hyperbolic space (``eps <= weight_tol``
        the dropped weight fraction, ``R`` the largest distance from the prediction to
        a dropped target), see Notes.
    chunk_size : int, default=512
        Queries handled at once (fewer if ``chunk_size * n_train`` would pass 4M
        floats): memory is bounded whatever the number of queries.
    seed : int, Generator or None, default=0
        Landmarks and the GCV subsample.

    Attributes
    ----------
    X_fit_ : ndarray of shape (n_samples, n_features)
    n_features_in_ : int
    targets_ : ndarray of shape (n_samples, n_lfs, ambient_dim)
        Training LF outputs (NaN = abstain), or clean labels with ``n_lfs = 1``.
    beta_ : ndarray of shape (n_lfs,)
    gamma_ : float
    nu_ : float
    n_components_ : int
        Landmarks of the low-rank kernel; 0 for the exact solve.
    factor_ : tuple or None
        Cholesky factor of ``K + n nu I`` (exact solve), else None.
    landmarks_, alpha_basis_, alpha_coef_ : ndarray or None
        Low-rank solve: ``alpha(x) = alpha_coef_ @ (alpha_basis_^T k(landmarks_, x))``
        with shapes (m, n_features), (m, r), (n_samples, r); None for the exact solve.

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

    **Truncation and its error bound.** With normalized weights and ``eps`` the
    dropped fraction, the truncated mean ``m'`` zeroes the gradient of the kept part,
    so the gradient of the full objective ``F = 1/2 sum_i w_i d^2(z, y_i)`` at ``m'``
    has norm at most ``eps * R``. F is 1-strongly geodesically convex on R^d and H^d,
    hence ``d(m, m') <= eps * R``. On the sphere the bound is ``eps * R / (rho cot
    rho)`` when all points lie within ``rho < pi / 2`` of ``m'`` and ``m``.

    **Solver.** All queries of a chunk at once: Riemannian Newton steps from the
    projected extrinsic mean, a convergence check per row, step halving where the
    objective would rise; rows not converged after ``max_iter`` steps go to
    ``space.frechet_mean``. Cost O(n_query * n_train) for the weights plus
    O(n_query * k) per Newton step, k the rows kept.

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
        nu: float | str = 1e-3,
        tol: float = 1e-10,
        max_iter: int = 100,
        n_components: int | str | None = "auto",
        weight_tol: float = 1e-3,
        chunk_size: int = 512,
        seed: int | np.random.Generator | None = 0,
    ) -> None:
        self.space = space
        self.kernel = kernel
        self.gamma = gamma
        self.nu = nu
        self.tol = tol
        self.max_iter = max_iter
        self.n_components = n_components
        self.weight_tol = weight_tol
        self.chunk_size = chunk_size
        self.seed = seed

    def fit(
        self,
        X: Any,
        lf_outputs: Any,
        label_model: Any = None,
        *,
        progress_bar: bool = False,
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
        progress_bar : bool, default=False
            Show a tqdm bar over the rows of the low-rank kernel (``n_components``).

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
        auto_nu = isinstance(self.nu, str)
        if auto_nu and self.nu != "auto":
            raise ValueError(f"nu must be a number > 0 or 'auto'; got {self.nu!r}.")
        nu = (
            None
            if auto_nu
            else check_scalar(self.nu, "nu", low=0.0, low_inclusive=False)
        )
        auto_gamma = isinstance(self.gamma, str) and self.gamma == "auto"
        if not (self.gamma in ("scale", "auto") or self.gamma is None):
            check_scalar(self.gamma, "gamma", low=0.0, low_inclusive=False)
        check_n_components(self.n_components)
        check_scalar(
            self.weight_tol, "weight_tol", low=0.0, high=1.0, high_inclusive=False
        )
        check_scalar(self.tol, "tol", low=0.0)
        check_scalar(self.max_iter, "max_iter", kind="int", low=1)
        check_scalar(self.chunk_size, "chunk_size", kind="int", low=1)
        rng = check_seed(self.seed)
        X = check_features(X)
        check_kernel_range(X, self.kernel)
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
        n = X.shape[0]
        gamma = resolve_gamma(X, self.gamma) if self.kernel == "rbf" else 0.0
        if auto_nu or auto_gamma:
            # GCV on the targets' extrinsic means (a cheap stand-in for the manifold
            # loss; the hat matrix, not the targets, carries the choice)
            Y = _extrinsic_targets(T, beta)
            gammas = gamma * GAMMA_GRID if auto_gamma else np.array([gamma])
            if self.kernel != "rbf":
                gammas = np.array([0.0])
            nus = NU_GRID * kernel_scale(X, self.kernel) if auto_nu else np.array([nu])
            gamma, nu = select_gamma_nu(X, Y, None, self.kernel, gammas, nus, rng)
        m = choose_n_components(self.n_components, n, EXACT_MAX_SAMPLES_MANIFOLD)
        self.factor_ = None
        self.landmarks_ = self.alpha_basis_ = self.alpha_coef_ = None
        if m is None:
            self.factor_ = ridge_factor(kernel_matrix(X, X, self.kernel, gamma), nu)
        else:
            landmarks = X[pick_landmarks(n, m, rng)]
            system, _, PhiV = nystroem_system(
                X,
                landmarks,
                np.zeros((n, 1)),
                self.kernel,
                gamma,
                keep_features=True,
                progress_bar=progress_bar,
            )
            # alpha(x) = Phi (Phi^T Phi + n nu I)^-1 phi(x), on the eigenbasis
            self.landmarks_ = landmarks
            self.alpha_basis_ = system.basis
            self.alpha_coef_ = PhiV / (system.evals + n * nu)[None, :]
        self.gamma_ = float(gamma)
        self.nu_ = float(nu)
        self.n_components_ = 0 if m is None else int(m)
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
        if "n_components_" not in vars(self) and "factor_" in vars(self):
            _upgrade_exact_state(self)  # a file from before the low-rank kernels
            self.landmarks_ = self.alpha_basis_ = self.alpha_coef_ = None
        n, p = check_kernel_state(self)
        if state_float(self, "nu_") <= 0:
            raise ValueError(f"the fitted attribute nu_ must be > 0; got {self.nu_}.")
        m = state_int(self, "n_components_", low=0)
        if m == 0:
            factor = state_attr(self, "factor_", tuple)
            if len(factor) != 2:
                raise ValueError(
                    "the fitted attribute factor_ must be a (Cholesky factor, lower) "
                    f"pair; got {len(factor)} entries."
                )
            check_state_array(factor[0], "factor_[0]", (n, n))
        else:
            check_state_array(state_attr(self, "landmarks_"), "landmarks_", (m, p))
            basis = check_state_array(
                state_attr(self, "alpha_basis_"), "alpha_basis_", (m, None)
            )
            check_state_array(
                state_attr(self, "alpha_coef_"), "alpha_coef_", (n, basis.shape[1])
            )
        targets = check_state_array(
            state_attr(self, "targets_"),
            "targets_",
            (n, None, self.space.ambient_dim),
            finite=None,  # NaN rows are abstains
        )
        if np.isinf(targets).any():
            raise ValueError("the fitted attribute targets_ holds an infinite entry.")
        check_state_array(state_attr(self, "beta_"), "beta_", (targets.shape[1],))

    def _alpha(self, Xc: np.ndarray) -> np.ndarray:
        """Kernel ridge weights alpha(x) of shape (n_rows, n_train)."""
        with np.errstate(over="ignore", invalid="ignore"):
            if self.n_components_ == 0:
                K_x = kernel_matrix(self.X_fit_, Xc, self.kernel, self.gamma_)
                alpha = ridge_weights(self.factor_, K_x).T
            else:
                K_x = kernel_matrix(Xc, self.landmarks_, self.kernel, self.gamma_)
                alpha = (K_x @ self.alpha_basis_) @ self.alpha_coef_.T
        return check_finite_output(alpha, "kernel ridge weights")

    def predict(self, X: Any, *, progress_bar: bool = False) -> np.ndarray:
        """Predicted labels: weighted Frechet means of the training targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A NumPy array or ``np.memmap`` is read block by block.
        progress_bar : bool, default=False
            Show a tqdm progress bar over the chunks of queries.

        Returns
        -------
        y_pred : ndarray of shape (n_samples, ambient_dim)
        """
        check_is_fitted(self, "n_components_")
        n, m, D = self.targets_.shape
        # a training row counts only if it has a vote of positive weight
        useful = (~np.isnan(self.targets_[:, :, 0]) & (self.beta_ > 0)[None, :]).any(1)
        cand = np.flatnonzero(useful)
        if cand.size == 0:
            raise ValueError(
                "No training row has a vote of positive weight; refit on rows "
                "where some labeling function voted."
            )
        filler = self.space.origin  # any point: absent votes get weight 0
        block = max(1, min(self.chunk_size, BLOCK_FLOATS // max(1, n)))
        parts = []
        for _, Xc in iter_feature_chunks(
            X,
            n_features=self.n_features_in_,
            estimator=self,
            chunk_size=block,
            progress_bar=progress_bar,
        ):
            w = np.maximum(self._alpha(Xc), 0.0) * useful[None, :]  # see Notes
            none = np.flatnonzero(w.sum(axis=1) <= 0)
            if none.size:
                # No positive kernel weight on a useful row (e.g. a query far from
                # every training row): the nearest useful training row in feature
                # space, the kernel's limit for that query.
                d2 = squared_distances(Xc[none], self.X_fit_[cand])
                w[none, cand[np.argmin(d2, axis=1)]] = 1.0
            idx, kept, _ = truncate_weights(w, self.weight_tol)
            pts = self.targets_[idx].reshape(len(Xc), -1, D)  # (c, k * m, D)
            wts = (kept[:, :, None] * self.beta_[None, None, :]).reshape(len(Xc), -1)
            absent = np.isnan(pts[..., 0])
            wts = np.maximum(wts, 0.0)
            if absent.any():
                wts[absent] = 0.0
                pts[absent] = filler
            parts.append(
                frechet_means(
                    self.space, pts, wts, tol=self.tol, max_iter=self.max_iter
                )
            )
        return np.concatenate(parts, axis=0)

    def score(self, X: Any, y: Any) -> float:
        """Negative mean squared geodesic error to the labels ``y`` (higher is better).

        ``y`` has shape (n_samples, ambient_dim) (or (n_samples,) on a line), named as
        in scikit-learn's ``score(X, y)``.
        """
        pred = self.predict(X)
        y = check_points(self._as_points(y), self.space, name="y")
        return -float(np.mean(self.space.squared_dist(pred, y)))


def _extrinsic_targets(T: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Per training row, the beta-weighted average of its votes' coordinates (NaN
    votes and non-positive weights left out; 0 for a row with none): (n, ambient)."""
    present = ~np.isnan(T[:, :, 0]) & (beta > 0)[None, :]
    w = present * np.maximum(beta, 0.0)[None, :]
    tot = w.sum(axis=1, keepdims=True)
    w = w / np.where(tot > 0, tot, 1.0)
    return np.einsum("nm,nmd->nd", w, np.where(present[..., None], T, 0.0))
