"""Each ranking LF's weight on the pairs it orders, from unlabeled votes.

Three noise models share the posterior ``P(y | votes) ~ exp(-sum_a sum_p w_ap
[y orders pair p against LF a])``, a weighted Kemeny problem:

- ``"mallows"``: LF a's vote is a top-k Mallows draw around y, ``w_ap = theta_a``
  (votes given as lists, see :mod:`~snorkel_structured.rankings.mallows`);
- ``"pairwise"``: each pair LF a orders is flipped independently with probability
  ``1 / (1 + exp(theta_a))``, ``w_ap = theta_a`` (any partial order);
- ``"position"``: as ``"pairwise"``, with ``w_ap = theta_a + slope_a x_ap``, x the
  pair's gap in a's list scaled to [0, 1] (:func:`estimate_position_weights`).

Estimation, in two steps:

1. **Triplets, closed form.** For two LFs that are independent given y, the mean of
   ``s_a s_b`` over the pairs both order is ``mu_a mu_b``, with ``mu_a = 1 - 2 eps_a``
   and ``eps_a`` LF a's rate of disagreement with y. So ``mu_a^2 = A_ab A_ac / A_bc``
   for any other two LFs b, c, all three taken over the pairs the three LFs order
   (the median over b, c is taken). This is exact under the pairwise model and a
   good start under Mallows, whose flips concentrate on pairs that y puts close
   together.
2. **Likelihood, by Monte Carlo EM.** On a random sample of rows, Gibbs chains
   (adjacent swaps) draw y from the current posterior; the M-step matches each LF's
   expected disagreements (the sufficient statistic of the first two models) to the
   model's, or fits a logistic curve of agreement on the gap (the third). The
   chains persist across iterations and the last iterations are averaged.

:class:`RankingStats` holds what a pass over the rows yields: the pairwise agreement
sums (for the dependency test) and a bottom-k sample of rows by random key (for the
triplets and the EM). Both add across chunks, so ``partial_fit`` and Dask reduce by
``+``; a row's key depends on the seed and the row's index alone
(:func:`row_keys`), so the chunks of one array add up to the statistics of the whole
array, sample and sample order included, and the EM sees the same input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse
from scipy.special import expit

from snorkel_structured._validation import check_seed
from snorkel_structured.rankings._gibbs import gibbs_sweeps, pair_margins
from snorkel_structured.rankings._votes import n_pairs
from snorkel_structured.rankings.mallows import (
    THETA_MAX,
    ordered_pairs,
    theta_from_disagreements,
)

__all__ = [
    "GapCells",
    "NOISE_MODELS",
    "RankingStats",
    "estimate_position_weights",
    "estimate_theta",
    "fit_gap_curves",
    "gap_cells",
    "gap_features",
    "k_histogram",
    "logistic_fit",
    "pair_signs",
    "position_weights",
    "row_keys",
    "theta_from_rate",
    "triplet_theta",
]

NOISE_MODELS = ("mallows", "pairwise", "position")
# Rows the agreement sums process at once (bounds the float32 copies of S).
_CHUNK_ROWS = 4096
# float32 holds every integer up to 2^24 exactly: a block's sums of +-1 and 0 terms
# stay exact (and so do not depend on how the rows are split into blocks or chunks)
# while the block holds at most this many (row, pair) instances.
_F32_EXACT = 2**24


def _exact_blocks(n_pairs: int) -> tuple[int, type]:
    """Rows per block and the float type in which a block's counts are exact."""
    if n_pairs > _F32_EXACT:  # over 5,793 items: one row alone could round
        return 1, np.float64
    return max(1, min(_CHUNK_ROWS, _F32_EXACT // max(n_pairs, 1))), np.float32


def row_keys(seed: Any, first_row: int, n_rows: int) -> np.ndarray:
    """Random keys in [0, 1) of the rows ``first_row`` ... ``first_row + n_rows - 1``.

    They are those draws of one counter-based (Philox) stream keyed by ``seed``: with
    an int seed a row's key is a function of the seed and the row's index alone, so
    the keys of an array's chunks, each passed its first row's index, are the keys of
    the whole array. A Generator or None seeds a stream of its own per call.
    """
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        check_seed(seed)  # the same errors as everywhere else (e.g. a negative seed)
    else:
        seed = check_seed(seed).integers(2**63)
    bits = np.random.Philox(int(seed))
    # Philox's counter steps over 4 draws at a time: skip the blocks, then the rest.
    bits.advance(first_row // 4)
    rng = np.random.Generator(bits)
    rng.random(first_row % 4)
    return rng.random(n_rows)


def theta_from_rate(
    eps: np.ndarray, n_items: int, k_counts: np.ndarray | None
) -> np.ndarray:
    """theta of each LF whose disagreement rate over the pairs it orders is ``eps``."""
    eps = np.clip(eps, 0.0, 0.5)
    if k_counts is None:  # pairwise model: eps = 1 / (1 + exp(theta))
        with np.errstate(divide="ignore"):
            return np.minimum(np.log((1 - eps) / np.maximum(eps, 1e-300)), THETA_MAX)
    pairs = k_counts @ ordered_pairs(n_items, np.arange(k_counts.shape[1]))
    return theta_from_disagreements(eps * pairs, n_items, k_counts)


@dataclass
class RankingStats:
    """Additive statistics of ranking votes.

    Attributes
    ----------
    n_items, n_lfs : int
    n_rows : int
    agree : ndarray of shape (n_lfs, n_lfs)
        Sum over (row, pair) instances of ``s_a s_b`` (both LFs order the pair).
    both : ndarray of shape (n_lfs, n_lfs)
        Number of instances both LFs order (diagonal: instances LF a orders).
    k_counts : ndarray of shape (n_lfs, n_items + 1) or None
        Rows on which each LF lists k items (None for pairwise votes).
    sample_S : ndarray of int8 of shape (n_sample, n_lfs, n_pairs)
        The rows with the smallest random keys (a uniform sample without
        replacement, kept so across chunks), in the order of their keys (ties: by
        row index).
    sample_k : ndarray of int of shape (n_sample, n_lfs) or None
    sample_keys : ndarray of shape (n_sample,)
    capacity : int
    sample_pos : ndarray of int of shape (n_sample, n_lfs, n_items) or None
        Each sampled vote's item positions (:func:`vote_positions`), for the
        position-dependent model; None for pairwise votes.
    """

    n_items: int
    n_lfs: int
    n_rows: int
    agree: np.ndarray
    both: np.ndarray
    k_counts: np.ndarray | None
    sample_S: np.ndarray
    sample_k: np.ndarray | None
    sample_keys: np.ndarray
    capacity: int = field(default=20000)
    sample_pos: np.ndarray | None = None

    @classmethod
    def from_votes(
        cls,
        S: np.ndarray,
        k: np.ndarray | None,
        n_items: int,
        *,
        capacity: int = 20000,
        seed: Any = None,
        pos: np.ndarray | None = None,
        first_row: int = 0,
    ) -> RankingStats:
        """Statistics of one chunk of pairwise votes ``S`` (n_rows, n_lfs, n_pairs).

        ``k`` (n_rows, n_lfs) holds each vote's list length and ``pos`` (n_rows,
        n_lfs, n_items) its item positions (both None: pairwise votes).
        ``first_row`` is the index of the chunk's first row among all the rows: with
        an int ``seed``, the sampling keys (:func:`row_keys`) then follow the rows,
        and chunks added in order equal the statistics of all their rows at once.
        """
        n_rows, m, n_p = S.shape
        agree = np.zeros((m, m))
        both = np.zeros((m, m))
        block, dtype = _exact_blocks(n_p)
        for start in range(0, n_rows, block):
            X = S[start : start + block].transpose(1, 0, 2).reshape(m, -1)
            Xf = X.astype(dtype)
            agree += (Xf @ Xf.T).astype(np.float64)
            Af = np.abs(Xf)
            both += (Af @ Af.T).astype(np.float64)
        k_counts = None if k is None else k_histogram(k, n_items)
        keys = row_keys(seed, first_row, n_rows)
        # Stable: equal keys keep the row order, as __add__ keeps it across chunks.
        keep = np.argsort(keys, kind="stable")[:capacity]
        return cls(
            n_items=n_items,
            n_lfs=m,
            n_rows=n_rows,
            agree=agree,
            both=both,
            k_counts=k_counts,
            sample_S=S[keep].copy(),
            sample_k=None if k is None else k[keep].copy(),
            sample_keys=keys[keep],
            capacity=capacity,
            sample_pos=None if pos is None else pos[keep].copy(),
        )

    def __add__(self, other: RankingStats) -> RankingStats:
        if (self.n_items, self.n_lfs) != (other.n_items, other.n_lfs):
            raise ValueError(
                f"cannot add statistics of {self.n_lfs} LFs over {self.n_items} items "
                f"to statistics of {other.n_lfs} LFs over {other.n_items} items."
            )
        if (self.k_counts is None) != (other.k_counts is None):
            raise ValueError("cannot add statistics of list votes to pairwise votes.")
        # ``self`` holds the earlier rows (partial_fit, chunks and Dask add in row
        # order): a stable sort breaks ties between keys by row, as one chunk would.
        keys = np.concatenate([self.sample_keys, other.sample_keys])
        capacity = min(self.capacity, other.capacity)
        keep = np.argsort(keys, kind="stable")[:capacity]
        S = np.concatenate([self.sample_S, other.sample_S])[keep]
        k = (
            None
            if self.sample_k is None
            else np.concatenate([self.sample_k, other.sample_k])[keep]
        )
        pos = (
            None
            if self.sample_pos is None or other.sample_pos is None
            else np.concatenate([self.sample_pos, other.sample_pos])[keep]
        )
        return RankingStats(
            sample_pos=pos,
            n_items=self.n_items,
            n_lfs=self.n_lfs,
            n_rows=self.n_rows + other.n_rows,
            agree=self.agree + other.agree,
            both=self.both + other.both,
            k_counts=None if self.k_counts is None else self.k_counts + other.k_counts,
            sample_S=S,
            sample_k=k,
            sample_keys=keys[keep],
            capacity=capacity,
        )

    @property
    def agreement(self) -> np.ndarray:
        """(n_lfs, n_lfs) mean of ``s_a s_b`` over the pairs both order (NaN: none)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.both > 0, self.agree / self.both, np.nan)


def _third_order(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``T[a, b, c]``: sum of ``s_a s_b`` over the instances LF c also orders, and
    ``N[a, b, c]``: the number of instances all three order (from votes S)."""
    m = S.shape[1]
    T = np.zeros((m, m, m))
    N = np.zeros((m, m, m))
    block, dtype = _exact_blocks(S.shape[2])
    for start in range(0, S.shape[0], block):
        X = S[start : start + block].transpose(1, 0, 2).reshape(m, -1)
        Xf = X.astype(dtype)
        Af = np.abs(Xf)
        for c in range(m):
            T[:, :, c] += (Xf * Af[c]) @ Xf.T
            N[:, :, c] += (Af * Af[c]) @ Af.T
    return T, N


def triplet_theta(
    stats: RankingStats, noise: str, clusters: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form triplet estimate of each LF's disagreement rate and theta.

    For LFs a, b, c independent given the truth, ``mu_a^2 = A_ab A_ac / A_bc``. The
    three agreements are taken over the same instances, those all three LFs order
    (from the rows sampled in ``stats``): an LF's accuracy varies across pairs (a
    top-k LF orders only pairs with one of its top items, which every LF finds
    easier), so agreements over different sets of pairs would not cancel. The
    median over the pairs (b, c) is taken. With ``clusters`` (a label per LF, see
    :mod:`~snorkel_structured.rankings.dependencies`), only triplets of LFs from
    three different clusters are used.

    Returns
    -------
    eps : ndarray of shape (n_lfs,)
        Estimated rate at which each LF orders a pair against the truth.
    theta : ndarray of shape (n_lfs,)
    """
    m = stats.n_lfs
    T, N = _third_order(stats.sample_S)
    with np.errstate(invalid="ignore", divide="ignore"):
        A3 = np.where(
            N > 0, T / N, np.nan
        )  # A3[a, b, c]: agreement of a, b where c votes
    cl = np.arange(m) if clusters is None else np.asarray(clusters)
    mu2 = np.full(m, np.nan)
    for a in range(m):
        others = [b for b in range(m) if cl[b] != cl[a]]
        vals = []
        for x, b in enumerate(others):
            for c in others[x + 1 :]:
                if cl[b] == cl[c] or N[a, b, c] < 30:
                    continue
                num = A3[a, b, c] * A3[a, c, b]
                den = A3[b, c, a]
                if np.isfinite(num) and np.isfinite(den) and abs(den) > 1e-3:
                    vals.append(num / den)
        if vals:
            mu2[a] = np.median(vals)
    mu = np.sqrt(np.clip(mu2, 0.0, 1.0))
    mu = np.where(
        np.isfinite(mu), mu, np.nanmedian(mu) if np.isfinite(mu).any() else 0.5
    )
    eps = (1 - mu) / 2
    k_counts = stats.k_counts if noise == "mallows" else None
    return eps, theta_from_rate(eps, stats.n_items, k_counts)


def pair_signs(Y: np.ndarray) -> np.ndarray:
    """(n_rows, n_pairs) +1 where ordering Y puts i before j, else -1 (float32)."""
    n_items = Y.shape[1]
    # An ordering's inverse permutation is each item's position.
    pos = np.argsort(Y, axis=1).astype(np.int16 if n_items > 127 else np.int8)
    i, j = np.triu_indices(n_items, 1)
    return (pos[:, j] > pos[:, i]).astype(np.float32) * 2 - 1


def _disagreements(St: np.ndarray, ordered: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """(n_lfs,) total number of ordered pairs each LF puts against the orderings Y.

    ``St`` is (n_rows * n_pairs, n_lfs). A pair LF a orders counts (|s| - s t) / 2,
    1 when s = -t: with ``ordered`` the (n_lfs,) totals of |s|, (ordered - s . t) / 2.
    """
    agree = pair_signs(Y).reshape(-1) @ St
    return (ordered - agree.astype(np.float64)) / 2


def initial_orderings(g: np.ndarray, n_items: int) -> np.ndarray:
    """Weighted Borda orderings (each item's summed margins) of pair margins g: chain starts."""
    i, j = np.triu_indices(n_items, 1)
    score = np.zeros((g.shape[0], n_items))
    np.add.at(score.T, i, g.T)
    np.add.at(score.T, j, -g.T)
    return np.argsort(-score, axis=1, kind="stable")


def _unmeasured_sweeps(n_items: int) -> int:
    """Sweeps that advance the chains between two EM updates before any is measured.

    Adjacent swaps move an item one place per sweep, so the chains need more sweeps
    to follow a change of theta on longer lists; measured right after the update,
    they lag behind it and bias theta (at 50 items: +48% on the least accurate of
    five LFs with 2 sweeps per update, +15% with 10).
    """
    return max(0, n_items // 10 - 1)


def estimate_theta(
    stats: RankingStats,
    noise: str,
    *,
    theta_init: np.ndarray | None = None,
    scale: np.ndarray | None = None,
    max_iter: int = 60,
    burn_in: int = 10,
    sweeps_per_iter: int = 2,
    tol: float = 1e-3,
    seed: Any = None,
) -> tuple[np.ndarray, int]:
    """Monte Carlo EM for theta on the rows sampled in ``stats``.

    ``scale`` (n_lfs,) multiplies the weights in the posterior the chains sample
    (``1 / cluster size`` counts a cluster of LFs sharing a source as one source).

    Returns
    -------
    theta : ndarray of shape (n_lfs,)
    n_iter : int
    """
    rng = check_seed(seed)
    S = stats.sample_S
    n_items = stats.n_items
    theta = np.array(theta_init, dtype=np.float64)
    if S.shape[0] == 0:
        return theta, 0
    if noise == "mallows":
        k_counts = k_histogram(stats.sample_k, n_items)
    # (rows, pairs, LFs), so that margins and agreements are matrix-vector products.
    St = np.ascontiguousarray(S.transpose(0, 2, 1), dtype=np.float32)
    ordered = np.abs(St).sum(axis=(0, 1)).astype(np.float64)
    St = St.reshape(-1, stats.n_lfs)
    n_p = n_pairs(n_items)
    scale = (
        np.ones(stats.n_lfs) if scale is None else np.asarray(scale, dtype=np.float64)
    )
    Y = initial_orderings(pair_margins(St, theta * scale, n_p), n_items)
    history = []
    for it in range(max_iter):
        g = pair_margins(St, theta * scale, n_p)
        gibbs_sweeps(g, Y, burn_in if it == 0 else _unmeasured_sweeps(n_items), rng)
        D = np.zeros(stats.n_lfs)
        for _ in range(sweeps_per_iter):
            gibbs_sweeps(g, Y, 1, rng)
            D += _disagreements(St, ordered, Y)
        D /= sweeps_per_iter
        if noise == "mallows":
            new = theta_from_disagreements(D, n_items, k_counts)
        else:
            new = theta_from_rate(D / np.maximum(ordered, 1), n_items, None)
        history.append(new)
        change = np.max(np.abs(new - theta) / np.maximum(theta, 1e-2))
        theta = new
        if it >= 5 and change < tol:
            break
    # Average the second half of the chain: the Monte Carlo noise of one iteration
    # shrinks with the number of iterations averaged.
    tail = np.array(history[len(history) // 2 :])
    return tail.mean(axis=0), len(history)


# -- accuracy that depends on how far apart a vote puts two items -------------------
# Cap on a pair's weight (log-odds): a pair no vote has ever ordered wrongly still
# leaves room for the other votes.
POSITION_WEIGHT_MAX = 20.0
# Ridge on (intercept, slope) of each LF's logistic curve: the slope is identified
# only by the spread of the gaps, and a top-k LF may have few distinct ones.
POSITION_RIDGE = 1.0
# (row, pair) instances the position model's EM runs on (the first rows of the
# sample, itself a uniform random sample): 5,000 rows of 20 items.
POSITION_SAMPLE_PAIRS = 1_000_000


def gap_features(pos: np.ndarray) -> np.ndarray:
    """(rows, LFs, pairs) ``(gap - 1) / (n_items - 1)``, gap = |pos_j - pos_i|, float32.

    ``pos`` is :func:`~snorkel_structured.rankings.vote_positions`, where the items a
    top-k vote leaves out share the position k. Here they sit at the middle of the
    positions ``k .. n_items - 1`` they leave, ``(k + n_items - 1) / 2``: where an
    unlisted item falls in the LF's full ordering, knowing only that it is below the
    list (Borda's count shares their points the same way). So a top-k vote's first
    item is as far from an unlisted one as it is, on average, in a full list; at k
    the list's last item would be a neighbour of all of them. Gaps are then
    multiples of 1/2: x takes the ``2 n_items - 3`` values of :func:`gap_cells`. 0
    for neighbours; pairs the vote does not order get a negative value (their sign
    is 0 anyway).
    """
    n_items = pos.shape[-1]
    i, j = np.triu_indices(n_items, 1)
    # Doubled positions reach 2 (n_items - 1).
    dtype = np.int16 if n_items < 2**14 else np.int32
    twice = 2 * pos.astype(dtype)
    # Unlisted items are the ones at the vote's largest position when it is k < n.
    k = pos.max(axis=-1, keepdims=True).astype(dtype)
    twice = np.where(twice == 2 * k, k + n_items - 1, twice)
    gap = np.abs(twice[..., j] - twice[..., i])
    return (gap.astype(np.float32) - 2) / _gap_unit(n_items)


def position_weights(
    x: np.ndarray, intercept: np.ndarray, slope: np.ndarray
) -> np.ndarray:
    """Each vote's weight on each pair: ``clip(intercept + slope x, 0, max)``.

    ``x`` has the LFs on its last axis (or is broadcast against (n_lfs,)).
    """
    w = intercept.astype(np.float32) + slope.astype(np.float32) * x
    return np.clip(w, 0.0, POSITION_WEIGHT_MAX)


def logistic_fit(
    x: np.ndarray, agree: np.ndarray, total: np.ndarray, start: np.ndarray
) -> np.ndarray:
    """Ridge-penalized logistic regression of agreement on ``[1, x]``.

    Maximizes ``sum agree log p + (total - agree) log(1 - p) - RIDGE |ab|^2 / 2``
    with ``p = expit(ab[0] + ab[1] x)``, by Newton steps halved until the objective
    does not decrease: near separation (an LF the truth almost always agrees with)
    the full step overshoots by hundreds.
    """
    X = np.column_stack([np.ones_like(x), x])
    disagree = total - agree

    def objective(ab: np.ndarray) -> float:
        z = X @ ab
        ll = -(agree @ np.logaddexp(0.0, -z)) - disagree @ np.logaddexp(0.0, z)
        return float(ll - 0.5 * POSITION_RIDGE * ab @ ab)

    ab = start.astype(np.float64).copy()
    value = objective(ab)
    for _ in range(50):
        p = expit(X @ ab)
        grad = X.T @ (agree - total * p) - POSITION_RIDGE * ab
        H = -(X.T * (total * p * (1 - p))) @ X - POSITION_RIDGE * np.eye(2)
        step = np.linalg.solve(H, grad)
        for _ in range(60):
            new_value = objective(ab - step)
            if new_value >= value - 1e-12 * abs(value):
                break
            step = step / 2
        else:  # no step along Newton's direction helps: at the optimum up to rounding
            break
        ab -= step
        value = new_value
        if np.max(np.abs(step)) < 1e-8:
            break
    return ab


def k_histogram(k: np.ndarray, n_items: int) -> np.ndarray:
    """(n_lfs, n_items + 1) number of rows on which each LF lists k items."""
    m = k.shape[1]
    flat = (k + (n_items + 1) * np.arange(m)).ravel()
    return np.bincount(flat, minlength=m * (n_items + 1)).reshape(m, -1).astype(float)


def gap_cells(x: np.ndarray, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """The gap levels and each instance's (LF, gap) cell.

    Parameters
    ----------
    x : ndarray of shape (n_instances, n_lfs)
        :func:`gap_features`, (row, pair) instances on the first axis.

    Returns
    -------
    levels : ndarray of shape (2 n_items - 3,)
        The normalized gaps in half steps: ``0, 1/(2(n-1)), ..., (n-2)/(n-1)``.
    cell : ndarray of int of shape (n_instances * n_lfs,)
        ``a * (2 n_items - 3) + level``, so one bincount counts every LF at once.
    """
    n_lev, unit = max(2 * n_items - 3, 1), _gap_unit(n_items)
    levels = np.arange(n_lev, dtype=np.float64) / unit
    level = np.clip(np.rint(x * unit), 0, n_lev - 1).astype(np.int32)
    return levels, (level + n_lev * np.arange(x.shape[1], dtype=np.int32)).ravel()


def _gap_unit(n_items: int) -> int:
    """Half steps of gap per unit of x (see :func:`gap_features`): gaps 1, 1.5, ...,
    n_items - 1 are x = 0, 1 / unit, ..., 2 (n_items - 2) / unit."""
    return 2 * max(n_items - 1, 1)


class GapCells:
    """Votes on (row, pair) instances, grouped by (LF, gap level) cell.

    The EM counts, at every sweep, how often each LF agrees with the sampled
    orderings at each gap, and weighs every vote by its LF's curve at its gap. Both
    only need each vote's cell, so they are computed once here: the counts as one
    sparse product with the orderings' pair signs, the weights as a lookup in a
    table of (LF, gap) weights.

    Parameters
    ----------
    St : ndarray of float32 of shape (n_instances, n_lfs)
        Each LF's pair sign (+1, -1, 0 = not ordered) on each instance.
    x : ndarray of float32 of shape (n_instances, n_lfs)
        :func:`gap_features` on the same instances.
    n_items : int
    """

    def __init__(self, St: np.ndarray, x: np.ndarray, n_items: int) -> None:
        n_inst, m = St.shape
        self.levels, self.cell = gap_cells(x, n_items)
        n_lev = self.levels.size
        self.shape = (m, n_lev)
        signs = St.ravel()
        voted = signs != 0
        self.total = np.bincount(self.cell[voted], minlength=m * n_lev).reshape(
            self.shape
        )
        instance = np.repeat(np.arange(n_inst, dtype=np.int32), m)
        self._signed = sparse.csr_matrix(
            (signs[voted], (self.cell[voted], instance[voted])),
            shape=(m * n_lev, n_inst),
            # Sums of n_instances terms +-1 are exact in float32 below 2^24.
            dtype=np.float32 if n_inst < _F32_EXACT else np.float64,
        )
        # The normalized gaps exactly as gap_features computes them: both are
        # level / unit correctly rounded to float32.
        self._x = self.levels.astype(np.float32)

    def agreements(self, signs: np.ndarray) -> np.ndarray:
        """(n_lfs, 2 n_items - 3) votes that agree with ``signs`` (n_instances,), the
        pair signs of the orderings (:func:`pair_signs`), per (LF, gap) cell."""
        net = self._signed @ np.asarray(signs, dtype=self._signed.dtype)
        return (self.total + net.reshape(self.shape)) / 2

    def weights(self, intercept: np.ndarray, slope: np.ndarray) -> np.ndarray:
        """(n_instances, n_lfs) :func:`position_weights` of every vote at its gap
        (any value where the LF does not order the pair)."""
        table = position_weights(self._x[:, None], intercept, slope).T
        return table.ravel()[self.cell].reshape(-1, self.shape[0])


def fit_gap_curves(
    levels: np.ndarray,
    agree: np.ndarray,
    total: np.ndarray,
    alpha: np.ndarray,
    beta: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Each LF's logistic curve of agreement on the gap, from (LF, gap) counts.

    Starts from (alpha, beta); an LF voting at one gap only gets slope 0 (there is
    no slope to learn, only its level).
    """
    alpha, beta = alpha.astype(np.float64).copy(), beta.astype(np.float64).copy()
    for a in range(total.shape[0]):
        keep = total[a] > 0
        xs = levels[keep] if keep.sum() >= 2 else np.zeros(keep.sum())
        alpha[a], beta[a] = logistic_fit(
            xs, agree[a, keep], total[a, keep], np.array([alpha[a], beta[a]])
        )
    return alpha, beta


def estimate_position_weights(
    stats: RankingStats,
    *,
    theta_init: np.ndarray,
    scale: np.ndarray | None = None,
    max_iter: int = 30,
    burn_in: int = 10,
    sweeps_per_iter: int = 2,
    seed: Any = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Monte Carlo EM for a pair weight that grows with the pair's gap in the vote.

    Model: LF a orders a pair as the truth does with probability
    ``expit(w_a(x))``, ``w_a(x) = alpha_a + beta_a x``, x the pair's normalized gap in
    a's vote (:func:`gap_features`), independently across pairs; the posterior is
    ``exp(-sum w [the truth disagrees])``, a weighted Kemeny problem. The M-step is a
    logistic regression per LF on the expected agreements at each gap.

    Returns
    -------
    intercept, slope : ndarray of shape (n_lfs,)
    n_iter : int
    """
    rng = check_seed(seed)
    m, n_items = stats.n_lfs, stats.n_items
    n_p = n_pairs(n_items)
    # Two parameters per LF need far fewer pairs than the sample holds.
    rows = max(1, POSITION_SAMPLE_PAIRS // n_p)
    S, pos = stats.sample_S[:rows], stats.sample_pos[:rows]
    scale = np.ones(m) if scale is None else np.asarray(scale, dtype=np.float64)
    St = np.ascontiguousarray(S.transpose(0, 2, 1), dtype=np.float32).reshape(-1, m)
    cells = GapCells(St, gap_features(pos).transpose(0, 2, 1).reshape(-1, m), n_items)
    alpha = np.asarray(theta_init, dtype=np.float64).copy()
    beta = np.zeros(m)

    def margins() -> np.ndarray:
        w = cells.weights(alpha * scale, beta * scale)
        w *= St
        return w.sum(axis=1).reshape(-1, n_p)

    Y = initial_orderings(margins(), n_items)
    history = []
    for it in range(max_iter):
        g = margins()
        gibbs_sweeps(g, Y, burn_in if it == 0 else _unmeasured_sweeps(n_items), rng)
        agree = np.zeros(cells.shape)
        for _ in range(sweeps_per_iter):
            gibbs_sweeps(g, Y, 1, rng)
            agree += cells.agreements(pair_signs(Y).reshape(-1))
        alpha, beta = fit_gap_curves(
            cells.levels, agree / sweeps_per_iter, cells.total, alpha, beta
        )
        history.append(np.concatenate([alpha, beta]))
    tail = np.array(history[len(history) // 2 :]).mean(axis=0)
    return tail[:m], tail[m:], len(history)
