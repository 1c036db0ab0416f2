"""Tensor-decomposition estimator of LF accuracies on a finite space (paper sec. 3).

Three labeling functions (views) a, b, c are conditionally independent given the latent
label Y, which takes k values y_1..y_k with weights w_j. In the pseudo-Euclidean
embedding X of the space (augmented with a constant coordinate, x~ = [x, 1]),

    M_ab = E[x~_a x~_b^T] = sum_j w_j mu_aj mu_bj^T,
    T_abc = E[x~_a (x) x~_b (x) x~_c] = sum_j w_j mu_aj (x) mu_bj (x) mu_cj,

with mu_aj = E[x~_a | Y = y_j]. Everything is computed from vote counts (VoteStats),
never from rows. The decomposition (Jennrich / simultaneous diagonalization):

1. whiten with the top-k singular pairs of M_ab: W_a^T M_ab W_b = I_k, so that
   A = W_a^T mu_a diag(w)^1/2 and B = W_b^T mu_b diag(w)^1/2 satisfy B^T = A^-1;
2. the whitened slices T_l = T_abc(W_a, W_b, e_l) = A diag(mu_c[l, :]) A^-1 share the
   eigenvectors A; eigen-decompose one random combination (best of ``n_restarts``
   seeded draws, judged by how well A diagonalizes every slice) and read mu_c off the
   diagonals of A^-1 T_l A. No scale ambiguity: the constant coordinate gives 1;
3. every other view is then a linear solve against the recovered view c,
   E[onehot(lambda_e) x~_c^T] = Q_e mu_c^T with Q_e[v, j] = P(lambda_e = v, Y = y_j),
   so all components stay aligned with the single decomposition (the authors' code
   decomposed three times and aligned by extraction order); c's own table is solved
   against a and b, and each LF's final table against its two best-conditioned
   partners (the "triplet" of that LF);
4. each component's label is identified without an oracle: for component j and each
   candidate label y, fit theta_e by moment matching (the MLE of the exponential
   family) to the recovered pmf P(lambda_e = . | Y = y_j) and score y by the summed
   cross-entropy; distinct labels by a linear assignment;
5. E[d^2(lambda_e, Y)] = sum_j sum_v Q_e[v, j] S[v, y_j]. This is the paper's formula
   E[x^T s x] - 2 sum_j w_j mu_j^T s y_j + sum_j w_j y_j^T s y_j evaluated with
   mu_j = X^T P(. | y_j) (the embedding is isometric), written in the pmfs so that it
   does not depend on the embedding's origin.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment
from threadpoolctl import ThreadpoolController

from snorkel_structured import _warnings
from snorkel_structured._validation import (
    ABSTAIN,
    check_distance_matrix,
    check_scalar,
    check_seed,
)
from snorkel_structured.embedding import PseudoEuclideanEmbedding
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.exceptions import IdentifiabilityWarning
from snorkel_structured.noise.finite import (
    THETA_CAP,
    dissimilarity_unit,
    theta_from_expected_sq_dist,
)

__all__ = ["TensorEstimate", "tensor_estimate"]

# A canonical correlation counts as signal when it exceeds this multiple of the
# Marchenko-Pastur noise edge (sqrt(r_a) + sqrt(r_b)) / sqrt(n_ab). Rare labels make
# the normalized table heavy-tailed, so marginals are floored at _CELL_FLOOR / n_ab.
# (Calibrated on the paper's S4 setup: over 20 seeds x 3 pairs the third canonical
# correlation, pure noise, stays below 1.1x the edge at n = 1e3 and 1.5x at 1e6.)
_NOISE_EDGE_FACTOR = 1.5
_CELL_FLOOR = 20.0
# Relative singular-value tolerance below which whitening is treated as singular.
_REL_TOL = 1e-10
# Fewer rows than this (per component) in the decomposition triplet: warn.
_MIN_ROWS_PER_COMPONENT = 20
# Candidate labels scored by likelihood per component (after a cheap screen).
_N_CANDIDATES = 16


@dataclass(frozen=True)
class TensorEstimate:
    """Result of :func:`tensor_estimate`.

    Attributes
    ----------
    prior : ndarray of shape (r,)
        Estimated P(Y = y); zero off ``support``.
    support : ndarray of int64 of shape (n_components,)
        Label index identified for each recovered component.
    expected_sq_dist : ndarray of shape (n_lfs,)
        Estimated E[d^2(lambda_a, Y)] per LF (NaN for an LF with no usable partners).
    theta : ndarray of shape (n_lfs,)
        Canonical parameters of exp(-theta d^2) / Z matching ``expected_sq_dist`` under
        ``prior`` (0 where the estimate is NaN).
    conditional_probs : ndarray of shape (n_lfs, n_components, r)
        Recovered P(lambda_a = v | Y = support[j]) indexed [a, j, v], clipped to be
        non-negative and normalized (a starting point for EM).
    weights : ndarray of shape (n_components,)
        Raw component weights before clipping (may be invalid when not identifiable).
    n_components : int
        Number of mixture components k used.
    identifiable : bool
        False when any identifiability check failed (see ``warnings``).
    warnings : list of str
        Every identifiability warning raised.
    triplet : tuple of int
        The (a, b, c) views of the decomposition (c is the decomposed view).
    triplets : ndarray of int64 of shape (n_lfs, 3)
        Row a: (a, f, g), the two partners whose recovered components LF a was solved
        against (-1 where none).
    singular_values : ndarray
        Canonical correlations of the whitening pair (a, b) (the spectrum behind k).
    """

    prior: np.ndarray
    support: np.ndarray
    expected_sq_dist: np.ndarray
    theta: np.ndarray
    conditional_probs: np.ndarray
    weights: np.ndarray
    n_components: int
    identifiable: bool
    warnings: list[str] = field(default_factory=list)
    triplet: tuple[int, int, int] = (-1, -1, -1)
    triplets: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    singular_values: np.ndarray = field(default_factory=lambda: np.zeros(0))


# -- moments from counts --------------------------------------------------------------


@dataclass
class _Pair:
    counts: np.ndarray  # (r, r) joint counts of (lambda_a, lambda_b)
    n: float
    cca: np.ndarray  # canonical correlations (singular values of the normalized table)
    edge: float  # noise edge of the canonical correlations


def _pair_info(stats: VoteStats, a: int, b: int) -> _Pair:
    C = stats.pair_counts(a, b)
    n = float(C.sum())
    if n <= 0:
        return _Pair(C, 0.0, np.zeros(0), np.inf)
    pa, pb = C.sum(1) / n, C.sum(0) / n
    ia, ib = np.flatnonzero(pa), np.flatnonzero(pb)
    da, db = np.maximum(pa[ia], _CELL_FLOOR / n), np.maximum(pb[ib], _CELL_FLOOR / n)
    K = (C[np.ix_(ia, ib)] / n) / np.sqrt(np.outer(da, db))
    sv = np.linalg.svd(K, compute_uv=False)
    edge = (np.sqrt(ia.size) + np.sqrt(ib.size)) / np.sqrt(n)
    return _Pair(C, n, sv, edge)


def _rank(p: _Pair) -> int:
    return int((p.cca > _NOISE_EDGE_FACTOR * p.edge).sum()) if p.n > 0 else 0


def _snr(p: _Pair, k: int) -> float:
    """How far the k-th canonical correlation clears the noise edge."""
    if p.n <= 0 or p.cca.size < k:
        return 0.0
    return float(p.cca[k - 1] / p.edge)


def _whitened_slices(
    stats: VoteStats,
    a: int,
    b: int,
    c: int,
    Wa: np.ndarray,
    Wb: np.ndarray,
    Xc: np.ndarray,
) -> tuple[np.ndarray, float]:
    """T_abc(W_a, W_b, I) of shape (k, k, D) from the vote patterns, and n_abc.

    Uses one bincount per (p, q) entry of the k x k whitened slice over the patterns
    (never r^3 memory): G[v, p, q] = sum over rows with lambda_c = v.
    """
    P = stats.patterns
    keep = (P[:, a] != ABSTAIN) & (P[:, b] != ABSTAIN) & (P[:, c] != ABSTAIN)
    cnt = stats.counts[keep]
    n_abc = float(cnt.sum())
    k = Wa.shape[1]
    r = stats.n_labels
    if n_abc <= 0:
        return np.zeros((k, k, Xc.shape[1])), 0.0
    ua, ub, vc = Wa[P[keep, a]], Wb[P[keep, b]], P[keep, c]
    G = np.empty((r, k, k))
    for p in range(k):  # k^2 vectorized bincounts over patterns
        wp = cnt * ua[:, p]
        for q in range(k):
            G[:, p, q] = np.bincount(vc, weights=wp * ub[:, q], minlength=r)
    return np.einsum("vpq,vl->pql", G, Xc) / n_abc, n_abc


def _diagonalize(
    T: np.ndarray, rng: np.random.Generator, n_restarts: int
) -> tuple[np.ndarray, float]:
    """Simultaneously diagonalize the slices T[:, :, l] = A diag(mu[l]) A^-1.

    Returns mu of shape (D, k) and the relative off-diagonal residual of the best of
    ``n_restarts`` random combinations (each from its own spawned stream).
    """
    k, _, D = T.shape
    scale = np.sqrt(np.einsum("pql,pql->", T, T))
    best: tuple[np.ndarray, float] | None = None
    for child in rng.spawn(n_restarts):
        eta = child.standard_normal(D)
        vals, A = np.linalg.eig(T @ eta)
        if np.iscomplexobj(vals):  # near-equal eigenvalues under noise
            A = np.real(A)
        A = A / np.linalg.norm(A, axis=0, keepdims=True)
        try:
            Ainv = np.linalg.inv(A)
        except np.linalg.LinAlgError:
            continue
        R = np.einsum("jp,pql,qi->lji", Ainv, T, A)  # (D, k, k)
        diag = np.einsum("ljj->lj", R)
        off = R - np.einsum("lj,ji->lji", diag, np.eye(k))
        resid = float(np.sqrt(np.einsum("lji,lji->", off, off)) / max(scale, 1e-300))
        if not np.isfinite(resid):
            continue
        if best is None or resid < best[1]:
            best = (diag, resid)
    if best is None:
        return np.full((D, k), np.nan), np.inf
    return best


def _solve_joint(blocks: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Least-squares Q with [E_1, E_2, ...] = Q [F_1^T, F_2^T, ...] over blocks."""
    E = np.concatenate([e for e, _ in blocks], axis=1)
    F = np.concatenate([f for _, f in blocks], axis=0)
    return np.linalg.lstsq(F, E.T, rcond=None)[0].T


# -- label identification ----------------------------------------------------------


def _identify_labels(S: np.ndarray, pmfs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Label of each component by the model's likelihood; distinct by assignment.

    ``pmfs`` (m, k, r): recovered P(lambda_e = v | component j). For candidate y and
    LF e, g(theta) = sum_v p(v) log P_theta(v | y) = -theta t - log Z(theta, y) with
    t = sum_v p(v) S[v, y] is concave in theta; its maximum (the MLE, where
    E_theta[S[., y]] = t) is found by safeguarded Newton steps from the best point of
    a coarse grid, vectorized over components, LFs and candidates. The score of y is
    sum_e max_theta g. Returns the labels (k,) and the score matrix (k, r) (-inf off
    the shortlist of labels with the smallest summed expected squared distance).
    """
    m, k, r = pmfs.shape
    T = np.einsum("ejv,vy->jey", pmfs, S)  # t[j, e, y]
    n_cand = min(r, _N_CANDIDATES)
    cand = np.unique(np.argsort(T.sum(axis=1), axis=1, kind="stable")[:, :n_cand])
    rows = S[cand]  # (c, r): S[y, .] for each candidate y
    t = T[:, :, cand]  # (k, m, c)

    row_min = rows.min(axis=-1)  # logits peak at the row minimum (theta >= 0)

    def g_and_moments(theta: np.ndarray) -> tuple[np.ndarray, ...]:
        logits = -theta[..., None] * (rows - row_min[:, None])  # (..., c, r), max 0
        p = np.exp(logits)
        z = p.sum(-1)
        logZ = np.log(z) - theta * row_min
        p /= z[..., None]
        mean = (p * rows).sum(-1)
        var = np.clip((p * rows * rows).sum(-1) - mean * mean, 0.0, None)
        return logZ, mean, var

    grid = np.concatenate([[0.0], np.geomspace(1e-3, THETA_CAP, 40)])
    logZ_grid = g_and_moments(grid[:, None])[0]  # (G, c)
    g_grid = -grid[:, None, None, None] * t[None] - logZ_grid[:, None, None, :]
    theta = grid[np.argmax(g_grid, axis=0)]  # (k, m, c)
    for _ in range(30):  # Newton on the concave g: theta += (mean - t) / var
        _, mean, var = g_and_moments(theta)
        step = (mean - t) / np.maximum(var, 1e-300)
        step = np.clip(step, -0.5 * (theta + 1), theta + 1)
        new = np.clip(theta + step, 0, THETA_CAP)
        done = np.abs(new - theta).max() <= 1e-12 * (1 + theta.max())
        theta = new
        if done:
            break
    logZ = g_and_moments(theta)[0]
    score = np.full((k, r), -np.inf)
    score[:, cand] = (-theta * t - logZ).sum(axis=1)
    finite = np.where(np.isfinite(score), score, -1e300)
    rows_idx, cols = linear_sum_assignment(finite, maximize=True)
    labels = np.empty(k, dtype=np.int64)
    labels[rows_idx] = cols
    return labels, score


@functools.lru_cache(maxsize=1)
def _blas_controller() -> ThreadpoolController:
    """One scan of the loaded BLAS libraries per process (the scan costs ~0.1 s)."""
    return ThreadpoolController()


# -- the estimator -----------------------------------------------------------------


def _check_inputs(
    stats: Any, S: Any, n_components: Any, embedding: Any, n_restarts: Any
) -> tuple[np.ndarray, int | None, PseudoEuclideanEmbedding | None, int]:
    if not isinstance(stats, VoteStats):
        raise TypeError(
            f"stats must be a VoteStats; got {type(stats).__name__}. Build one with "
            "VoteStats.from_label_matrix(L, n_labels=len(space))."
        )
    S = check_distance_matrix(S, "S (squared distance matrix)", squared=True)
    r = S.shape[0]
    if r != stats.n_labels:
        raise ValueError(
            f"S must be ({stats.n_labels}, {stats.n_labels}) to match stats.n_labels; "
            "got "
            f"shape {S.shape}. Pass space.squared_distance_matrix of the space L "
            "indexes."
        )
    if stats.n_lfs < 3:
        raise ValueError(
            "stats must come from at least 3 labeling functions; got "
            f"n_lfs={stats.n_lfs}. "
            "The tensor method needs three conditionally independent views."
        )
    if n_components is not None:
        n_components = check_scalar(
            n_components, "n_components", kind="int", low=1, high=r
        )
    n_restarts = check_scalar(n_restarts, "n_restarts", kind="int", low=1)
    if embedding is None:
        pass  # fitted inside the single-threaded BLAS block
    elif not isinstance(embedding, PseudoEuclideanEmbedding) or not hasattr(
        embedding, "coords_"
    ):
        raise ValueError(
            f"embedding must be a fitted PseudoEuclideanEmbedding; got {embedding!r}. "
            "Call PseudoEuclideanEmbedding().fit(S) or pass None."
        )
    elif embedding.coords_.shape[0] != r:
        raise ValueError(
            f"embedding must embed {r} labels; got one fitted on "
            f"{embedding.coords_.shape[0]}. Fit it on the same S."
        )
    return S, n_components, embedding, n_restarts


def tensor_estimate(
    stats: VoteStats,
    S: np.ndarray,
    *,
    n_components: int | None = None,
    embedding: PseudoEuclideanEmbedding | None = None,
    seed: Any = None,
    n_restarts: int = 10,
    dependencies: Any = (),
) -> TensorEstimate:
    """Estimate each LF's E[d^2(lambda_a, Y)] and the prior by tensor decomposition.

    Parameters
    ----------
    stats : VoteStats
        Vote-pattern counts of the label matrix (n_samples, n_lfs), n_lfs >= 3.
    S : ndarray of shape (r, r)
        Squared distances of the label space (``space.squared_distance_matrix``).
    n_components : int, optional
        Number k of labels with prior mass. Default: read from the spectrum of the
        pairwise moments (the largest k for which some triplet of LFs has k canonical
        correlations above the noise edge).
    embedding : PseudoEuclideanEmbedding, optional
        A fitted embedding of S (exact by default; computed once here if omitted).
    seed : None, int or numpy.random.Generator
        Drives the random combinations of the diagonalization restarts (spawned
        streams). A Generator passed in advances.
    n_restarts : int, default=10
        Random combinations tried; the one that best diagonalizes every slice wins.
    dependencies : sequence of (int, int), default=()
        LF pairs known to be dependent: no decomposition triplet and no partner of
        an LF's solve contains such a pair (their joint moments are not those of
        conditionally independent LFs).

    Returns
    -------
    TensorEstimate

    Raises
    ------
    TypeError
        If ``stats`` is not a VoteStats.
    ValueError
        If S does not match ``stats``, fewer than 3 LFs, or ``n_components``,
        ``n_restarts`` or ``embedding`` are invalid.

    Warns
    -----
    IdentifiabilityWarning
        An LF independent of all others (pure noise), rank deficiency (k above what the
        moments or the embedding support), too few rows, invalid component weights, or
        an LF with no usable partners. The best estimate is still returned with
        ``identifiable=False``.

    Notes
    -----
    See the module docstring for the method. Cost: one pass over the unique vote
    patterns per pair and per decomposition triplet; no per-row Python.

    References
    ----------
    .. [1] A. Anandkumar, R. Ge, D. Hsu, S. Kakade, M. Telgarsky. "Tensor decompositions
       for learning latent variable models." JMLR 15, 2014 (sec. 3.3, 4.3).
    .. [2] H. Vishwakarma, N. Roberts, F. Sala. "Lifting Weak Supervision To Structured
       Prediction." NeurIPS 2022 (sec. 3, Algorithm 1).

    Examples
    --------
    >>> import numpy as np
    >>> from snorkel_structured.synthetic import make_ranking_data
    >>> from snorkel_structured.estimators import VoteStats, tensor_estimate
    >>> data = make_ranking_data(100_000, seed=0)
    >>> stats = VoteStats.from_label_matrix(data.L, n_labels=len(data.space))
    >>> est = tensor_estimate(stats, data.space.squared_distance_matrix, seed=0)
    >>> est.n_components, bool(np.all(np.sort(est.support) == data.support))
    (2, True)
    >>> bool(np.abs(est.expected_sq_dist - data.expected_sq_dist).max() < 0.05)
    True
    """
    S, k_given, embedding, n_restarts = _check_inputs(
        stats, S, n_components, embedding, n_restarts
    )
    rng = check_seed(seed)
    # The estimate runs in units of the smallest positive squared distance: the
    # constant coordinate of x~ = [x, 1] and the theta grid then weigh the same
    # whatever the unit of S, and the result scales exactly with it.
    unit = dissimilarity_unit(S)
    coords = None if embedding is None else embedding.coords_ / np.sqrt(unit)
    # Every matrix here is at most r x r: multithreaded BLAS only adds overhead, and
    # on a busy machine OpenBLAS threads on a 120 x 120 SVD cost 100x (measured).
    with _blas_controller().limit(limits=1, user_api="blas"):
        est = _tensor_estimate(
            stats, S / unit, k_given, coords, n_restarts, rng, dependencies, unit
        )
    return replace(
        est, expected_sq_dist=est.expected_sq_dist * unit, theta=est.theta / unit
    )


def _tensor_estimate(
    stats: VoteStats,
    S: np.ndarray,
    k_given: int | None,
    coords: np.ndarray | None,
    n_restarts: int,
    rng: np.random.Generator,
    dependencies: Any,
    unit: float,
) -> TensorEstimate:
    """The estimate for ``S`` in units of ``unit`` (E[d^2] and theta in those units)."""
    if coords is None:
        coords = PseudoEuclideanEmbedding().fit(S).coords_
    r, m = S.shape[0], stats.n_lfs
    messages: list[str] = []

    def warn(msg: str) -> None:
        messages.append(msg)
        _warnings.warn(msg, IdentifiabilityWarning, stacklevel=4)

    pairs = {
        (a, b): _pair_info(stats, a, b) for a, b in itertools.combinations(range(m), 2)
    }

    def pair(a: int, b: int) -> _Pair:
        return pairs[(a, b)] if a < b else pairs[(b, a)]

    # Pure-noise LFs: votes independent of every other LF (no second canonical
    # correlation above the noise edge with anyone).
    lf_rank = np.array(
        [max(_rank(pair(e, f)) for f in range(m) if f != e) for e in range(m)]
    )
    dependent = {frozenset((int(a), int(b))) for a, b in dependencies}

    def independent(*lfs: int) -> bool:
        return not any(
            frozenset(p) in dependent for p in itertools.combinations(lfs, 2)
        )

    triplets_all = [t for t in itertools.combinations(range(m), 3) if independent(*t)]
    if not triplets_all:
        warn(
            "No triplet of LFs is free of the declared dependencies; the tensor "
            "estimate uses dependent triplets."
        )
        triplets_all = list(itertools.combinations(range(m), 3))
    # A triplet's rank: the median of its three pairs' ranks (one weak or one
    # spuriously strong pair does not decide it).
    trip_rank = {
        t: int(
            np.median(
                [_rank(pair(*t[:2])), _rank(pair(t[0], t[2])), _rank(pair(*t[1:]))]
            )
        )
        for t in triplets_all
    }
    k_spec = max(trip_rank.values())
    k = k_given if k_given is not None else max(k_spec, 1)

    Xt = np.hstack([coords, np.ones((r, 1))])  # x~ = [x, 1]
    D = Xt.shape[1]
    if k > D:
        warn(
            f"n_components={k} exceeds the embedding rank + 1 = {D}: the components "
            "are "
            f"not identifiable by moments; using k={D}."
        )
        k = D
    if k >= 2:
        noisy = np.flatnonzero(lf_rank <= 1)
        if noisy.size:
            warn(
                f"LF(s) {noisy.tolist()} vote independently of every other LF (pure "
                "noise "
                "or too few rows): their factor matrix is rank-deficient, so the "
                "tensor "
                "method cannot identify them; their estimates are unreliable. Use "
                "estimator='mle' or drop them."
            )
        if k_given is not None and k_given > k_spec:
            warn(
                f"n_components={k_given} but no triplet of LFs shows more than "
                f"{k_spec} "
                "canonical correlation(s) above the noise edge: the moments are "
                "rank-deficient (pure-noise LFs or too few rows)."
            )
    elif k_given is None and m >= 3:
        warn(
            "Estimated a single component: no triplet of LFs shows dependence above "
            "the "
            "noise edge. If Y takes several values, the LFs are pure noise or there "
            "are "
            "too few rows; the estimate then treats Y as constant."
        )

    # Decomposition triplet: best-conditioned at level k (worst pair of the three).
    def trip_score(t: tuple[int, int, int]) -> float:
        return min(
            _snr(pair(t[0], t[1]), k),
            _snr(pair(t[0], t[2]), k),
            _snr(pair(t[1], t[2]), k),
        )

    best = max(triplets_all, key=trip_score)
    # c (the decomposed view) is the member best connected to the other two.
    c = max(best, key=lambda e: sum(_snr(pair(e, f), k) for f in best if f != e))
    a, b = (e for e in best if e != c)

    def moment(e: int, f: int) -> tuple[np.ndarray, float]:
        """(E[onehot_e onehot_f^T] over rows where both voted, n_ef)."""
        p = pair(e, f)
        C = p.counts if e < f else p.counts.T
        return (C / p.n if p.n > 0 else C), p.n

    Q = np.full((m, r, k), np.nan)  # Q[e, v, j] = P(lambda_e = v, Y = y_j)
    if k == 1:
        for e in range(m):
            Q[e, :, 0] = stats.vote_counts(e) / max(stats.vote_counts(e).sum(), 1e-300)
        mu_c = None
        n_abc = float(stats.counts.sum())
    else:
        Pab, n_ab = moment(a, b)
        Mab = Xt.T @ Pab @ Xt
        U, sv, Vt = np.linalg.svd(Mab)
        floor = _REL_TOL * sv[0]
        s_k = np.maximum(sv[:k], floor)
        Wa, Wb = (Xt @ U[:, :k]) / np.sqrt(s_k), (Xt @ Vt[:k].T) / np.sqrt(s_k)
        T, n_abc = _whitened_slices(stats, a, b, c, Wa, Wb, Xt)
        mu_c, resid = _diagonalize(T, rng, n_restarts)  # (D, k)
        if not np.isfinite(mu_c).all():
            warn(
                f"The decomposition of triplet {(a, b, c)} failed (singular "
                "eigenvectors)."
            )
            mu_c = np.nan_to_num(mu_c)
        # Step 3: every other view by a linear solve against the decomposed view c.
        for e in range(m):
            if e == c:
                continue
            Pec, n_ec = moment(e, c)
            if n_ec > 0:
                Q[e] = _solve_joint([(Pec @ Xt, mu_c)])
    if n_abc < _MIN_ROWS_PER_COMPONENT * k:
        warn(
            f"Only {n_abc:.0f} rows where LFs {(a, b, c)} all voted: too few rows for "
            f"{k} components; collect more data."
        )

    def pmfs_of(Qe: np.ndarray, w: np.ndarray) -> np.ndarray:
        P = np.clip(Qe / np.where(np.abs(w) > 1e-12, w, 1e-12), 0.0, None)
        tot = P.sum(axis=0, keepdims=True)
        return np.where(tot > 0, P / np.where(tot > 0, tot, 1.0), 1.0 / r)  # (r, k)

    # Weights from the two whitening views (their tables came from the decomposition).
    w = np.nanmean(np.stack([Q[a].sum(axis=0), Q[b].sum(axis=0)]), axis=0)
    pmf = np.stack(
        [
            pmfs_of(Q[e], w) if np.isfinite(Q[e]).all() else np.full((r, k), 1.0 / r)
            for e in range(m)
        ]
    )
    if k >= 2:
        # Step 3b: each LF's table against its two best-conditioned partners'
        # recovered pmfs (c's from a and b; a's from b and c; ...).
        triplets = np.full((m, 3), -1, dtype=np.int64)
        newQ = Q.copy()
        for e in range(m):
            if e in best:
                partners = [f for f in best if f != e]
            else:
                cand = [
                    f
                    for f in range(m)
                    if f != e and pair(e, f).n > 0 and independent(e, f)
                ]
                partners = sorted(cand, key=lambda f: -_snr(pair(e, f), k))[:2]
            blocks = []
            for f in partners:
                Pef, n_ef = moment(e, f)
                if n_ef > 0:
                    blocks.append((Pef, pmf[f]))
            if blocks:
                newQ[e] = _solve_joint(blocks)
                triplets[e, : 1 + len(partners)] = [e, *partners]
        Q = newQ
        w = np.mean(np.stack([Q[e].sum(axis=0) for e in best]), axis=0)
        pmf = np.stack(
            [
                pmfs_of(Q[e], w)
                if np.isfinite(Q[e]).all()
                else np.full((r, k), 1.0 / r)
                for e in range(m)
            ]
        )
    else:
        triplets = np.tile(np.arange(3, dtype=np.int64), (m, 1))
        triplets[:, 0] = np.arange(m)

    weights = w.copy()
    if (w <= 0).any() or not np.isfinite(w).all():
        warn(
            f"Recovered component weights {np.round(w, 4).tolist()} are not all "
            "positive: "
            "the decomposition is not identifiable here (rank deficiency or too few "
            "rows)."
        )
    w_pos = np.clip(np.nan_to_num(w), 1e-12, None)
    w_pos = w_pos / w_pos.sum()

    support, _ = _identify_labels(S, pmf.transpose(0, 2, 1))
    if (
        np.unique(support).size < k
    ):  # pragma: no cover - assignment gives distinct labels
        warn("Two components were identified with the same label.")
    prior = np.zeros(r)
    prior[support] = w_pos

    # Step 5: E[d^2] = sum_j sum_v Q[e, v, j] S[v, y_j].
    Ssup = S[:, support]  # (r, k)
    esd = np.einsum("evj,vj->e", Q, Ssup)
    missing = np.flatnonzero(~np.isfinite(esd))
    if missing.size:
        warn(
            f"LF(s) {missing.tolist()} never co-voted with a recovered view: no "
            "estimate."
        )
    uniform_mean = float(S.mean(axis=1) @ prior)
    bad = np.flatnonzero(np.isfinite(esd) & ((esd < 0) | (esd > 1.5 * uniform_mean)))
    if bad.size:
        warn(
            f"LF(s) {bad.tolist()} got an invalid E[d^2] estimate "
            f"{np.round(esd[bad] * unit, 4).tolist()} (outside [0, 1.5 x uniform mean]): not "
            "identifiable from these moments."
        )
    finite = np.isfinite(esd)
    theta = np.zeros(m)
    if finite.any():
        theta[finite] = theta_from_expected_sq_dist(
            S, np.clip(esd[finite], 0, None), prior
        )

    return TensorEstimate(
        prior=prior,
        support=support,
        expected_sq_dist=esd,
        theta=theta,
        conditional_probs=pmf.transpose(0, 2, 1),
        weights=weights,
        n_components=int(k),
        identifiable=not messages,
        warnings=messages,
        triplet=(int(a), int(b), int(c)),
        triplets=triplets,
        singular_values=pair(a, b).cca,
    )
