"""Label model for manifold-valued labeling functions (paper section 5)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from snorkel_structured import _warnings
from snorkel_structured._chunks import (
    is_dask_collection,
    reduce_stats,
)
from snorkel_structured._persistence import (
    PersistenceMixin,
)
from snorkel_structured._validation import (
    check_manifold_outputs,
    check_points,
    check_seed,
    warn_silent_lfs,
)
from snorkel_structured.estimators._manifold_stats import (
    LabeledManifoldStats,
    ManifoldStats,
)
from snorkel_structured.estimators.robust_manifold import (
    MAX_OUTLIER_RATE,
    fit_background,
    heldout_loglik,
    inlier_floor,
    outlier_screen,
    quantile_sq_dist,
    robust_em,
)
from snorkel_structured.estimators.triplet import (
    pair_sq_dist_estimate,
    triplet_estimate,
    uws_estimate,
)
from snorkel_structured.exceptions import ConvergenceWarning, IdentifiabilityWarning
from snorkel_structured.label_model._dependency_groups import (
    DEPENDENCE_MIN_RATIO,
    check_dependencies,
    dependency_groups,
    is_auto,
)
from snorkel_structured.label_model._manifold_checks import (
    ManifoldChecks,
    _as_outputs,
)
from snorkel_structured.label_model._manifold_predict import (
    ManifoldPredictMethods,
    _combine,
)
from snorkel_structured.label_model._manifold_shrinkage import eb_shrink
from snorkel_structured.noise.manifold import (
    make_noise,
)
from snorkel_structured.spaces.manifolds import Euclidean, Hyperbolic, Sphere

__all__ = ["ManifoldLabelModel"]

# The robust fit iterates over the raw rows: beyond this many it uses a seeded sample.
ROBUST_MAX_ROWS = 50_000
# The held-out choice fits the robust model twice (once per fold) on at most this many
# rows in all, with fewer EM iterations: it only has to rank two models.
SELECT_MAX_ROWS = 10_000
SELECT_MAX_ITER = 8
# The held-out comparison runs only when the plain model's far-out votes (beyond its
# 1 - SCREEN_LEVEL predictive quantile) are more than chance at this p-value.
SCREEN_LEVEL = 1e-3
# On the sphere and hyperbolic space "auto" considers the robust family only while every
# LF's plain E d^2 per dimension stays below this (squared curvature radii).
MAX_CURVED_VARIANCE = 1.0
# Median squared distance between Euclidean LFs' votes below which the floors of the
# robust model (1e-12) decide the weights; targets that small should be rescaled.
TINY_SQ_DIST = 1e-8
# Weight exponents p (w_a ∝ E d^2_a^-p) a labeled dev set chooses among: 0 is the
# unweighted Frechet mean, 1 inverse variance, 2 the paper's beta^2, 4 nearly the best LF.
DEV_EXPONENTS = (0.0, 0.5, 1.0, 2.0, 4.0)


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


def _check_dependencies(dependencies: Any, n_lfs: int) -> np.ndarray:
    """Declared pairs as an (n_dependencies, 2) int array, a < b (shared validator)."""
    if dependencies is not None and not isinstance(dependencies, Iterable):
        raise ValueError(
            "dependencies must be pairs of LF indices like [(0, 1), (2, 3)]; got "
            f"{dependencies!r}."
        )
    pairs = check_dependencies(dependencies, n_lfs)
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def _floored(est: Any, noise: Any, e_min: float) -> Any:
    """``est`` with every ``E d^2`` below ``e_min`` raised to it (robust inliers).

    A floored LF's ``log_sq_dist_var`` is set to 0: the floor is a bound, not an
    estimate, so shrinkage leaves it (and the ties among floored LFs) alone; it
    counts in ``past_noiseless`` (bounds, which the fit warns of).
    """
    low = est.expected_sq_dist < e_min
    if not low.any():
        return est
    e = np.where(low, e_min, est.expected_sq_dist)
    # only the floored LFs are inverted: another may sit an ulp past the family's
    # largest E d^2 (a pure-noise LF), which the inversion would refuse
    scale = np.array(est.noise_scale, dtype=np.float64, copy=True)
    scale[low] = noise.scale_from_expected_sq_dist(e[low])
    return dataclasses.replace(
        est,
        noise_scale=scale,
        expected_sq_dist=e,
        expected_invariant=np.asarray(noise.expected_invariant(scale), dtype=float),
        log_sq_dist_var=np.where(low, 0.0, est.log_sq_dist_var),
        log_sq_dist_side_var=None
        if est.log_sq_dist_side_var is None
        else np.where(low[:, None], 0.0, est.log_sq_dist_side_var),
        past_noiseless=low if est.past_noiseless is None else est.past_noiseless | low,
    )


class ManifoldLabelModel(
    ManifoldChecks, ManifoldPredictMethods, PersistenceMixin, BaseEstimator
):
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
        ``sum beta_a = 1`` (so ``w_a ∝ 1 / (E d^2_a)^2``). With a dev set the exponent is
        chosen among ``DEV_EXPONENTS`` instead.
    robust : {"auto", True, False}, default="auto"
        Outlier component per LF: with probability ``eps_a`` (``outlier_rate_``) a vote
        is unrelated to the label, and pseudolabels are robust Frechet means that
        down-weight a vote far from the row's other votes (see
        :mod:`snorkel_structured.estimators.robust_manifold`). ``"auto"`` chooses
        between the plain and the robust model by held-out predictive likelihood (two
        folds of rows split with ``seed``), or by the dev-set error when ``X_dev`` is
        given; ``True`` / ``False`` force it. With ``estimator="uws"`` (a baseline)
        ``"auto"`` keeps the plain model. The held-out comparison runs only when the
        plain model's far-out votes are more than chance (a one-pass screen, see
        ``outlier_screen``), so plain data cost one extra pass. ``"auto"`` never
        chooses a degenerate robust fit (every ``eps_a`` at ``MAX_OUTLIER_RATE``).
    shrinkage : "auto" or float in [0, 1], default="auto"
        Shrinks ``log E d^2`` towards a common value before forming weights: ``"auto"``
        is empirical Bayes with each LF's estimation variance on the side it moves
        the LF (no evidence that LFs differ gives equal weights), no LF moved more
        than one standard deviation and the estimates' order kept (a dominant LF
        stays dominant); a float ``k`` keeps ``1 - k`` of every deviation (0: none,
        1: equal weights).
    min_overlap : int, default=10
        LF pairs that co-voted on fewer rows are ignored.
    atol : float, default=1e-6
        Points within ``atol`` of the manifold are projected; farther ones raise.
    seed : None, int or numpy.random.Generator, default=None
        Splits rows for the held-out choice and draws the rows of the robust fit when
        there are more than ``ROBUST_MAX_ROWS``. An int gives identical refits.

    Attributes
    ----------
    stats_ : ManifoldStats
        Accumulated sufficient statistics (``partial_fit`` adds to them).
    noise_ : WrappedNormal or RiemannianGaussian
    noise_scale_ : ndarray of shape (n_lfs,)
        Parameter of the (inlier) noise of each LF.
    expected_sq_dist_ : ndarray of shape (n_lfs,)
        Estimated ``E d^2(lambda_a, y)`` of the inlier component.
    expected_invariant_ : ndarray of shape (n_lfs,)
        Estimated ``E cosh d`` / ``E cos d`` / ``E d^2`` to the true label (inliers).
    outlier_rate_ : ndarray of shape (n_lfs,)
        Estimated ``eps_a`` (zeros for the plain model).
    noise_model_ : dict
        The choice and its evidence: ``"family"`` (``"plain"`` or ``"robust"``),
        ``"criterion"`` (``"forced"``, ``"heldout_loglik"``, ``"dev_loss"``,
        ``"statistics_only"``, or ``"noise_too_wide"``: on a curved space an LF's
        inlier ``E d^2 / dim`` (the smaller of the plain estimate and a quantile
        estimate that outliers do not inflate) exceeds ``MAX_CURVED_VARIANCE``, where
        the robust model's local Gaussian approximation fails, and ``"auto"`` keeps
        the plain model), and, when computed, ``"screen"`` (far-out votes of
        the plain model, their count and binomial p-value), ``"heldout_gain"`` (mean
        per-row held-out log-likelihood of robust minus plain) with ``"heldout_se"``
        (robust is chosen when the gain exceeds two standard errors), ``"dev_loss"``
        (mean geodesic error on the dev rows per candidate, the smallest chosen),
        ``"n_rows_robust"`` (rows the robust fit may use), ``"robust_degenerate"``
        (``True`` when a robust fit ended with every outlier rate at the cap
        ``MAX_OUTLIER_RATE``: inlier and outlier roles swapped; ``"auto"`` then keeps
        the plain model, ``robust=True`` keeps it with a ``ConvergenceWarning``),
        ``"robust_failed"`` (the error of a robust fit whose inlier-weighted pair
        sums could not identify the LFs; ``"auto"`` then keeps the plain model,
        ``robust=True`` raises it).
    shrinkage_ : ndarray of shape (n_lfs,)
        Fraction ``kappa_a`` of each LF's deviation in ``log E d^2`` removed.
    weight_exponent_ : float
        ``p`` in ``w_a ∝ (shrunk E d^2_a)^-p``.
    weights_ : ndarray of shape (n_lfs,)
        Combination weights, summing to 1 (before the per-row responsibilities and
        the sharing within dependency groups).
    dependencies_ : ndarray of shape (n_dependencies, 2)
    groups_ : ndarray of shape (n_lfs,)
        Dependency group of each LF; a group's weight on a row is that of its best
        voting member, shared among the members that vote.
    n_lfs_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from snorkel_structured.spaces.manifolds import Hyperbolic
    >>> from snorkel_structured.synthetic_manifold import make_manifold_data
    >>> data = make_manifold_data(20000, space=Hyperbolic(2), noise_scale=[0.2, 0.5, 1.0],
    ...                           seed=0)
    >>> lm = ManifoldLabelModel(Hyperbolic(2), robust=False).fit(data.X)
    >>> np.round(lm.noise_scale_, 1)
    array([0.2, 0.5, 1. ])
    >>> lm.predict(data.X).shape
    (20000, 3)
    >>> pred, spread = lm.predict(data.X, return_spread=True)  # E d^2 to the truth
    >>> lm.score(data.X, data.Y, metrics=["coverage"])
    {'coverage': 1.0}
    """

    def __init__(
        self,
        space: Any,
        *,
        estimator: str = "triplet",
        noise: str = "wrapped_normal",
        weighting: str = "inverse_variance",
        robust: Any = "auto",
        shrinkage: Any = "auto",
        min_overlap: int = 10,
        atol: float = 1e-6,
        seed: Any = None,
    ) -> None:
        self.space = space
        self.estimator = estimator
        self.noise = noise
        self.weighting = weighting
        self.robust = robust
        self.shrinkage = shrinkage
        self.min_overlap = min_overlap
        self.atol = atol
        self.seed = seed

    def _stats(self, X: Any, n_lfs: int | None = None) -> ManifoldStats:
        to_stats = functools.partial(
            _chunk_stats, space=self.space, atol=self.atol, n_lfs=n_lfs
        )
        if is_dask_collection(X) or isinstance(X, Iterator):
            return reduce_stats(X, to_stats)
        return to_stats(X)

    # --- fitting ----------------------------------------------------------------------
    def _detect_dependencies(self, X: np.ndarray | None, m: int) -> list:
        """Pairs flagged by the dependency test (none for chunked input or m < 4)."""
        if X is None or m < 4:
            return []
        from snorkel_structured.estimators.dependencies import detect_dependent_pairs

        with np.errstate(invalid="ignore", divide="ignore"):  # degenerate tables
            _, frame = detect_dependent_pairs(X, self.space, seed=0)
        self.dependency_test_ = frame
        # Practical significance, as the finite model: the pair's squared-distance
        # scale (d^2, 1 - cos d, cosh d - 1) at most half what independence predicts.
        obs, exp = frame["observed"].to_numpy(), frame["expected"].to_numpy()
        if isinstance(self.space, Euclidean):
            gap, gap_exp = obs, exp
        elif isinstance(self.space, Sphere):
            gap, gap_exp = 1.0 - obs, 1.0 - exp
        else:
            gap, gap_exp = obs - 1.0, exp - 1.0
        with np.errstate(invalid="ignore", divide="ignore"):
            strong = frame["dependent"].to_numpy() & ~(
                gap_exp / gap < DEPENDENCE_MIN_RATIO
            )
        # an exact copy (the pair's votes equal wherever both vote) leaves the test
        # nothing to predict it from (NaN): flagged all the same
        strong |= (frame["n_both"].to_numpy() > 0) & (np.abs(gap) <= 1e-12)
        pairs = [
            (int(a), int(b)) for a, b in frame.loc[strong, ["lf_a", "lf_b"]].values
        ]
        if pairs:
            twins = ""
            if m == 4:  # see estimators.dependencies._manifold
                twins = (
                    " With 4 LFs the test cannot tell a pair from the other two LFs "
                    "(their agreements have one residual): it flags both, and the "
                    "model keeps those whose own closeness is large (see "
                    "dependency_test_); if you know which LFs share a source, pass "
                    "that pair."
                )
            _warnings.warn(
                f"LF pairs {pairs} agree more than independent LFs can (they likely "
                "share a source); each group of dependent LFs counts as one LF. Pass "
                "dependencies=[] to fit them as independent, or your own pairs."
                + twins,
                IdentifiabilityWarning,
                stacklevel=3,
            )
        return pairs

    def fit(
        self,
        X: Any,
        y: None = None,
        *,
        X_dev: Any = None,
        Y_dev: Any = None,
        dependencies: Any = "auto",
    ) -> ManifoldLabelModel:
        """Estimate every LF's noise from LF outputs (and optionally labeled rows).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_lfs, ambient_dim), iterator of chunks, or Dask collection
            LF outputs; a row of NaN is an abstain. An iterator of such chunks is
            consumed once; a Dask array (n_samples, n_lfs, ambient_dim) or a Dask
            DataFrame with n_lfs * ambient_dim columns (each LF's coordinates side by
            side) is reduced partition by partition, and then only the plain model
            (additive statistics) is fitted: the robust model needs the raw rows.
        y : None
            Ignored (kept for scikit-learn compatibility); labels go in ``Y_dev``.
        X_dev : array-like of shape (n_dev, n_lfs, ambient_dim), optional
            LF outputs on labeled rows. They count as unlabeled rows in the pairwise
            statistics, add each LF's observed invariant to the true label as an extra
            moment equation (inverse-variance weighted), give exact responsibilities
            to the robust fit, and choose the model variant (plain or robust, weight
            exponent in ``DEV_EXPONENTS``) by the mean geodesic error on these rows.
        Y_dev : array-like of shape (n_dev, ambient_dim), optional
            True labels of the rows of ``X_dev`` (points of ``space``).
        dependencies : "auto", None or sequence of (int, int), default="auto"
            LF pairs known to be dependent (e.g. two LFs reading the same source).
            Their pairwise statistics are left out of the estimation, and in the
            pseudolabels a group of mutually dependent LFs counts as one LF.
            "auto" (in-memory ``X`` with at least 4 LFs): the pairs that
            :func:`~snorkel_structured.estimators.dependencies.detect_dependent_pairs`
            flags (family-wise false-alarm rate 5%), with a warning naming them;
            None or [] declares none.

        Returns
        -------
        self : ManifoldLabelModel

        Raises
        ------
        ValueError
            On bad parameters, wrong shapes, fewer than 3 LFs, points off the manifold
            (naming the row and LF), Euclidean coordinates above 1e50 (rescale the
            targets), too few overlapping rows, sphere LF pairs whose mean cos d is
            not above 0 by 2 standard errors leaving the other LFs unidentified (the
            message names the pairs), bad ``dependencies``,
            ``Y_dev`` without ``X_dev`` (or the reverse), or ``robust=True`` with
            chunked input.

        Warns
        -----
        IdentifiabilityWarning
            When, after leaving out the dependent pairs, an LF is no longer identified
            (it is then estimated with its dependent pairs put back); when an LF never
            voted in ``X`` (zero coverage), naming it.
        """
        self._check_params()
        if Y_dev is not None and X_dev is None:
            raise ValueError(
                "Y_dev was given without X_dev. Manifold labels have no class balance "
                "to take from Y_dev alone: pass X_dev, the LF outputs on the labeled "
                "rows (shape (n_dev, n_lfs, ambient_dim)), with Y_dev."
            )
        if X_dev is not None and Y_dev is None:
            raise ValueError(
                "X_dev was given without Y_dev; pass the true labels of those rows as "
                "Y_dev (shape (n_dev, ambient_dim)), or drop X_dev."
            )
        chunked = is_dask_collection(X) or isinstance(X, Iterator)
        if chunked:
            if self.robust is True:
                raise ValueError(
                    "robust=True needs the raw rows, but X is an iterator or Dask "
                    "collection; pass an array, or use robust=False (additive "
                    "statistics only)."
                )
            stats = self._stats(X)
            X_arr = None
        else:
            X_arr = check_manifold_outputs(
                _as_outputs(X, self.space), self.space, name="X", atol=self.atol
            )
            if X_arr.shape[1] < 3:
                raise ValueError(
                    "X must have at least 3 labeling functions (axis 1); got shape "
                    f"{X_arr.shape}. The triplet invariants need three LFs; add LFs."
                )
            stats = ManifoldStats._from_checked(X_arr, self.space)
        m = stats.n_lfs
        self.dependency_test_ = None
        if is_auto(dependencies):
            dependencies = self._detect_dependencies(X_arr, m)
        deps = _check_dependencies(dependencies, m)
        dev = None
        if X_dev is not None:
            Xd = check_manifold_outputs(
                _as_outputs(X_dev, self.space),
                self.space,
                name="X_dev",
                atol=self.atol,
                n_lfs=m,
            )
            Yd = check_points(Y_dev, self.space, name="Y_dev", atol=self.atol)
            if Yd.shape != (Xd.shape[0], self.space.ambient_dim):
                raise ValueError(
                    f"Y_dev must have shape (n_dev, {self.space.ambient_dim}) with "
                    f"n_dev = {Xd.shape[0]} rows, as X_dev; got shape {Yd.shape}."
                )
            dev = (Xd, Yd)
            stats = stats + ManifoldStats._from_checked(Xd, self.space, name="X_dev")
        return self._fit(stats, X_arr, dev, deps)

    def partial_fit(
        self, X: Any, y: None = None, *, dependencies: Any = None
    ) -> ManifoldLabelModel:
        """Add the statistics of a chunk of rows and re-estimate; returns self.

        ``X`` is anything ``fit`` accepts. Only additive statistics are kept, so this
        always fits the plain (non-robust) model, whatever ``robust`` says, without a
        dev set: with the same rows, ``partial_fit`` over chunks equals
        ``fit(X, robust=False)``.

        While the rows so far cannot identify the LFs (e.g. fewer than
        ``min_overlap`` co-voted rows, or no votes yet), the statistics are kept and
        an ``IdentifiabilityWarning`` says why the estimate was not made: the model
        stays unfitted (or keeps its previous estimates), and later chunks add to the
        kept rows. Bad input (shapes, points off the manifold) still raises and adds
        nothing.
        """
        self._check_params()
        # rows whose estimate failed are kept here until a later chunk completes it
        previous = getattr(self, "_pending_stats", None)
        if previous is None and hasattr(self, "stats_"):
            previous = self.stats_
        stats = self._stats(X, None if previous is None else previous.n_lfs)
        if previous is not None:
            stats = previous + stats
        deps = _check_dependencies(dependencies, stats.n_lfs)
        try:
            # the warnings of an estimate that then fails would describe a fit that
            # is not made; they are replayed only when it succeeds
            with _warnings.captured() as caught:
                self._fit(stats, None, None, deps)
        except ValueError as exc:
            self._pending_stats = stats
            state = (
                "keeps its previous estimates"
                if hasattr(self, "weights_")
                else "is not fitted yet"
            )
            _warnings.warn(
                f"The rows so far ({stats.n_samples}) do not give an estimate yet, so "
                f"the model {state}; their statistics are kept and the next "
                f"partial_fit adds to them. The reason: {exc}",
                IdentifiabilityWarning,
                stacklevel=2,
            )
            return self
        for w in caught:
            _warnings.warn(w.message, w.category, stacklevel=2)
        if hasattr(self, "_pending_stats"):
            del self._pending_stats
        return self

    def fit_stats(
        self, stats: ManifoldStats, *, dependencies: Any = None
    ) -> ManifoldLabelModel:
        """Estimate from precomputed statistics (e.g. ``sum`` over Dask partitions).

        Statistics are additive but the robust model needs the raw rows, so this fits
        the plain model, whatever ``robust`` says
        (``noise_model_["criterion"] == "statistics_only"``).
        """
        self._check_params()
        if not isinstance(stats, ManifoldStats) or stats.space != self.space:
            raise ValueError(
                f"stats must be ManifoldStats on {self.space!r}; got {stats!r}."
            )
        return self._fit(
            stats, None, None, _check_dependencies(dependencies, stats.n_lfs)
        )

    def _warn_if_tiny_units(self, stats: ManifoldStats) -> None:
        """Warn when Euclidean votes are so close together that the robust model's
        floors (1e-12 on squared distances and spreads) take over: every LF then
        gets the same weight (measured: at unit 1e-6, 3 LFs of noise 0.1-0.5)."""
        if not isinstance(self.space, Euclidean):
            return
        typical = np.nanmedian(
            np.where(stats.pair_count > 0, stats.pair_sq_dist_mean, np.nan)
        )
        if np.isfinite(typical) and 0 < typical < TINY_SQ_DIST:
            _warnings.warn(
                f"The LFs' votes are about {np.sqrt(typical):.2g} apart: squared "
                f"distances near {typical:.2g} fall under the model's floors, which "
                "then weigh every LF alike. Rescale the targets (e.g. to unit spread) "
                "and the predictions back.",
                IdentifiabilityWarning,
                stacklevel=4,
            )

    def _estimate(self, stats, noise, deps, dev_stats=None, init=None):
        kw = {"min_overlap": self.min_overlap, "dependencies": deps}
        if self.estimator == "triplet":
            return triplet_estimate(stats, noise, dev=dev_stats, **kw)
        if self.estimator == "uws":
            return uws_estimate(stats, noise, **kw)
        return pair_sq_dist_estimate(stats, noise, dev=dev_stats, init=init, **kw)

    def _weights(self, est, p: float) -> tuple[np.ndarray, np.ndarray]:
        log_e = np.log(np.maximum(est.expected_sq_dist, 1e-300))
        if isinstance(self.shrinkage, str):
            shrunk, kappa = eb_shrink(
                log_e, est.log_sq_dist_var, est.log_sq_dist_side_var
            )
        else:
            k = float(self.shrinkage)
            shrunk = log_e.mean() + (1.0 - k) * (log_e - log_e.mean())
            kappa = np.full(log_e.shape, k)
        w = np.exp(-p * (shrunk - shrunk.min()))
        return w / w.sum(), kappa

    def _fit(self, stats, X, dev, deps) -> ManifoldLabelModel:
        if not np.asarray(stats.vote_count).sum() > 0:
            raise ValueError(
                f"X has no votes: every labeling function abstained (a row of NaN) on "
                f"every one of its {stats.n_samples} rows, so there is nothing to "
                "estimate from. Check that the LFs return points (not None) on this "
                "data, e.g. run one LF on a few rows by hand."
            )
        # once per fit, on the summed statistics (not per chunk)
        warn_silent_lfs(
            stats.vote_count, n_samples=stats.n_samples, name="X", stacklevel=3
        )
        self._warn_if_tiny_units(stats)
        noise = make_noise(self.noise, self.space)
        m = stats.n_lfs
        groups = dependency_groups([tuple(p) for p in deps.tolist()], m)
        dev_stats = (
            None
            if dev is None
            else LabeledManifoldStats._from_checked(dev[0], dev[1], self.space)
        )
        plain = self._estimate(stats, noise, deps, dev_stats)
        p0 = 1.0 if self.weighting == "inverse_variance" else 2.0
        info: dict[str, Any] = {}
        robust_fit = None
        # "auto" leaves the UWS baseline as published (plain), for honest comparisons
        auto_off = self.robust == "auto" and self.estimator == "uws"
        # The responsibilities read the inlier law as a Gaussian in normal coordinates
        # at a reference near y: on a curved space that holds only while the noise is
        # small against the curvature radius (1). Beyond it (e.g. the paper's
        # hyperbolic setup, tangent variance up to 5) plain data look outlying and
        # the robust fit is slow and meaningless, so "auto" keeps the plain model.
        # The inlier noise is what counts: outlying votes inflate the plain E d^2
        # without bound, so where the rows are at hand the robust quantile estimate
        # of the inlier scales (pair distances) may clear an LF the plain one flags.
        too_wide = False
        if isinstance(self.space, (Sphere, Hyperbolic)):
            e_inlier = plain.expected_sq_dist
            if X is not None and self.robust == "auto":
                with np.errstate(all="ignore"):
                    e_inlier = np.fmin(
                        e_inlier, quantile_sq_dist(self.space, X, groups)
                    )
            too_wide = bool(np.max(e_inlier) / self.space.dim > MAX_CURVED_VARIANCE)
        use_robust = (
            X is not None
            and self.robust is not False
            and not auto_off
            and not (self.robust == "auto" and too_wide)
        )
        if X is None:
            info["criterion"] = "forced" if self.robust is False else "statistics_only"
        elif self.robust is False or auto_off:
            info["criterion"] = "forced"
        elif not use_robust:
            info["criterion"] = "noise_too_wide"
        if use_robust:
            rng = check_seed(self.seed)
            rows = X
            if X.shape[0] > ROBUST_MAX_ROWS:
                idx = np.sort(rng.choice(X.shape[0], ROBUST_MAX_ROWS, replace=False))
                rows = X[idx]
            info["n_rows_robust"] = int(rows.shape[0])
            if self.robust == "auto" and dev is None:
                sel = rows
                if rows.shape[0] > SELECT_MAX_ROWS:
                    pick = rng.choice(rows.shape[0], SELECT_MAX_ROWS, replace=False)
                    sel = rows[np.sort(pick)]
                with _warnings.captured(), np.errstate(all="ignore"):
                    bg = fit_background(self.space, sel, plain.expected_sq_dist)
                    far, n_votes, p_far = outlier_screen(
                        self.space,
                        sel,
                        expected_sq_dist=plain.expected_sq_dist,
                        background=bg,
                        groups=groups,
                        level=SCREEN_LEVEL,
                    )
                info.update(
                    criterion="heldout_loglik",
                    screen={"far_votes": far, "votes": n_votes, "p_value": p_far},
                )
                if p_far < SCREEN_LEVEL:
                    gain, se, swapped = self._heldout_gain(
                        sel, noise, deps, groups, rng
                    )
                    info.update(heldout_gain=gain, heldout_se=se)
                    if swapped:
                        info["robust_degenerate"] = True
                    fit_robust = gain > 2.0 * se and not swapped
                else:  # no more improbable votes than chance: nothing to model
                    fit_robust = False
            else:
                fit_robust = True
                if self.robust is True:
                    info["criterion"] = "forced"
            if fit_robust:
                try:
                    robust_fit = self._robust_fit(rows, noise, deps, groups, plain, dev)
                except ValueError as err:
                    # The robust EM re-estimates the noise from inlier-weighted pair
                    # sums: when the votes are mostly "outlying", those weights leave
                    # pairs with fractions of a row (diabetes, 200 rows: 4.3 and
                    # 5.6e-141 "co-voted rows"), too few to identify the LFs.
                    if self.robust is True:
                        raise ValueError(
                            "robust=True: the robust fit failed. It re-estimates the "
                            "LFs' noise from the pair sums of the votes it counts as "
                            "inliers (each row weighted by its inlier probability), "
                            "and those weights left too little to estimate from: "
                            f"{err} Use robust='auto' (which then keeps the plain "
                            "model) or robust=False."
                        ) from err
                    info["robust_failed"] = str(err)
                    robust_fit = None
            if robust_fit is not None:
                if robust_fit.degenerate:
                    # Every LF's outlier rate at the cap: "inlier" and "outlier" have
                    # swapped roles (the fit explains the votes by the background and
                    # a wide "inlier" law), not a model of the data to choose.
                    info["robust_degenerate"] = True
                    if self.robust is True:
                        _warnings.warn(
                            "The robust fit is degenerate: every LF's outlier rate "
                            f"ended at the cap {MAX_OUTLIER_RATE:g}, i.e. the inlier and "
                            "outlier components swapped roles. Its pseudolabels are "
                            "unreliable; use robust='auto' (which then keeps the "
                            "plain model) or robust=False.",
                            ConvergenceWarning,
                            stacklevel=3,
                        )
                    else:
                        robust_fit = None
        candidates = [("plain", plain, None)]
        if robust_fit is not None:
            rob = {
                "expected_sq_dist": robust_fit.estimate.expected_sq_dist,
                "outlier_rate": robust_fit.outlier_rate,
                "background": robust_fit.background,
                "prior": robust_fit.prior,
            }
            candidates.append(("robust", robust_fit.estimate, rob))
            # forced, or the held-out likelihood chose it (a dev set compares both).
            # Without the raw rows (partial_fit, fit_stats) there is no robust fit,
            # even with robust=True: the plain model, as documented there.
            if self.robust is True or dev is None:
                candidates = candidates[1:]
        if dev is None:
            family, est, rob = candidates[0]
            p = p0
        else:
            losses = {}
            best = None
            for family, est_c, rob_c in candidates:
                for p_c in (p0, *[q for q in DEV_EXPONENTS if q != p0]):
                    w_c, _ = self._weights(est_c, p_c)
                    pred = _combine(self.space, dev[0], w_c, groups, rob_c)[0]
                    err = self.space.dist(pred, dev[1])
                    loss = float(np.nanmean(err)) if np.isfinite(err).any() else np.inf
                    losses[f"{family}, p={p_c:g}"] = loss
                    if best is None or loss < best[0]:
                        best = (loss, family, est_c, rob_c, p_c)
            _, family, est, rob, p = best
            if self.robust == "auto":
                info["criterion"] = "dev_loss"
            info["dev_loss"] = losses
        info["family"] = family
        self.stats_ = stats
        self.noise_ = noise
        self.n_lfs_ = m
        self.dependencies_ = deps
        self.groups_ = groups
        self.noise_scale_ = est.noise_scale
        self.expected_sq_dist_ = est.expected_sq_dist
        self.expected_invariant_ = est.expected_invariant
        self.outlier_rate_ = np.zeros(m) if rob is None else rob["outlier_rate"].copy()
        self._robust_params = rob
        self.weight_exponent_ = float(p)
        self.weights_, self.shrinkage_ = self._weights(est, p)
        past = est.past_noiseless
        if past is not None and past.any() and dev is None:
            _warnings.warn(
                f"LF(s) {np.flatnonzero(past).tolist()}: the LF pairs put their noise "
                "past the family's noiseless end (or, robust, below the inliers' "
                "floor), and it is clipped there: a bound, not an estimate, which "
                "gives them "
                f"{float(self.weights_[past].sum()):.0%} of the weight. A very "
                "precise LF looks so, and so do LFs whose errors depend on each "
                "other's (e.g. a coarse LF with two that share its source). If they "
                "are not that precise, label a few rows (X_dev, Y_dev) to weigh them.",
                IdentifiabilityWarning,
                stacklevel=3,
            )
        self.noise_model_ = info
        return self

    def _robust_fit(self, rows, noise, deps, groups, init, dev, max_iter=30):
        bg = fit_background(self.space, rows, init.expected_sq_dist)
        e_min = inlier_floor(self.space, bg)

        def estimate(st, dv):
            est = self._estimate(st, noise, deps, dv, init)
            return _floored(est, noise, e_min)

        return robust_em(
            self.space,
            rows,
            estimate,
            _floored(init, noise, e_min),
            groups=groups,
            dev=dev,
            background=bg,
            max_iter=max_iter,
        )

    def _heldout_gain(
        self, rows, noise, deps, groups, rng
    ) -> tuple[float, float, bool]:
        """Two-fold held-out per-row log-likelihood gain of robust over plain.

        Returns ``(gain, standard error, degenerate)``; ``degenerate`` when a fold's
        robust fit ended with every outlier rate at the cap (then not chosen).
        """
        n = rows.shape[0]
        fold = np.zeros(n, dtype=bool)
        fold[rng.permutation(n)[: n // 2]] = True
        diffs = []
        for k in (True, False):
            train, test = rows[fold != k], rows[fold == k]
            try:
                with _warnings.captured(), np.errstate(all="ignore"):
                    st = ManifoldStats._from_checked(train, self.space)
                    plain = self._estimate(st, noise, deps)
                    rob = self._robust_fit(
                        train, noise, deps, groups, plain, None, SELECT_MAX_ITER
                    )
            except ValueError:
                return -np.inf, 0.0, False
            if rob.degenerate:
                return -np.inf, 0.0, True
            try:
                with _warnings.captured(), np.errstate(all="ignore"):
                    ll_p = heldout_loglik(
                        self.space,
                        test,
                        expected_sq_dist=plain.expected_sq_dist,
                        outlier_rate=None,
                        background=rob.prior,
                        groups=groups,
                    )
                    ll_r = heldout_loglik(
                        self.space,
                        test,
                        expected_sq_dist=rob.estimate.expected_sq_dist,
                        outlier_rate=rob.outlier_rate,
                        background=rob.background,
                        prior=rob.prior,
                        groups=groups,
                    )
            except ValueError:
                return -np.inf, 0.0, False
            diffs.append(ll_r - ll_p)
        d = np.concatenate(diffs)
        d = d[np.isfinite(d)]
        if d.size < 2:
            return 0.0, np.inf, False
        return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size)), False
