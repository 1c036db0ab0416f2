"""EM machinery for the finite noise model: pattern-level arrays, E- and M-steps, SQUAREM.

The model is a finite mixture: Y ~ prior (on a support T of labels), and given Y = y the
labeling functions vote independently with P(lambda_a = v | y) = exp(-theta_a S[y, v]) /
Z_a(theta_a, y) (or theta_{a y}: the label-dependent model). Every quantity EM needs is a
sum over the unique vote patterns of a :class:`~snorkel_structured.estimators.VoteStats`,
weighted by their counts, so an iteration costs O(n_patterns * |T| * n_lfs) whatever the
number of rows.

E-step: responsibilities R[i, j] = P(Y = T_j | pattern i). M-step: the prior is the
count-weighted mean of R; theta_a solves the 1-D monotone moment equation

    sum_j N_aj E_theta[d^2(lambda_a, T_j) | Y = T_j] = sum_i c_i [a voted] sum_j R_ij S[T_j, v_ia]

(the score equation of the exponential family; N_aj = sum_i c_i [a voted] R_ij). The
votes are held as a sparse one-hot matrix, so the E-step is one sparse product with the
(m (r + 1), k) table of log P(v | T_j) and the M-step's statistics one product with its
transpose; with many LFs over few labels, as codes of a few blocks of LFs instead
(:mod:`._vote_blocks`), which read each pattern once per block. Only the rows S[T, :]
of the support are used, and the partition functions and moments of each row come
from its distinct values and their multiplicities (at most 29 for a Kendall row of S8,
two for the 0/1 metric), so a space of 40,320 labels never builds an (r, r) array:
rows are computed with ``space.dist`` when ``S`` is a large space (these rows,
partition functions and the theta solve live in :mod:`._noise_kernel`). theta is found
by a vectorized, warm-started, safeguarded Newton solve. EM is accelerated with
SQUAREM (Varadhan and Roland, 2008) with a monotonicity safeguard.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from snorkel_structured._numeric import (
    logsumexp,
    normalize_log_rows,
    shifted_exp_rows,
)
from snorkel_structured._validation import ABSTAIN
from snorkel_structured.estimators._noise_kernel import (
    _dist_moments,
    _log_table,
    _mix_outliers,
    _solve_theta,
    _SqDists,
)
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.estimators._vote_blocks import VoteBlocks

# A vote's log-probability above -this leaves its LF out of a row's log-sum-exp by
# reusing the row's exponential (1 / P stays far from overflow, k e^600 << 1e308).
_LEAVE_OUT_MAX = 600.0
# P(abstain | Y) is kept inside [_ALPHA_MIN, 1 - _ALPHA_MIN] (finite logs).
_ALPHA_MIN = 1e-9
# Outlier rates of the robust family stay inside [_EPS_MIN, _EPS_MAX].
_EPS_MIN, _EPS_MAX = 1e-6, 0.5
# Strength of the conjugate prior on theta, in votes per LF (see _Problem.m_step).
_PSEUDO_VOTES = 1.0
# The tensor start needs (r, r) pair tables and an embedding of S: small spaces only.
_TENSOR_START_MAX = 1000
# Largest (n_lfs, n_patterns, k) array of gathered distances EM keeps (8 bytes each).
_GATHER_MAX = 20_000_000
# Supports above this many labels get a low-rank factorization of their distances
# for the expected-distance decision, where it has one (see _distance_factors).
_FACTOR_MIN_LABELS = 64
# Candidate labels scored by the support search (all labels when r is at most this;
# otherwise the most-voted labels): bounds the (n_patterns, n_candidates) tables.
_MAX_CANDIDATES = 64


def pattern_weights(
    P: np.ndarray, groups: np.ndarray | None, corr: np.ndarray | None = None
) -> np.ndarray | None:
    """(u, m) weight of each vote: 1 / (LFs of its group that voted in the pattern).

    A group of dependent LFs speaks with one voice where several of them vote, and
    with its full voice where one votes alone (a weight of 1/g for every vote would
    also discount a lone vote, and collapsed the posterior of an LF that votes on
    most rows alone onto the prior). None when every group is a single LF.

    ``corr`` (m, m), when given, is the correlation of the LFs' errors within each
    group (1 on the diagonal, 0 across groups): LF a's vote then weighs
    ``1 / sum_b corr_ab`` over the members b that voted, the design effect of
    correlated votes (copies, corr = 1, give the 1 / j above).
    """
    if groups is None:
        return None
    groups = np.asarray(groups, dtype=np.int64)
    if np.unique(groups).size == groups.size:
        return None
    voted = (np.asarray(P) != ABSTAIN).astype(np.float64)
    if corr is not None:
        return np.where(voted > 0, 1.0 / np.maximum(voted @ corr, 1.0), 1.0)
    onehot = np.eye(int(groups.max()) + 1)[groups]  # (m, n_groups)
    n_voting = (voted @ onehot)[:, groups]  # (u, m)
    return np.where(voted > 0, 1.0 / np.maximum(n_voting, 1.0), 1.0)


def _step_key(*arrays: np.ndarray | None) -> tuple[Any, ...]:
    """The parameters of an E-step, by value."""
    return tuple(None if a is None else (a.shape, a.tobytes()) for a in arrays)


class _Problem:
    """Pattern-level arrays shared by every EM run on one VoteStats.

    The votes are a sparse one-hot matrix X (n_patterns, n_lfs * (r + 1)) with one
    entry per vote (abstains have none), so log P(pattern | y) for the labels of a
    support is one sparse product X @ W, and the M-step's sufficient statistics
    (posterior mass of each (LF, vote, label)) are one product X^T @ (counts * R).
    """

    def __init__(
        self,
        stats: VoteStats,
        sq: _SqDists,
        labeled: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
        groups: np.ndarray | None = None,
        log_h: np.ndarray | None = None,
        prior_pseudo_count: float = 0.0,
        row_weight: float = 1.0,
        group_corr: np.ndarray | None = None,
    ) -> None:
        self.sq = sq
        # How many rows of the data each counted row stands for (a random sample of
        # them: its likelihoods, BIC and standard errors then read as on all rows).
        self.row_weight = float(row_weight)
        # Group of each LF (dependent LFs share one; None: all independent). In a
        # pattern where j LFs of a group voted, each of their votes weighs 1/j in the
        # likelihood: the group speaks with one voice (see pattern_weights).
        self.groups = groups
        # Correlation of the LFs' errors within each group (see pattern_weights).
        self.group_corr = group_corr
        # Dirichlet pseudo-count per label in the prior's M-step (see prior_step).
        self.prior_pseudo_count = float(prior_pseudo_count)
        self.r = sq.r
        self.P = np.asarray(stats.patterns)
        self.c = np.asarray(stats.counts, dtype=np.float64) * self.row_weight
        # Labeled rows (patterns, counts, labels) join the unlabeled ones: the same
        # likelihood, with their responsibilities clamped to the known label.
        self.lab = np.full(self.P.shape[0], -1, dtype=np.int64)
        if labeled is not None:
            lp, lc, ly = labeled
            self.P = np.concatenate([self.P, np.asarray(lp, dtype=np.int64)])
            self.c = np.concatenate([self.c, np.asarray(lc, dtype=np.float64)])
            self.lab = np.concatenate([self.lab, np.asarray(ly, dtype=np.int64)])
        self.labeled = self.lab >= 0
        self.u, self.m = self.P.shape
        self.n = float(self.c.sum())
        self.voted = self.P != ABSTAIN
        self.pw = pattern_weights(self.P, groups, group_corr)
        # each vote's weight, 0 for abstains (float: BLAS products; bool is slow)
        self.voted_f = self.voted.astype(np.float64)
        if self.pw is not None:
            self.voted_f *= self.pw
        # Abstains, for the model where P(abstain | Y) depends on the label.
        self.abstained = (~self.voted).astype(np.float64)  # (u, m)
        # 1 per vote, unweighted (a bool matrix product skips BLAS: 9x slower)
        self.voted_ones = 1.0 - self.abstained
        self.n_voted = self.c @ self.voted_ones  # (m,) rows where each LF voted
        # Each LF's own vote distribution: the outlier component of the robust family
        # (given: estimated elsewhere, e.g. on the rows a model was fitted to; else
        # from ``hist`` when first read).
        self._log_h = log_h
        self.abstain_rate = 1.0 - self.n_voted / max(self.n, 1e-300)  # (m,)
        self.any_abstain = bool(self.abstained.any())
        # log-likelihood of the abstains when they do not depend on Y (constant in the
        # parameters), so that likelihoods with and without alpha compare.
        rate = np.clip(self.abstain_rate, _ALPHA_MIN, 1.0 - _ALPHA_MIN)
        self.abstain_loglik = float(
            (self.c @ self.abstained) @ np.log(rate) + self.n_voted @ np.log1p(-rate)
        )
        self._gathered: tuple[bytes, Any] = (b"", None)
        self._rows_cache: tuple[bytes, Any] = (b"", None)
        self._dists_cache: tuple[bytes, Any] = (b"", None)
        self._cast_dists_cache: tuple[bytes, Any] = (b"", None)
        self._table_cache: tuple[Any, Any] = (None, None)
        self._factors_cache: tuple[bytes, Any] = (b"", None)
        # The last loglik's E-step (parameters, R, ll): handed to the next e_step if
        # at the same parameters (EM's closing loglik, then the caller's E-step), else
        # dropped, so that other E-steps pay no comparison.
        self._loglik_step: tuple[Any, Any] = (None, None)

    @functools.cached_property
    def cA(self) -> np.ndarray:
        """(u, m) rows per pattern where each LF abstained (abstains that depend on
        the label: their M-step)."""
        return self.c[:, None] * self.abstained

    @functools.cached_property
    def hist(self) -> np.ndarray:
        """Vote histogram per LF, (m, r), counting every vote once.

        One bincount of the (LF, vote) cells in row order (a column of P per LF
        reads it strided); built when first read (the support search, the robust
        family): the paper's family on a given support never reads it.
        """
        cells = self.P + (1 + (self.r + 1) * np.arange(self.m))
        counts = np.bincount(
            cells.ravel(),
            weights=np.repeat(self.c, self.m),
            minlength=self.m * (self.r + 1),
        )
        return counts.reshape(self.m, self.r + 1)[:, 1:]

    @functools.cached_property
    def log_h(self) -> np.ndarray:
        """(m, r) log of each LF's own vote distribution (the outlier component)."""
        if self._log_h is not None:
            return self._log_h
        tot = self.hist.sum(1, keepdims=True)
        # an LF that never votes gets a uniform one: a distribution all the same (its
        # outlier component never enters the likelihood)
        h = np.where(tot > 0, self.hist / np.maximum(tot, 1e-300), 1.0 / self.r)
        with np.errstate(divide="ignore"):
            return np.log(h)

    @functools.cached_property
    def _votes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
        """(pattern, column, weight, shape) of each vote in the one-hot matrix X."""
        rows_i, cols_a = np.nonzero(self.voted)
        cols = cols_a * (self.r + 1) + self.P[rows_i, cols_a] + 1
        shape = (self.u, self.m * (self.r + 1))
        return rows_i, cols, self.voted_f[rows_i, cols_a], shape

    @functools.cached_property
    def X(self) -> sp.csr_matrix:
        """(u, m (r + 1)) one-hot votes, weighted; built when first used (EM on the
        gathered distances never does)."""
        rows_i, cols, wv, shape = self._votes
        return sp.csr_matrix((wv, (rows_i, cols)), shape=shape)

    @functools.cached_property
    def blocks(self) -> VoteBlocks | None:
        """The votes as codes of a few blocks of LFs, when that at least halves the
        passes of the E- and M-steps over the patterns (many LFs, few labels), and
        every vote weighs 1 (no dependency groups)."""
        if self.pw is not None or not VoteBlocks.worth_it(self.u, self.m, self.r):
            return None
        return VoteBlocks(self.P, self.r)

    @functools.cached_property
    def XcT(self) -> sp.csr_matrix:
        """``X.T`` with each pattern's count: the M-step's sums over the tables."""
        rows_i, cols, wv, shape = self._votes
        return sp.csr_matrix((self.c[rows_i] * wv, (cols, rows_i)), shape=shape[::-1])

    # -- rows of S and their value distributions -----------------------------------
    def rows(self, T: np.ndarray) -> np.ndarray:
        # EM asks for the same support's rows at every step: keep the last ones.
        key = T.tobytes()
        if self._rows_cache[0] != key:
            self._rows_cache = (key, self.sq.rows(T))
        return self._rows_cache[1]

    def dists(self, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(vals, logmult) of the rows of T, (k, q) each (cached per label)."""
        return self._dists_of(T)[0]

    def _dists_of(self, T: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], bool]:
        """:meth:`dists`, and whether every label of T sees the same distances (a
        homogeneous space: permutations, classes), kept for the last T."""
        key = T.tobytes()
        if self._dists_cache[0] != key:
            vals, logmult = self.sq.dists(T)
            same = bool((vals == vals[:1]).all() and (logmult == logmult[:1]).all())
            self._dists_cache = (key, ((vals, logmult), same))
        return self._dists_cache[1]

    def candidates(self) -> np.ndarray:
        """Labels the support search scores: all, or the most-voted in a large space."""
        if self.r <= _MAX_CANDIDATES:
            return np.arange(self.r)
        votes = self.hist.sum(0)
        top = np.argsort(-votes, kind="stable")[:_MAX_CANDIDATES]
        return np.sort(top[votes[top] > 0]) if (votes[top] > 0).any() else np.sort(top)

    # -- core pieces -------------------------------------------------------------
    def log_table(
        self, theta: np.ndarray, T: np.ndarray, eps: np.ndarray | None = None
    ) -> np.ndarray:
        """W of shape (m * (r + 1), k): log P(lambda_a = v | T_j) at row a * (r + 1) + v + 1.

        Rows for abstain (v = -1) are 0. ``theta`` is (m,) or (m, k) (per label of T);
        ``eps`` (m,), when given, mixes in the outlier component.
        """
        return self.tables(theta, T, eps)[1].reshape(-1, T.size)

    def tables(
        self, theta: np.ndarray, T: np.ndarray, eps: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(log P_theta, log of the outlier mixture), (m, r + 1, k) each.

        The E-step and the M-step of one EM step ask for the same parameters: the
        last pair of tables is kept.
        """
        key = (theta.tobytes(), T.tobytes(), None if eps is None else eps.tobytes())
        if self._table_cache[0] != key:
            vals, logmult = self.dists(T)
            W = _log_table(self.rows(T), vals, logmult, theta)
            # log_h is read only with outliers: building it costs a bincount over
            # every (pattern, LF) cell, on every problem a fit builds
            mixed = W if eps is None else _mix_outliers(W, eps, self.log_h)
            self._table_cache = (key, (W, mixed))
        return self._table_cache[1]

    def clamp(self, G: np.ndarray, T: np.ndarray) -> np.ndarray:
        """Positions in T of the labeled rows' labels (-1 for unlabeled rows)."""
        pos = np.full(self.r, -1, dtype=np.int64)
        pos[T] = np.arange(T.size)
        out = np.where(self.labeled, pos[np.maximum(self.lab, 0)], -1)
        if (self.labeled & (out < 0)).any():
            raise ValueError("a labeled row's label is outside the support")
        return out

    def log_lik_given(self, W: np.ndarray) -> np.ndarray:
        """(u, k): log P(pattern i | Y = T_j) for the table W of :meth:`log_table`."""
        if self.blocks is not None:
            return self.blocks.log_lik(W.reshape(self.m, self.r + 1, -1))
        return np.asarray(self.X @ W)

    def gathered(self, T: np.ndarray) -> np.ndarray | None:
        """(m, u, k) d^p from each pattern's vote of LF a to T_j (0 where a abstains).

        The paper's family is linear in these: log P(pattern | T_j) = -sum_a
        theta_a D[a, :, j] - sum_a [a voted] log Z_a(T_j), and the M-step's moment
        sums are sum_i c_i R_ij D[a, i, j]. Built once per support, it replaces
        the (m (r + 1), k) table and both sparse products of every EM step. None
        when it would exceed _GATHER_MAX entries (EM then uses the tables).
        """
        if self.m * self.u * T.size > _GATHER_MAX:
            return None
        key = T.tobytes()
        if self._gathered[0] != key:
            ST = self.rows(T)  # (k, r)
            D = np.empty((self.m, self.u, T.size))
            for a in range(self.m):  # one (u, k) gather per LF, times the vote weight
                D[a] = ST[:, np.maximum(self.P[:, a], 0)].T
                D[a] *= self.voted_f[:, a : a + 1]
            self._gathered = (key, D)
        return self._gathered[1]

    def _label_moments(
        self, theta: np.ndarray, T: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """theta per (LF, label of T), (m, k), with log Z and E[d^p] under it
        (read-only views when they are the same for every label)."""
        (vals, logmult), same = self._dists_of(T)
        shape = (self.m, T.size)
        if theta.ndim == 1 and same:
            # Every label sees the same distances: one label's moments serve all
            # (the same numbers, a k-th of the work).
            logz, m1, _ = _dist_moments(theta[:, None], vals[:1], logmult[:1])
            return (
                np.broadcast_to(theta[:, None], shape),
                np.broadcast_to(logz[:, None], shape),
                np.broadcast_to(m1[:, None], shape),
            )
        th = np.broadcast_to(theta[:, None] if theta.ndim == 1 else theta, shape)
        logz, m1, _ = _dist_moments(th[:, :, None], vals[None], logmult[None])
        return th, logz, m1

    def _fast_log_lik(self, theta: np.ndarray, T: np.ndarray) -> np.ndarray | None:
        """(u, k) log P(pattern | T_j) of the paper's family from :meth:`gathered`."""
        D = self.gathered(T)
        if D is None:
            return None
        th, logz, _ = self._label_moments(theta, T)
        if theta.ndim == 1:  # one matrix-vector product: 1.5-2.7x einsum's speed
            lin = (theta @ D.reshape(self.m, -1)).reshape(self.u, -1)
        else:
            lin = np.einsum("ak,auk->uk", th, D)
        np.negative(lin, out=lin)
        if logz.strides[1] == 0:  # the same log Z for every label: one per pattern
            lin -= (self.voted_f @ logz[:, 0])[:, None]
        else:
            lin -= self.voted_f @ logz
        return lin

    @functools.cached_property
    def _cast(self) -> tuple[np.ndarray, np.ndarray, Any, Any, Any]:
        """The votes cast, as rows of the tables: (LF, vote, (m, n_cast) indicator of
        each row's LF, one-hot votes (u, n_cast) weighted as X, its transpose with
        the counts).

        Row j stands for one (LF, vote) that some pattern holds: on a large space an
        LF casts far fewer distinct votes than there are labels (european_regions:
        616 of 4 x 677 rows), and only those rows of the robust family's tables are
        ever read.
        """
        rows_i, cols, wv, shape = self._votes
        cast, inv = np.unique(cols, return_inverse=True)
        lf, vote = np.divmod(cast, self.r + 1)
        of_lf = sp.csr_matrix(
            (np.ones(cast.size), (lf, np.arange(cast.size))), shape=(self.m, cast.size)
        )
        X = sp.csr_matrix((wv, (rows_i, inv)), shape=(self.u, cast.size))
        XcT = sp.csr_matrix(
            (self.c[rows_i] * wv, (inv, rows_i)), shape=(cast.size, self.u)
        )
        return lf, vote - 1, of_lf, X, XcT

    def _cast_dists(self, T: np.ndarray) -> np.ndarray:
        """(n_cast, k) d^p from each vote cast (:attr:`_cast`) to T_j; the E- and
        M-step of every EM step on one support read the same (kept)."""
        key = T.tobytes()
        if self._cast_dists_cache[0] != key:
            vote = self._cast[1]
            self._cast_dists_cache = (
                key,
                np.ascontiguousarray(self.rows(T)[:, vote].T),
            )
        return self._cast_dists_cache[1]

    def _cast_mix(
        self, theta: np.ndarray, T: np.ndarray, eps: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The robust family on the votes cast (:attr:`_cast`): (share of the noise
        model, log of the outlier mixture), (n_cast, k) each.

        The share is (1 - eps) P_theta / mixture, the part of a vote the noise model
        explains (the M-step's weight). The E-step and the M-step of one EM step ask
        for the same parameters: the last pair is kept.
        """
        key = ("cast", theta.tobytes(), T.tobytes(), eps.tobytes())
        if self._table_cache[0] == key:
            return self._table_cache[1]
        lf, vote = self._cast[:2]
        th, logz, _ = self._label_moments(theta, T)
        kept = self._cast_dists(T) * -th[lf]
        kept -= (logz - np.log1p(-eps)[:, None])[lf]
        with np.errstate(under="ignore"):
            outlier = eps[lf] * np.exp(self.log_h[lf, vote])
        alone = outlier <= 0  # a vote outside the LF's outlier distribution
        with np.errstate(under="ignore", divide="ignore", invalid="ignore"):
            share = np.exp(kept)
            mix = share + outlier[:, None]
            share /= mix
            np.log(mix, out=mix)
        share[alone] = 1.0
        mix[alone] = kept[alone]
        self._table_cache = (key, (share, mix))
        return share, mix

    def e_step(
        self,
        log_w: np.ndarray,
        theta: np.ndarray,
        T: np.ndarray,
        alpha: np.ndarray | None = None,
        eps: np.ndarray | None = None,
    ) -> tuple[np.ndarray, float]:
        """Responsibilities (u, k) and the log-likelihood.

        ``alpha`` (m, k), when given, is P(lambda_a abstains | Y = T_j): each pattern then
        also has the probability of its abstains, and each vote the factor 1 - alpha.
        Without it abstains are independent of Y: they drop out of R, and the
        log-likelihood counts them at each LF's overall abstain rate.
        """
        if self._loglik_step[0] is not None:  # handed over once, or dropped
            key, step = self._loglik_step
            self._loglik_step = (None, None)
            if key == _step_key(log_w, theta, T, alpha, eps):
                return step
        if self.blocks is not None:  # abstain terms folded into the table
            G = self.blocks.log_lik(self.vote_table(theta, T, eps, alpha))
        else:
            if eps is None:
                G = self._fast_log_lik(theta, T)
                if G is None:
                    G = self.log_lik_given(self.log_table(theta, T))
            else:
                G = np.asarray(self._cast[3] @ self._cast_mix(theta, T, eps)[1])
            if alpha is not None:
                G += self.abstain_log_terms(alpha)
        G += log_w[None, :]
        R, per_row = normalize_log_rows(G)
        if self.labeled.any():  # log P(votes, label): responsibilities clamped
            rows = np.flatnonzero(self.labeled)
            pos = self.clamp(G, T)[rows]
            R[rows] = 0.0
            R[rows, pos] = 1.0
            per_row[rows] = G[rows, pos]
        ll = float(self.c @ per_row)
        return R, ll + (self.abstain_loglik if alpha is None else 0.0)

    def abstain_log_terms(self, alpha: np.ndarray) -> np.ndarray:
        """(u, k): log P(who abstains and who votes | T_j) with abstains that depend
        on the label (``alpha`` (m, k), P(abstain | T_j) per LF)."""
        return self.abstained @ np.log(alpha) + self.voted_ones @ np.log1p(-alpha)

    def conditional_loglik(
        self,
        log_w: np.ndarray,
        theta: np.ndarray,
        T: np.ndarray,
        alpha: np.ndarray | None = None,
        eps: np.ndarray | None = None,
    ) -> tuple[float, float]:
        """sum over rows and votes of log P(lambda_a = vote | the other LFs' outputs).

        A vote counts where another LF voted too: alone, it has nothing to agree
        with. Returns (value, number of rows that count). This is a pseudo-likelihood
        of the agreements: a model that only reshapes each LF's vote distribution
        (a skewed prior, or LFs declared pure noise) gains nothing here, while one
        that predicts how LFs agree does.
        """
        cond, counts, used = self.conditional_loglik_rows(log_w, theta, T, alpha, eps)
        return float(counts @ cond), float(counts @ used)

    def vote_table(
        self,
        theta: np.ndarray,
        T: np.ndarray,
        eps: np.ndarray | None = None,
        alpha: np.ndarray | None = None,
    ) -> np.ndarray:
        """(m, r + 1, k): log P(lambda_a = v | T_j) at [a, v + 1, j], plus
        log(1 - alpha) per vote and log(alpha) at the abstain (v = -1) when ``alpha``
        is given; 0 at the abstain without it."""
        W = self.log_table(theta, T, eps).reshape(self.m, self.r + 1, T.size)
        if alpha is not None:
            W = W + np.log1p(-alpha)[:, None, :]
            W[:, 0, :] = np.log(alpha)
        return W

    def vote_log_terms(
        self,
        theta: np.ndarray,
        T: np.ndarray,
        eps: np.ndarray | None = None,
        alpha: np.ndarray | None = None,
    ) -> np.ndarray:
        """(m, u, k): each pattern's weighted log P(lambda_a = its vote | T_j) (0 for
        an abstain), plus log(1 - alpha) per vote and log(alpha) per abstain when
        ``alpha`` (m, k) is given. LF-major, so that sums over LFs and each LF's
        (u, k) slice are contiguous."""
        fold = alpha is not None and self.pw is None
        # the abstain terms go in the table (row 0: abstain), not each row
        W = self.vote_table(theta, T, eps, alpha if fold else None)
        per_lf = np.empty((self.m, self.u, T.size))
        for a in range(self.m):  # m gathers of (u, k)
            per_lf[a] = W[a][self.P[:, a] + 1]
        if self.pw is not None:
            per_lf *= self.pw.T[:, :, None]
        if alpha is not None and not fold:
            if (alpha == alpha[:, :1]).all():  # abstains independent of Y: per LF
                terms = np.where(
                    self.voted.T, np.log1p(-alpha[:, :1]), np.log(alpha[:, :1])
                )
                per_lf += terms[:, :, None]
            else:
                per_lf += np.where(
                    self.voted.T[:, :, None],
                    np.log1p(-alpha)[:, None, :],
                    np.log(alpha)[:, None, :],
                )
        return per_lf

    def conditional_loglik_rows(
        self,
        log_w: np.ndarray,
        theta: np.ndarray,
        T: np.ndarray,
        alpha: np.ndarray | None = None,
        eps: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`conditional_loglik` per vote pattern: (value, count, counted), (u,) each.

        Patterns that cannot count (fewer than two votes, or labeled) have value 0.
        """
        k = T.size
        if alpha is None:  # abstains independent of Y: each LF's overall rate
            rate = np.clip(self.abstain_rate, _ALPHA_MIN, 1.0 - _ALPHA_MIN)
            alpha = np.repeat(rate[:, None], k, axis=1)
        if self.blocks is not None:  # every vote weighs 1: one table per LF
            W = self.vote_table(theta, T, eps, alpha)
            G = self.blocks.log_lik(W)
        else:
            per_lf = self.vote_log_terms(theta, T, eps, alpha)
            G = per_lf.sum(axis=0)
        G += log_w[None, :]  # (u, k)
        rows, counted = self._pseudo_rows
        cond_all, used_all = np.zeros(self.u), np.zeros(self.u)
        if not rows.any():
            return cond_all, self.c, used_all
        every = bool(rows.all())
        Gr = G if every else G[rows]
        e, total, shift = shifted_exp_rows(Gr)  # e = exp(Gr - shift)
        with np.errstate(divide="ignore"):
            full = np.log(total) + shift  # (u',)
        rest = np.empty((Gr.shape[0], self.m))  # (u', m): LF a left out
        ones = np.ones(Gr.shape[1])
        if self.blocks is not None:
            # sum_j e_j / P_a(v, j) for every LF a and vote v at once, read at the
            # patterns' votes: one (u', k) x (k, m (r + 1)) product, not m passes
            Wt = W.transpose(2, 0, 1).reshape(k, -1)
            safe = Wt.min(axis=0) > -_LEAVE_OUT_MAX  # see below
            inv_p = e @ np.exp(-np.where(safe, Wt, 0.0))  # (u', m (r + 1))
            with np.errstate(divide="ignore"):
                rest = np.log(np.take(inv_p, self._pseudo_cols))
            rest += shift[:, None]
            unsafe = np.flatnonzero(~safe.reshape(self.m, -1).all(axis=1))
            per_lf = {a: W[a][self.P[:, a] + 1] for a in unsafe}
        for a in range(self.m) if self.blocks is None else unsafe:
            La = per_lf[a] if every else per_lf[a][rows]
            if La.min() > -_LEAVE_OUT_MAX:
                # sum_j exp(G_j - L_aj) = exp(shift) sum_j e_j / P_a(j): the full
                # row's exponential reused. The term of the row's best label is
                # >= 1 (a log-probability is <= 0), so nothing that matters
                # underflows, and 1 / P_a stays finite below this bound.
                with np.errstate(divide="ignore"):
                    rest[:, a] = np.log((e * np.exp(-La)) @ ones) + shift
            else:
                rest[:, a] = logsumexp(Gr - La, axis=1)
        # A vote counts when another LF voted too. Abstains do not count: scoring them
        # would reward latent classes that model who abstains with whom (e.g. "one LF
        # per row") instead of the label; their dependence on Y still enters through
        # the factor 1 - alpha of every vote.
        cond_all[rows] = np.where(counted, full[:, None] - rest, 0.0) @ np.ones(self.m)
        used_all[rows] = 1.0
        return cond_all, self.c, used_all

    @functools.cached_property
    def _pseudo_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The patterns :meth:`conditional_loglik_rows` scores (two votes or more, not
        labeled), (u,) bool, and their votes, (u', m) bool."""
        n_votes = self.voted_ones @ np.ones(self.m)
        rows = (n_votes >= 2) & ~self.labeled  # labeled rows are scored by their label
        return rows, self.voted[rows]

    @functools.cached_property
    def _pseudo_cols(self) -> np.ndarray:
        """(u', m) flat positions of the scored patterns' votes in a (u', m (r + 1))
        array of (LF, vote) columns."""
        rows = self._pseudo_rows[0]
        cols = np.arange(self.m) * (self.r + 1) + self.P[rows] + 1
        return cols + (np.arange(cols.shape[0]) * (self.m * (self.r + 1)))[:, None]

    def leave_one_out_risk(
        self,
        log_w: np.ndarray,
        theta: np.ndarray,
        T: np.ndarray,
        alpha: np.ndarray | None = None,
        eps: np.ndarray | None = None,
        decision: str = "map",
    ) -> np.ndarray:
        """Per pattern, sum over LFs a of d(MAP without a's group, lambda_a), (u,).

        Each vote is a noisy label for the model's answer from the *other* LFs: when
        LF a is conditionally independent of them given Y, E d(yhat_{-a}, lambda_a)
        ranks models as their error E d(yhat_{-a}, Y) does, up to a term that does
        not depend on the model (exactly so for squared distances in Euclidean
        space). It scores what a model predicts, not how well it fits the votes:
        a likelihood rewards a model that explains agreements by dependence or
        outliers even when its answers get worse. Each LF's whole dependency group
        (``groups``) is left out (its members would vouch for each other).
        A vote counts where an LF outside its group voted too.

        ``decision="distance"`` scores the label of T of least posterior expected
        distance instead of the MAP (``predict(decision="distance")`` on the
        support): it, unlike the MAP, depends on how sharp the posterior is.
        """
        per_lf = self.vote_log_terms(theta, T, eps, alpha)
        G = per_lf.sum(axis=0) + log_w[None, :]  # (u, k)
        groups = np.arange(self.m) if self.groups is None else np.asarray(self.groups)
        D_T = np.sqrt(np.maximum(self.sq.sq_rows(T), 0.0))  # (k, r)
        risk = np.zeros(self.u)
        for g in np.unique(groups):  # one (u, k) argmax per group
            members = groups == g
            others = (self.voted & ~members[None, :]).any(axis=1)
            G_g = G - per_lf[members].sum(axis=0)
            if decision == "distance":  # minus the expected distance: higher is better
                post = normalize_log_rows(G_g)[0]
                factors = self._distance_factors(T, D_T)
                if factors is None:
                    G_g = -(post @ D_T[:, T])
                else:
                    V, lam = factors
                    G_g = -((post @ V) * lam) @ V.T
            yhat = np.argmax(G_g, axis=1)
            votes = np.maximum(self.P[:, members], 0)
            d = D_T[yhat[:, None], votes]  # (u, |g|)
            # An exact tie (e.g. two classes, LFs of equal weight split evenly) is
            # scored at the tied labels' mean distance: by the first of them, the
            # criterion flipped with the rounding of theta at 1e-10.
            mx = G_g.max(axis=1, keepdims=True)
            tied = G_g >= mx - 1e-9 * (1.0 + np.abs(mx))
            rows = np.flatnonzero(tied.sum(axis=1) > 1)
            if rows.size:
                share = tied[rows] / tied[rows].sum(axis=1, keepdims=True)  # (t, k)
                d[rows] = np.einsum("tk,ktg->tg", share, D_T[:, votes[rows]])
            counted = (
                (self.P[:, members] != ABSTAIN)
                & others[:, None]
                & ~self.labeled[:, None]
            )
            risk += np.where(counted, d, 0.0).sum(axis=1)
        return risk

    def _distance_factors(
        self, T: np.ndarray, D_T: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """(V, lambda) with d(T_i, T_j) = (V diag(lambda) V^T)_ij when the support's
        distance matrix has rank at most k / 4 (Kendall's tau on S_n: n(n-1)/2 + 1),
        else None; kept per support.

        The expected distance of every label under every pattern's posterior is
        then two thin products, not a (u, k) x (k, k) one: on S6 (720 labels, rank
        16) 22 times fewer operations, on a 2,048-label support 90 times.
        """
        key = T.tobytes()
        if self._factors_cache[0] != key:
            factors = None
            if T.size > _FACTOR_MIN_LABELS:
                lam, V = np.linalg.eigh(D_T[:, T])
                keep = np.abs(lam) > 1e-9 * np.abs(lam).max()
                if keep.sum() <= T.size // 4:
                    factors = (np.ascontiguousarray(V[:, keep]), lam[keep])
            self._factors_cache = (key, factors)
        return self._factors_cache[1]

    def prior_step(self, R: np.ndarray) -> np.ndarray:
        """The prior's M-step: posterior mass per label, plus ``prior_pseudo_count``.

        The pseudo-count (a Dirichlet prior on the weights) keeps every label of a
        large support predictable: maximum likelihood sends the weight of a label
        whose rows its neighbours can explain to 0 (1e-306 on a 676-node tree),
        after which no vote can make it the answer.
        """
        a = self.prior_pseudo_count
        return (self.c @ R + a) / max(self.n + a * R.shape[1], 1e-300)

    def m_step_alpha(self, R: np.ndarray) -> np.ndarray:
        """P(abstain | Y = T_j) per LF, (m, k): posterior-weighted abstain rates.

        Smoothed by one pseudo-row at the LF's overall abstain rate, so that a label
        with little mass gets the overall rate rather than 0 or 1.
        """
        mass = self.c @ R  # (k,)
        a = self.abstain_rate[:, None]
        alpha = (self.cA.T @ R + a) / (mass[None, :] + 1.0)
        return np.clip(alpha, _ALPHA_MIN, 1.0 - _ALPHA_MIN)

    def vote_moments(
        self,
        R: np.ndarray,
        T: np.ndarray,
        theta: np.ndarray | None = None,
        eps: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(m, k) posterior label mass among each LF's votes, the posterior-weighted
        sum of d^p of those votes to each label, and (with ``eps``) the new outlier
        rates (m,): each vote's mass is split between the noise model and the outlier
        component by their shares of its probability under (theta, eps)."""
        k = T.size
        D = self.gathered(T) if eps is None and self.blocks is None else None
        if D is not None:
            cR = self.c[:, None] * R
            num = np.einsum("uk,auk->ak", cR, D)
            return self.voted_f.T @ cR, num, None
        if eps is not None and self.blocks is None:
            of_lf, XcT = self._cast[2], self._cast[4]
            H = np.asarray(XcT @ R)  # (n_cast, k): posterior mass of each vote cast
            tot = of_lf @ H.sum(axis=1)  # each LF's voted mass
            H *= self._cast_mix(theta, T, eps)[0]  # the noise model's share
            N = np.asarray(of_lf @ H)
            num = np.asarray(of_lf @ (H * self._cast_dists(T)))
            new_eps = np.clip(
                (tot - N.sum(axis=1)) / np.maximum(tot, 1e-300), _EPS_MIN, _EPS_MAX
            )
            return N, num, new_eps
        if self.blocks is not None:
            H = self.blocks.mass(self.c[:, None] * R)[:, 1:, :]
        else:
            H = np.asarray(self.XcT @ R).reshape(self.m, self.r + 1, k)[:, 1:, :]
        new_eps = None
        if eps is not None:
            assert theta is not None
            W, mix = self.tables(theta, T, eps)
            with np.errstate(invalid="ignore"):
                rho = np.exp(np.log1p(-eps)[:, None, None] + W[:, 1:] - mix[:, 1:])
            rho = np.where(np.isfinite(rho), np.clip(rho, 0.0, 1.0), 1.0)
            tot = H.sum(axis=(1, 2))
            out_mass = (H * (1.0 - rho)).sum(axis=(1, 2))
            new_eps = np.clip(out_mass / np.maximum(tot, 1e-300), _EPS_MIN, _EPS_MAX)
            H = H * rho
        return H.sum(axis=1), np.einsum("avj,jv->aj", H, self.rows(T)), new_eps

    def m_step(
        self,
        R: np.ndarray,
        theta: np.ndarray,
        T: np.ndarray,
        label_dependent: bool,
        shared: bool = False,
        eps: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """New (weights over T, theta, eps); theta is (m,) or (m, k) (label-dependent).

        ``shared``: one theta for every LF (the unweighted vote, as a model). ``eps``:
        the outlier rates, re-estimated (None without the outlier component).
        """
        w = self.prior_step(R)
        k = T.size
        N, num, eps = self.vote_moments(R, T, theta, eps)
        ST = self.rows(T)
        # Conjugate prior on theta: _PSEUDO_VOTES votes per LF, spread over T by w,
        # at half the mean squared distance of a random vote (for plain classes, 75%
        # accuracy on two classes). Negligible with data; with almost none (a few rows,
        # or LFs that never meet) it keeps theta positive, so the LFs still vote.
        prior_d2 = 0.5 * ST.mean(axis=1)  # (k,)
        N = N + _PSEUDO_VOTES * w[None, :]
        num = num + _PSEUDO_VOTES * (w * prior_d2)[None, :]
        vals, logmult = self.dists(T)
        cap = self.sq.theta_max
        has = self.n_voted > 0
        new = theta.copy()
        if label_dependent:
            ok = N > 1e-12 * max(self.n, 1.0)
            pooled = num.sum(1) / np.maximum(N.sum(1), 1e-300)
            target = np.where(ok, num / np.where(ok, N, 1.0), pooled[:, None])  # (m, k)
            eye = np.broadcast_to(np.eye(k)[None], (self.m, k, k)).reshape(-1, k)
            sol = _solve_theta(
                vals, logmult, eye, target.ravel(), theta.ravel(), theta_max=cap
            ).reshape(self.m, k)
            new[has] = sol[has]
            return w, new, eps
        if shared:
            if not has.any():
                return w, new, eps
            tot_all = N[has].sum()
            target1 = np.array([num[has].sum() / max(tot_all, 1e-300)])
            wts1 = N[has].sum(0, keepdims=True) / max(tot_all, 1e-300)
            new[:] = _solve_theta(
                vals, logmult, wts1, target1, theta[has][:1], theta_max=cap
            )[0]
            return w, new, eps
        tot = N.sum(1)
        target = num.sum(1) / np.maximum(tot, 1e-300)
        wts = N / np.maximum(tot, 1e-300)[:, None]
        new[has] = _solve_theta(
            vals, logmult, wts[has], target[has], theta[has], theta_max=cap
        )
        return w, new, eps

    def loglik(
        self,
        log_w: np.ndarray,
        theta: np.ndarray,
        T: np.ndarray,
        alpha: np.ndarray | None = None,
        eps: np.ndarray | None = None,
    ) -> float:
        """The log-likelihood; its E-step is kept for one :meth:`e_step` at the same
        parameters (no caller of ``loglik`` holds the responsibilities)."""
        step = self.e_step(log_w, theta, T, alpha, eps)
        self._loglik_step = (_step_key(log_w, theta, T, alpha, eps), step)
        return step[1]

    def expected_sq_dist(
        self,
        theta: np.ndarray,
        T: np.ndarray,
        w: np.ndarray,
        eps: np.ndarray | None = None,
    ) -> np.ndarray:
        """E[d^2(lambda_a, Y)] per LF with Y ~ w on T: (m,)."""
        if eps is not None or self.sq.power != 2.0:
            P = np.exp(self.log_table(theta, T, eps).reshape(self.m, self.r + 1, -1))
            return np.einsum("avj,jv,j->a", P[:, 1:], self.sq.sq_rows(T), w)
        return self._label_moments(theta, T)[2] @ w


@dataclass(frozen=True, eq=False)
class EMFit:
    """One EM run: weights over T, theta ((m,) or (m, k)), alpha ((m, k) or None),
    eps ((m,) outlier rates, or None)."""

    w: np.ndarray
    theta: np.ndarray
    alpha: np.ndarray | None
    ll: float
    n_iter: int
    converged: bool
    eps: np.ndarray | None = None


def _run_em(
    prob: _Problem,
    T: np.ndarray,
    w: np.ndarray,
    theta: np.ndarray,
    *,
    fixed_w: bool,
    label_dependent: bool,
    max_iter: int,
    tol: float,
    fixed_theta: bool = False,
    alpha: np.ndarray | None = None,
    shared: bool = False,
    eps: np.ndarray | None = None,
) -> EMFit:
    """SQUAREM-accelerated EM from (w, theta[, alpha]).

    ``theta`` is (m,) or, label-dependent, (m, k) over the labels of T; ``shared``
    ties theta across LFs. ``alpha`` (m, k), when given, is estimated too: abstains
    then depend on Y. ``eps`` (m,), when given, adds the outlier component and is
    estimated too.
    """
    k = T.size
    n_th = theta.size
    n_al = 0 if alpha is None else alpha.size

    def logit(p: np.ndarray) -> np.ndarray:
        return (np.log(p) - np.log1p(-p)).ravel()

    def pack(w_: np.ndarray, th: np.ndarray, al: Any, ep: Any) -> np.ndarray:
        parts = [np.log(np.maximum(w_, 1e-300)), th.ravel()]
        if al is not None:
            parts.append(logit(al))
        if ep is not None:
            parts.append(logit(ep))
        return np.concatenate(parts)

    def unpack(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, Any, Any]:
        lw = x[:k] - logsumexp(x[:k])
        th = np.clip(x[k : k + n_th].reshape(theta.shape), 0.0, prob.sq.theta_max)
        al = ep = None
        if alpha is not None:
            al = np.clip(
                expit(x[k + n_th : k + n_th + n_al].reshape(alpha.shape)),
                _ALPHA_MIN,
                1.0 - _ALPHA_MIN,
            )
        if eps is not None:
            ep = np.clip(expit(x[k + n_th + n_al :]), _EPS_MIN, _EPS_MAX)
        return np.exp(lw), th, al, ep

    w_given = w  # a fixed prior is returned bit for bit (SQUAREM renormalizes)

    def step(
        w_: np.ndarray, th: np.ndarray, al: Any, ep: Any
    ) -> tuple[np.ndarray, np.ndarray, Any, Any, float]:
        R, ll = prob.e_step(np.log(np.maximum(w_, 1e-300)), th, T, al, ep)
        al_new = None if al is None else prob.m_step_alpha(R)
        if fixed_theta:
            return (w_given if fixed_w else prob.prior_step(R)), th, al_new, ep, ll
        w_new, th_new, ep_new = prob.m_step(R, th, T, label_dependent, shared, ep)
        return (w_given if fixed_w else w_new), th_new, al_new, ep_new, ll

    scale = max(prob.n, 1.0)
    ll_old = -np.inf
    converged = False
    it = 0
    cur = (w, theta, alpha, eps)
    while it < max_iter:
        *p1, ll0 = step(*cur)
        it += 1
        if np.isfinite(ll_old) and abs(ll0 - ll_old) <= tol * scale:
            cur = tuple(p1)
            converged = True
            break
        *p2, ll1 = step(*p1)
        it += 1
        x0, x1, x2 = pack(*cur), pack(*p1), pack(*p2)
        r_ = x1 - x0
        v_ = x2 - 2 * x1 + x0
        nv = np.linalg.norm(v_)
        best, ll_best = tuple(p2), ll1
        if nv > 0:
            steplen = min(-np.linalg.norm(r_) / nv, -1.0)
            xs = x0 - 2 * steplen * r_ + steplen * steplen * v_
            try:
                *ps, lls = step(*unpack(xs))  # stabilizing EM step
                it += 1
                if lls >= ll1 - 1e-9 * scale:
                    best, ll_best = tuple(ps), lls
            except (FloatingPointError, ValueError):
                pass
        cur = best
        if abs(ll_best - ll0) <= tol * scale or abs(ll1 - ll0) <= tol * scale:
            ll_old = ll_best
            converged = True
            break
        ll_old = ll_best
    w, theta, alpha, eps = cur
    ll = prob.loglik(np.log(np.maximum(w, 1e-300)), theta, T, alpha, eps)
    return EMFit(w, theta, alpha, ll, it, converged, eps)
