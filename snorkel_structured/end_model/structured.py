"""Kernel structured predictor on a finite label space (Ciliberto et al. 2016).

f(x) = argmin over candidates t of sum_i alpha_i(x) sum_l w_il d^2(t, y_l), with
alpha(x) = (K + n nu I)^-1 K_x. With clean labels, w_i is the one-hot vector of y_i
(the paper's eq. 2); with noise-aware loss weights, w_i is the Q^-1 row of x_i's
pseudolabel (eq. 6).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from snorkel_structured._persistence import (
    PersistenceMixin,
    check_state_array,
    state_attr,
    state_float,
    state_int,
)
from snorkel_structured._validation import check_is_fitted, check_scalar, check_seed
from snorkel_structured.end_model._kernels import (
    EXACT_MAX_SAMPLES,
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
)
from snorkel_structured.end_model._streaming import iter_feature_chunks
from snorkel_structured.noise_aware import _weights_from_frame
from snorkel_structured.spaces.finite import FiniteMetricSpace

__all__ = ["KernelStructuredPredictor"]

_CANDIDATES = ("support", "all")
_METRICS = ("accuracy", "neg_sq_dist")


def _check_labels(y: Any, r: int, n: int, name: str = "y") -> np.ndarray:
    arr = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-D array of label indices or a loss-weights DataFrame; "
            f"got shape {arr.shape}."
        )
    if arr.dtype.kind not in "iu" and not (
        arr.dtype.kind == "f"
        and np.isfinite(arr).all()
        and (arr == np.round(arr)).all()
    ):
        raise ValueError(
            f"Unknown label type: {name} must hold integer label indices; got dtype "
            f"{arr.dtype}. Encode items with space.encode(...)."
        )
    if arr.shape[0] != n:
        raise ValueError(
            f"X has {n} rows but {name} has {arr.shape[0]}; they must match."
        )
    out = arr.astype(np.int64)
    bad = (out < 0) | (out >= r)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(
            f"{name} holds an unknown label: entry {i} is {out[i]}; labels must be in "
            f"[0, {r}) (abstains have no place in clean labels)."
        )
    return out


def _upgrade_exact_state(model: Any) -> None:
    """Files written before the low-rank kernels (issue 15) hold an exact solve and
    no ``n_components_`` / ``nu_``: fill them in (0, and the saved ``nu``)."""
    state = vars(model)
    if "n_components_" in state or "X_fit_" not in state:
        return
    model.n_components_ = 0
    if "nu_" not in state and not isinstance(model.nu, str):
        model.nu_ = model.nu


class KernelStructuredPredictor(PersistenceMixin, BaseEstimator):
    """Kernel ridge structured prediction over a finite label space, noise-aware.

    Parameters
    ----------
    space : FiniteMetricSpace
        The label space; predictions are indices into it.
    kernel : {"rbf", "linear"}, default="rbf"
    gamma : float, "scale" or "auto", default="auto"
        RBF bandwidth. "scale" is 1 / (n_features * X.var()) on the training data;
        "auto" picks, among "scale" times 2^-3 ... 2^3, the bandwidth of least
        generalized cross-validation (GCV) error on a seeded subsample of at most
        2,000 training rows with a Nystroem kernel of at most 500 landmarks (exact
        below 500 rows).
    nu : float or "auto", default="auto"
        Ridge parameter; the system solved is K + n nu I. "auto" picks nu on a
        log-grid from 1e-10 to 10 by GCV (with the bandwidth, on the subsample
        above; refined on the full system when it is low-rank).
    n_components : int, "auto" or None, default="auto"
        None: the exact n x n kernel solve. An int m: a Nystroem kernel on m landmark
        rows drawn uniformly without replacement (all rows, in order, when m >= n:
        then the solution is the exact one). "auto": exact up to 2,000 training rows,
        Nystroem with 1,000 landmarks above (fit O(n m^2) time and O(m^2) memory
        beyond X; prediction O(m) per row instead of O(n)).
    candidates : {"support", "all"}, default="support"
        Labels the argmin runs over: those in the training targets (the support of the
        loss weights, or the labels seen) or the whole space.
    chunk_size : int, default=2048
        Test rows scored at once; memory is O(n_basis * chunk_size).
    seed : int, Generator or None, default=0
        Landmarks and the GCV subsample. A Generator passed in advances.

    Attributes
    ----------
    X_fit_ : ndarray of shape (n_basis, n_features)
        The rows the kernel expansion runs over: all training rows (exact solve) or
        the landmarks.
    gamma_ : float
        The RBF bandwidth used (0.0 for the linear kernel).
    nu_ : float
        The ridge parameter used.
    n_components_ : int
        Number of landmarks of the low-rank kernel; 0 for the exact solve.
    labels_ : ndarray of int64 of shape (k,)
        Label indices the training targets put weight on.
    candidates_ : ndarray of int64 of shape (n_candidates,)
    dual_coef_ : ndarray of shape (n_basis, n_candidates)
        Dual coefficients on ``X_fit_``: (K + n nu I)^-1 W S[labels_, candidates_]
        for the exact solve.
    n_features_in_ : int

    See Also
    --------
    loss_weights : noise-aware targets for ``fit``.

    Notes
    -----
    Scores are F(x, t) = alpha(x)^T W S_cand with alpha(x) = (K + n nu I)^-1 K_x, W the
    (n_train, k) target weights (one-hot for clean labels, Q^-1 rows for loss weights)
    and S_cand the squared distances from ``labels_`` to the candidates. By symmetry of
    K + n nu I this equals K_x^T [(K + n nu I)^-1 W S_cand]; the bracket is one
    Cholesky solve at fit time, so predicting is a kernel block, one matrix product and an argmin per chunk of rows.

    **Low rank.** With landmarks Z (m rows), the Nystroem kernel is
    K~ = K_nZ K_ZZ^+ K_Zn = Phi Phi^T with Phi = K_nZ N, N N^T = K_ZZ^+. Kernel ridge on
    K~ has the same form, alpha~(x) = (K~ + n nu I)^-1 K~_x, and its scores are
    k_Z(x)^T N (Phi^T Phi + n nu I)^-1 Phi^T W S_cand: dual coefficients on the
    landmarks. Phi^T Phi, Phi^T W and W^T W are sums over rows, accumulated block by
    block. The targets W enter linearly, so noise-aware loss weights (Q^-1 rows) act
    on the low-rank solution exactly as on the exact one.

    **GCV.** With H the hat matrix of the ridge fit, GCV(nu) = n ||(I - H) Y||^2 /
    (n - tr H)^2 (Golub, Heath, Wahba 1979), Y = W S_cand centered over candidates.
    From one eigendecomposition (of K, or of Phi^T Phi) it costs O(r k) per nu.

    References
    ----------
    Ciliberto, Rosasco, Rudi. A Consistent Regularization Approach for Structured
    Prediction. NeurIPS 2016.

    Examples
    --------
    >>> import numpy as np, snorkel_structured as ss
    >>> space = ss.Permutations(3)
    >>> X = np.array([[0.0], [0.1], [1.0], [1.1]])
    >>> model = ss.KernelStructuredPredictor(space, gamma=1.0).fit(X, [0, 0, 5, 5])
    >>> model.predict([[0.05], [1.05]]).tolist()
    [0, 5]
    """

    def __init__(
        self,
        space: FiniteMetricSpace,
        *,
        kernel: str = "rbf",
        gamma: float | str = "auto",
        nu: float | str = "auto",
        n_components: int | str | None = "auto",
        candidates: str = "support",
        chunk_size: int = 2048,
        seed: int | np.random.Generator | None = 0,
    ) -> None:
        self.space = space
        self.kernel = kernel
        self.gamma = gamma
        self.nu = nu
        self.n_components = n_components
        self.candidates = candidates
        self.chunk_size = chunk_size
        self.seed = seed

    def fit(
        self, X: Any, y: Any, *, progress_bar: bool = False
    ) -> KernelStructuredPredictor:
        """Fit on clean labels or on noise-aware loss weights.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of int of shape (n_samples,) or DataFrame
            Clean label indices into ``space``, or a loss-weights DataFrame as written
            by :func:`loss_weights` (columns ``"pseudolabel"`` and one per support
            label; other weighted targets in that format work too).
        progress_bar : bool, default=False
            Show a tqdm bar over the rows of the low-rank kernel (``n_components``).

        Returns
        -------
        self
        """
        if not isinstance(self.space, FiniteMetricSpace):
            raise TypeError(
                f"space must be a FiniteMetricSpace; got {type(self.space).__name__}."
            )
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}; got {self.kernel!r}.")
        if self.candidates not in _CANDIDATES:
            raise ValueError(
                f"candidates must be one of {_CANDIDATES}; got {self.candidates!r}."
            )
        auto_nu = isinstance(self.nu, str)
        if auto_nu and self.nu != "auto":
            raise ValueError(f"nu must be a number >= 0 or 'auto'; got {self.nu!r}.")
        nu = None if auto_nu else check_scalar(self.nu, "nu", low=0.0)
        auto_gamma = isinstance(self.gamma, str) and self.gamma == "auto"
        if not (self.gamma in ("scale", "auto") or self.gamma is None):
            check_scalar(self.gamma, "gamma", low=0.0, low_inclusive=False)
        check_n_components(self.n_components)
        check_scalar(self.chunk_size, "chunk_size", kind="int", low=1)
        rng = check_seed(self.seed)
        Xa = check_features(X)
        check_kernel_range(Xa, self.kernel)
        n, r = Xa.shape[0], len(self.space)
        if isinstance(y, pd.DataFrame):
            if y.shape[0] != n:
                raise ValueError(
                    f"X has {n} rows but the loss-weights DataFrame has {y.shape[0]}; "
                    "they must match."
                )
            if isinstance(X, pd.DataFrame) and not X.index.equals(y.index):
                raise ValueError(
                    "X and the loss-weights DataFrame have different indexes; align "
                    "them (e.g. weights.loc[X.index]) before fitting."
                )
            W, labels = _weights_from_frame(y, self.space)
        else:
            yi = _check_labels(y, r, n)
            labels, inverse = np.unique(yi, return_inverse=True)
            W = np.zeros((n, labels.size))
            W[np.arange(n), inverse] = 1.0
        cand = np.arange(r, dtype=np.int64) if self.candidates == "all" else labels
        # Only the training labels' rows of S: large spaces never build the (r, r) matrix.
        S_rows = self.space.squared_distance_rows(labels)[:, cand]
        # The ridge is fitted to W (n, k); the scores are linear in the targets, so the
        # dual coefficients of W S_rows are those of W times S_rows. GCV measures the
        # residual of the scores with each row's mean over candidates removed (the
        # argmin ignores it): targets W A with A = S_rows centered over candidates.
        A = S_rows - S_rows.mean(axis=1, keepdims=True)
        base_gamma = resolve_gamma(Xa, self.gamma) if self.kernel == "rbf" else 0.0
        m = choose_n_components(self.n_components, n, EXACT_MAX_SAMPLES)
        nu_grid = NU_GRID * kernel_scale(Xa, self.kernel)
        gamma = base_gamma
        if auto_nu or (self.kernel == "rbf" and auto_gamma):
            gammas = base_gamma * GAMMA_GRID if auto_gamma else np.array([base_gamma])
            if self.kernel != "rbf":
                gammas = np.array([0.0])
            nus = nu_grid if auto_nu else np.array([nu])
            gamma, nu = select_gamma_nu(Xa, W, A, self.kernel, gammas, nus, rng)
        if m is None:
            # exact solve: one Cholesky factorization
            factor = ridge_factor(kernel_matrix(Xa, Xa, self.kernel, gamma), nu)
            dual = ridge_weights(factor, W)
            basis_X = Xa
        else:
            if nu <= 0:
                raise ValueError(
                    "nu must be > 0 with a low-rank kernel (n_components); got "
                    f"nu={nu!r}."
                )
            basis_X = Xa[pick_landmarks(n, m, rng)]
            system, _, _ = nystroem_system(
                Xa, basis_X, W, self.kernel, gamma, progress_bar=progress_bar
            )
            if auto_nu:  # refine on the full system: free after its eigendecomposition
                nu = float(nu_grid[int(np.argmin(system.gcv(n * nu_grid, A)))])
            dual = system.dual(n * nu)
        self.dual_coef_ = dual @ S_rows
        self.X_fit_ = basis_X
        self.gamma_ = float(gamma)
        self.nu_ = float(nu)
        self.n_components_ = int(basis_X.shape[0]) if m is not None else 0
        self.labels_ = labels.astype(np.int64)
        self.candidates_ = cand.astype(np.int64)
        self.n_features_in_ = Xa.shape[1]
        return self

    def _validate_state(self) -> None:
        """Check a loaded fitted state (for ``load``): shapes agree, arrays finite."""
        _upgrade_exact_state(self)
        r = len(self.space)
        n, p = check_kernel_state(self)
        if state_float(self, "nu_") < 0:
            raise ValueError(f"the fitted attribute nu_ must be >= 0; got {self.nu_}.")
        m = state_int(self, "n_components_", low=0)
        if m not in (0, n):
            raise ValueError(
                f"the fitted attribute n_components_ is {m} but X_fit_ has {n} rows "
                "(they match for a low-rank kernel; 0 means the exact solve)."
            )
        check_state_array(
            state_attr(self, "labels_"), "labels_", (None,), kind="i", low=0, high=r - 1
        )
        cand = check_state_array(
            state_attr(self, "candidates_"),
            "candidates_",
            (None,),
            kind="i",
            low=0,
            high=r - 1,
        )
        check_state_array(state_attr(self, "dual_coef_"), "dual_coef_", (n, cand.size))

    def _scores_chunks(
        self, X: Any, progress_bar: bool = False
    ) -> Iterator[np.ndarray]:
        check_is_fitted(self, "dual_coef_")
        # bounded memory: O(chunk_size * n_basis) per block, the input read by blocks
        for _, Xc in iter_feature_chunks(
            X,
            n_features=self.n_features_in_,
            estimator=self,
            chunk_size=self.chunk_size,
            progress_bar=progress_bar,
        ):
            K_x = kernel_matrix(Xc, self.X_fit_, self.kernel, self.gamma_)
            with np.errstate(over="ignore", invalid="ignore"):
                scores = K_x @ self.dual_coef_
            yield check_finite_output(scores, "decision values")

    def decision_function(self, X: Any, *, progress_bar: bool = False) -> np.ndarray:
        """Scores F(x, t) (estimated loss of predicting t, up to a per-row constant;
        lower is better).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        progress_bar : bool, default=False
            Show a tqdm progress bar over the chunks of rows.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_candidates)
            Columns follow ``candidates_``.
        """
        return np.concatenate(list(self._scores_chunks(X, progress_bar)), axis=0)

    def predict(self, X: Any, *, progress_bar: bool = False) -> np.ndarray:
        """Predicted label indices into ``space``, computed ``chunk_size`` rows at a
        time (memory O(chunk_size * n_basis) beyond the output).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A NumPy array or ``np.memmap`` is read block by block (never copied
            whole), so 10^6+ rows stream with bounded memory.
        progress_bar : bool, default=False
            Show a tqdm progress bar over the chunks of rows (as Snorkel's appliers).

        Returns
        -------
        y_pred : ndarray of int64 of shape (n_samples,)
        """
        parts = [np.argmin(s, axis=1) for s in self._scores_chunks(X, progress_bar)]
        return self.candidates_[np.concatenate(parts)]

    def score(self, X: Any, y: Any, *, metric: str = "accuracy") -> float:
        """Accuracy, or the negative mean squared distance, against clean labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of int of shape (n_samples,)
            True label indices.
        metric : {"accuracy", "neg_sq_dist"}, default="accuracy"
            "accuracy" is the fraction predicted exactly; "neg_sq_dist" is
            -mean d^2(f(x), y), the structured loss the model minimizes (higher is
            better, 0 is perfect).

        Returns
        -------
        score : float
        """
        if metric not in _METRICS:
            raise ValueError(f"metric must be one of {_METRICS}; got {metric!r}.")
        pred = self.predict(X)
        yi = _check_labels(y, len(self.space), pred.shape[0])
        if metric == "accuracy":
            return float(np.mean(pred == yi))
        return -float(np.mean(self.space.dist(pred, yi) ** 2))
