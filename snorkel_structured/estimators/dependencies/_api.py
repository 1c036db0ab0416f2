"""Public entry points of the LF dependency test: validation, dispatch, result frame."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm
from threadpoolctl import ThreadpoolController

from snorkel_structured._validation import (
    check_is_fitted,
    check_label_matrix,
    check_scalar,
    check_seed,
)
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.estimators.dependencies._finite import finite_test, pairs
from snorkel_structured.estimators.dependencies._manifold import (
    ManifoldPairStats,
    manifold_kind,
    manifold_test,
)
from snorkel_structured.spaces.finite import FiniteMetricSpace

__all__ = [
    "MIN_LFS",
    "RESULT_COLUMNS",
    "dependent_pairs",
    "detect_dependent_pairs",
    "lf_dependency_test",
    "result_frame",
]

MIN_LFS = 4
DEFAULT_N_BOOT = 2000
RESULT_COLUMNS = [
    "lf_a",
    "lf_b",
    "n_both",
    "observed",
    "expected",
    "z",
    "p_value",
    "dependent",
]


def is_finite_space(space: Any) -> bool:
    """Whether ``space`` is a finite label space (duck-typed, as elsewhere)."""
    return isinstance(space, FiniteMetricSpace) or (
        hasattr(space, "distance_matrix") and hasattr(space, "index")
    )


def result_frame(
    a: np.ndarray,
    b: np.ndarray,
    n_both: np.ndarray,
    observed: np.ndarray,
    expected: np.ndarray,
    z: np.ndarray,
    dependent: np.ndarray,
    lf_names: list[Any] | None,
) -> pd.DataFrame:
    """The per-pair result frame (columns :data:`RESULT_COLUMNS`).

    ``p_value`` is the one-sided normal tail of ``z`` (only "closer than independence"
    is evidence), not adjusted for multiplicity.
    """
    p_value = norm.sf(z)
    if lf_names is not None:
        names = np.empty(len(lf_names), dtype=object)
        names[:] = list(lf_names)
        a, b = names[a], names[b]
    return pd.DataFrame(
        {
            "lf_a": a,
            "lf_b": b,
            "n_both": np.asarray(n_both).astype(np.int64),
            "observed": observed,
            "expected": expected,
            "z": z,
            "p_value": p_value,
            "dependent": np.asarray(dependent, dtype=bool),
        },
        columns=RESULT_COLUMNS,
    )


def _flag_mask(m: int, flagged: list[tuple[int, int]]) -> np.ndarray:
    a_idx, b_idx = pairs(m)
    chosen = set(flagged)
    return np.array(
        [(int(x), int(y)) in chosen for x, y in zip(a_idx, b_idx, strict=True)],
        dtype=bool,
    )


def _check_names(lf_names: Any, m: int) -> list[Any] | None:
    if lf_names is None:
        return None
    names = list(lf_names)
    if len(names) != m:
        raise ValueError(
            f"lf_names has {len(names)} names but the votes have {m} labeling "
            "functions; give one name per LF (column)."
        )
    return names


def _check_n_boot(n_boot: Any, alpha: float) -> int:
    n_boot = check_scalar(n_boot, "n_boot", kind="int", low=1)
    if alpha * (n_boot + 1) < 1.0:
        raise ValueError(
            f"n_boot={n_boot} draws cannot reach a family-wise p-value of "
            f"alpha={alpha} (the smallest is 1 / (n_boot + 1)); use n_boot >= "
            f"{int(np.ceil(1.0 / alpha)) - 1}, or 1000 or more for a stable quantile."
        )
    return n_boot


def _too_few_lfs(m: int) -> ValueError:
    return ValueError(
        f"The dependency test needs at least {MIN_LFS} labeling functions; the votes "
        f"have {m}. With 3 or fewer, the pairwise statistics are fully used up by the "
        "LFs' own accuracies and cannot reveal a dependency."
    )


@functools.lru_cache(maxsize=1)
def _blas_controller() -> ThreadpoolController:
    """One scan of the loaded BLAS libraries per process (the scan costs ~0.1 s)."""
    return ThreadpoolController()


def _one_blas_thread() -> Any:
    """Context: BLAS on one thread (every matrix of the test is small or thin)."""
    return _blas_controller().limit(limits=1, user_api="blas")


def _run(
    data: Any,
    space: Any,
    *,
    alpha: float,
    n_components: int | None,
    n_boot: int,
    rng: np.random.Generator,
    names: list[Any] | None,
    until: Any = None,
) -> tuple[list[tuple[int, int]], pd.DataFrame]:
    """Run the test on validated statistics (VoteStats or ManifoldPairStats);
    ``until``: see :func:`detect_dependent_pairs` (finite spaces).

    Every matrix here is small (k x k, or n_patterns x k): multithreaded BLAS only
    adds overhead, and on a busy 2-core machine OpenBLAS threads made the 7-LF
    ``Permutations(5)`` case 25x slower (0.47 s -> 13 s, measured), so BLAS runs
    on one thread for the duration of the test.
    """
    with _one_blas_thread():
        if isinstance(data, VoteStats):
            a, b, n_both, obs, exp, z, flagged = finite_test(
                np.asarray(data.patterns),
                np.asarray(data.counts),
                n_components,
                alpha,
                n_boot,
                rng,
                until=until,
            )
        else:
            a, b, n_both, obs, exp, z, flagged = manifold_test(data, alpha, n_boot, rng)
    m = data.n_lfs
    frame = result_frame(a, b, n_both, obs, exp, z, _flag_mask(m, flagged), names)
    return sorted(flagged), frame


def _finite_stats(data: Any, space: Any) -> VoteStats:
    if isinstance(data, VoteStats):
        if data.n_labels != len(space):
            raise ValueError(
                f"data is a VoteStats over {data.n_labels} labels but space has "
                f"{len(space)}; collect the statistics on this space."
            )
        if not np.allclose(data.counts, np.rint(data.counts)):
            raise ValueError(
                "data must hold whole row counts (VoteStats.from_label_matrix); got "
                "weighted counts, which the test cannot split into folds of rows."
            )
        return data
    L = check_label_matrix(data, n_labels=len(space), name="data")
    return VoteStats.from_label_matrix(L, n_labels=len(space))


def _manifold_stats(data: Any, space: Any) -> ManifoldPairStats:
    kind = manifold_kind(space)
    if isinstance(data, ManifoldPairStats):
        if data.kind != kind:
            raise ValueError(
                f"data holds {data.kind} statistics but space is {space!r}; collect "
                "them with ManifoldPairStats.from_outputs(X, space)."
            )
        return data
    with _one_blas_thread():  # thin (chunk, n_pairs) products
        return ManifoldPairStats.from_outputs(data, space, name="data")


def detect_dependent_pairs(
    data: Any,
    space: Any,
    *,
    alpha: float = 0.05,
    n_components: int | None = None,
    seed: Any = 0,
    lf_names: Any = None,
    until: Any = None,
) -> tuple[list[tuple[int, int]], pd.DataFrame]:
    """Pairs of LFs that agree more than conditional independence allows (numerical core).

    The entry point for a label model's fit: it works from additive statistics, so
    its cost is O(n_patterns) for a finite space and O(n_pairs^2) for a manifold once
    the statistics are collected.

    Parameters
    ----------
    data : VoteStats, ManifoldPairStats or array-like
        Finite space: a label matrix of shape (n_samples, n_lfs) (int, -1 = abstain)
        or its ``VoteStats`` (whole row counts). Manifold (``Euclidean``, ``Sphere``,
        ``Hyperbolic``): LF outputs of shape (n_samples, n_lfs, ambient_dim) with a
        row of NaN where an LF abstains, or their ``ManifoldPairStats``.
    space : label space
    alpha : float in (0, 1), default=0.05
        Family-wise false-alarm rate over all n_lfs (n_lfs - 1) / 2 pairs.
    n_components : int, optional
        Finite spaces: rank of the LFs' joint tables (labels with prior mass).
        Default: estimated from the votes (``estimate_n_components``).
    seed : None, int or numpy.random.Generator, default=0
        Randomness of the fold split (finite) and of the null draws.
    lf_names : sequence, optional
        Names for the frame's ``lf_a``/``lf_b`` columns (default: LF indices).
    until : callable, optional
        Finite spaces: ``until(observed, expected)`` of each pair as it is flagged
        (its agreement rate among the rows both LFs vote on, and the prediction);
        True stops the search there, for a caller that acts on the first such
        pair alone. The frame then holds that round's statistics.

    Returns
    -------
    pairs : list of (int, int)
        The flagged pairs as LF indices, a < b, sorted. On a manifold with exactly
        4 LFs a pair comes with its complement (the other two LFs): the law of
        cosines leaves the two one residual, so the test cannot tell them apart.
    result : pandas.DataFrame
        The per-pair frame of :func:`lf_dependency_test`. With fewer than 4 LFs
        (pairwise statistics do not over-identify 3 LFs) ``([], empty frame)``.

    Raises
    ------
    ValueError
        Bad votes, ``alpha``, ``n_components`` or ``lf_names``, or statistics
        collected on another space.
    TypeError
        If ``space`` is neither finite nor a supported manifold.

    Examples
    --------
    >>> import numpy as np, snorkel_structured as ss
    >>> from snorkel_structured.estimators import VoteStats
    >>> d = ss.synthetic.make_label_matrix(
    ...     5000, space=ss.Discrete(3), theta=[1.0, 1.2, 1.5, 0.8],
    ...     prior=[0.3, 0.3, 0.4], seed=0)
    >>> L = d.L.copy()
    >>> copy = np.random.default_rng(0).random(len(L)) < 0.5
    >>> L[copy, 3] = L[copy, 0]                       # LF 3 copies LF 0 half the time
    >>> stats = VoteStats.from_label_matrix(L, n_labels=3)
    >>> detect_dependent_pairs(stats, ss.Discrete(3))[0]
    [(0, 3)]
    """
    alpha = check_scalar(
        alpha, "alpha", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
    )
    if n_components is not None:
        n_components = check_scalar(n_components, "n_components", kind="int", low=1)
    rng = check_seed(seed)
    if is_finite_space(space):
        stats: Any = _finite_stats(data, space)
        if n_components is None and type(space).__name__ == "Discrete":
            n_components = len(space)  # every class is a label of the model
    else:
        stats = _manifold_stats(data, space)
    names = _check_names(lf_names, stats.n_lfs)
    if stats.n_lfs < MIN_LFS:
        return [], pd.DataFrame(columns=RESULT_COLUMNS)
    return _run(
        stats,
        space,
        alpha=alpha,
        n_components=n_components,
        n_boot=DEFAULT_N_BOOT,
        rng=rng,
        names=names,
        until=until,
    )


def _check_label_model(
    label_model: Any, space: Any, n_lfs: int, none: str = "(or none)"
) -> None:
    """A fitted model on this space and these LFs (read only for its support).

    ``none`` ends each message: what passing no model does for the caller.
    """
    check_is_fitted(label_model, "theta_")
    lm_space = getattr(label_model, "space", None)
    if lm_space is not None and lm_space is not space and lm_space != space:
        raise ValueError(
            f"label_model was fitted on {lm_space!r} but the votes are in {space!r}; "
            "pass a model fitted on this space " + none + "."
        )
    lm_lfs = getattr(label_model, "n_lfs_", None)
    if lm_lfs is not None and int(lm_lfs) != n_lfs:
        raise ValueError(
            f"label_model was fitted with {lm_lfs} labeling functions but L has "
            f"{n_lfs}; pass the model fitted on these LFs {none}."
        )


def lf_dependency_test(
    L: Any,
    label_model: Any = None,
    *,
    space: Any = None,
    alpha: float = 0.05,
    lf_names: Any = None,
    method: str = "moments",
    n_components: int | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    seed: Any = 0,
) -> pd.DataFrame:
    """Test every pair of LFs for agreeing more than conditional independence allows.

    Parameters
    ----------
    L : array-like of shape (n_samples, n_lfs) or (n_samples, n_lfs, ambient_dim)
        Votes: label indices (-1 = abstain) for a finite space, points (a row of
        NaN = abstain) for a manifold. At least 4 LFs.
    label_model : fitted StructuredLabelModel, optional
        Finite spaces: only its support size is read (the rank of the joint
        tables, unless ``n_components`` is given). Manifolds need no model.
    space : label space, optional
        Finite space or ``Euclidean``/``Sphere``/``Hyperbolic``. Defaults to
        ``label_model.space``.
    alpha : float in (0, 1), default=0.05
        Family-wise false-alarm rate over all m (m - 1) / 2 pairs (max-T step-down).
    lf_names : sequence, optional
        Names for the ``lf_a``/``lf_b`` columns (default: LF indices).
    method : {"moments"}, default="moments"
        The model-free test of the package docstring. The score test against a
        fitted label model (``"model"``) needs the label-model layer: use
        ``StructuredLFAnalysis(L, space=space).lf_dependencies(method="model")``.
    n_components : int, optional
        Finite spaces: rank of the joint tables, the number of labels with prior
        mass. Default: ``len(space)`` for ``Discrete``, ``label_model.support_.size``
        when a model is given, else estimated from the votes.
    n_boot : int, default=2000
        Multiplier-bootstrap draws of the null maximum over pairs (Gaussian with the
        statistics' estimated covariance). At least ``ceil(1 / alpha) - 1``.
    seed : None, int or numpy.random.Generator, default=0
        Randomness of the fold split (finite spaces) and of the null draws.

    Returns
    -------
    result : pandas.DataFrame
        One row per pair a < b: ``lf_a``, ``lf_b``, ``n_both`` (rows where both
        vote), ``observed`` and ``expected`` (finite: agreement rate
        P(lambda_a = lambda_b) among those rows and what the other LFs' tables
        predict for it; manifolds: mean ``d^2`` (Euclidean), ``cos d`` (sphere) or
        ``cosh d`` (hyperbolic) and what the other pairs predict for it), ``z``
        (positive = closer than independence allows), one-sided per-pair
        ``p_value`` (normal tail of ``z``, not adjusted for multiplicity), and
        ``dependent`` (flagged by the max-T step-down procedure, family-wise at
        ``alpha``; flagged pairs leave the other pairs' predictions). A pair that
        never co-votes, or whose terms the other pairs do not identify, has NaN
        ``z`` and is not flagged.

    Raises
    ------
    ValueError
        Fewer than 4 LFs (pairwise statistics then do not over-identify an
        independent model), a label model fitted on another space or another number
        of LFs, a label model passed for a manifold, ``method="model"``, bad
        ``alpha``, ``n_boot`` or ``lf_names``.
    TypeError
        If ``space`` is neither a finite space nor a supported manifold.

    See Also
    --------
    detect_dependent_pairs : the same test from additive statistics.

    Notes
    -----
    See the package docstring for the statistics and their calibration. Measured
    false-alarm rates, power and run times: ``benchmarks/bench_dependency_test.py``.

    Examples
    --------
    >>> import numpy as np, snorkel_structured as ss
    >>> d = ss.synthetic.make_label_matrix(
    ...     5000, space=ss.Discrete(3), theta=[1.0, 1.2, 1.5, 0.8],
    ...     prior=[0.3, 0.3, 0.4], seed=0)
    >>> L = d.L.copy()
    >>> copy = np.random.default_rng(0).random(len(L)) < 0.5
    >>> L[copy, 3] = L[copy, 0]                       # LF 3 copies LF 0 half the time
    >>> res = lf_dependency_test(L, space=ss.Discrete(3))
    >>> dependent_pairs(res)
    [(0, 3)]
    """
    alpha = check_scalar(
        alpha, "alpha", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
    )
    if method == "model":
        raise ValueError(
            "method='model' (a score test against a fitted label model) lives in the "
            "label-model layer: use StructuredLFAnalysis(L, space=space)"
            ".lf_dependencies(label_model, method='model')."
        )
    if method != "moments":
        raise ValueError(f"method must be 'moments' or 'model'; got {method!r}.")
    if space is None:
        if label_model is None:
            raise ValueError(
                "Pass space (the label space of L) or a fitted label_model."
            )
        space = label_model.space
    n_boot = _check_n_boot(n_boot, alpha)
    if n_components is not None:
        n_components = check_scalar(n_components, "n_components", kind="int", low=1)
    if is_finite_space(space):
        Lc = check_label_matrix(L, n_labels=len(space), name="L")
        m = Lc.shape[1]
        if label_model is not None:
            _check_label_model(label_model, space, m)
            if n_components is None:
                n_components = int(np.asarray(label_model.support_).size)
        if n_components is None and type(space).__name__ == "Discrete":
            n_components = len(space)  # every class is a label of the model
        stats: Any = VoteStats.from_label_matrix(Lc, n_labels=len(space))
    else:
        manifold_kind(space)  # TypeError for unsupported spaces
        if label_model is not None:
            raise ValueError(
                "The manifold test needs no label model (it compares the LFs' pairwise "
                "statistics with each other); pass label_model=None."
            )
        with _one_blas_thread():  # thin (chunk, n_pairs) products
            stats = ManifoldPairStats.from_outputs(L, space, name="L")
        m = stats.n_lfs
    if m < MIN_LFS:
        raise _too_few_lfs(m)
    names = _check_names(lf_names, m)
    _, frame = _run(
        stats,
        space,
        alpha=alpha,
        n_components=n_components,
        n_boot=n_boot,
        rng=check_seed(seed),
        names=names,
    )
    return frame


def dependent_pairs(result: pd.DataFrame) -> list[tuple[Any, Any]]:
    """The pairs flagged by :func:`lf_dependency_test`, as a list of (a, b) tuples.

    With integer LF indices (the default) the list is ready for
    ``StructuredLabelModel.fit(L, dependencies=...)``.

    Parameters
    ----------
    result : pandas.DataFrame
        The output of :func:`lf_dependency_test` (or
        ``StructuredLFAnalysis.lf_dependencies``).

    Returns
    -------
    pairs : list of tuple
        Sorted by increasing p-value.

    Raises
    ------
    ValueError
        If ``result`` lacks the columns of the result frame.
    """
    missing = [c for c in ("lf_a", "lf_b", "dependent", "p_value") if c not in result]
    if missing:
        raise ValueError(
            f"result must be the DataFrame of lf_dependency_test; it lacks columns "
            f"{missing}."
        )
    flagged = result[result["dependent"].astype(bool)].sort_values(
        "p_value", kind="stable"
    )
    return [
        (_plain(a), _plain(b))
        for a, b in zip(flagged["lf_a"].tolist(), flagged["lf_b"].tolist(), strict=True)
    ]


def _plain(v: Any) -> Any:
    return int(v) if isinstance(v, np.integer) else v
