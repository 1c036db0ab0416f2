"""Finite spaces: each pair's agreement predicted from the other LFs' joint tables.

Under conditional independence given Y every joint table of two LFs (abstain a
category) is ``J_cd = mu_c W mu_d^T`` with ``W = diag(prior)`` of rank k (the labels
with prior mass). For disjoint sets O1, O2 of the *other* LFs

    J_ab = J_{a,O1} (J_{O2,O1})^+ J_{O2,b}                     (multi-view identity)

whenever each of O1, O2 resolves the k latent labels. A pair's statistic is its
observed agreement mass P(lambda_a = lambda_b, both vote) minus that prediction, which
never reads the pair's own table, so a copying pair cannot absorb its own excess.

**Cheap on large spaces.** The identity survives any fixed linear map of the other
LFs' one-hot votes that keeps rank k: each LF's vote is projected on the top singular
vectors of its table against the other LFs' pooled votes (at most ``k + 2`` features
per LF instead of ``r + 1``: 121 values per LF on ``Permutations(5)``), and per pair
the halves' cross-table is reduced to its top-k singular subspace, so the prediction
is ``A C^-1 B`` with a k x k matrix C. Everything is a function of the vote-pattern
counts of a ``VoteStats``: O(n_patterns k^2) per pair, never O(n_rows). The rank k is
the number of labels with prior mass, estimated from the votes when not given
(:func:`estimate_n_components`).

**Cross-fitting.** Choosing the features and the top-k subspace on the same rows as
the statistic biases it: the kept singular values are inflated by the noise, so C^-1,
and with it the prediction, is too small and the statistic too large (measured: a
mean z of +0.1 to +0.2 under independence and 8-10% false alarms at alpha = 0.05 with
weak LFs; +0.2 to +0.5 and 20-30% on ``Permutations(6)``/``(7)`` with noisy per-LF
features). The rows are therefore split at random in two folds (a multivariate
hypergeometric split of the pattern counts); the features and subspaces chosen on one
fold are applied to the other, and the two statistics are averaged. What is left is
the second-order bias of the inverse, which makes the prediction slightly too *large*
(a conservative test: mean z -0.02 to -0.06 measured).

**Small alphabets** (every LF keeps its one-hot vote: plain classes, small
spaces): every sum above is a block of a fold's second-moment matrix of the
stacked one-hot votes, and each influence a quadratic form in them, so all pairs'
influences come from one sparse product per fold (:mod:`._finite_onehot`) instead
of two dozen passes over the patterns per pair.

**Standard errors.** With the features fixed, the statistic is a smooth function of
the pattern frequencies; its influence per pattern is explicit (see
:func:`_pair_statistic`), which gives the covariance of all pairs' statistics at
O(n_patterns) cost (delta method). The family-wise decision draws the null maximum
from that covariance (``_calibration.gaussian_max_t_step``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from scipy import sparse

from snorkel_structured._validation import ABSTAIN
from snorkel_structured.estimators.dependencies._calibration import (
    gaussian_max_t_step,
    split_counts,
)
from snorkel_structured.estimators.dependencies._finite_onehot import (
    OneHotFold,
    agreement_indicators,
    inverse_tables,
    pair_quadratic_forms,
)

__all__ = ["estimate_n_components", "finite_test", "halves", "pairs"]

# Features kept per LF beyond the rank: slack for directions the data estimates poorly.
_EXTRA_FEATURES = 2
# Tables with more cells than this (huge alphabets) stay sparse; their top singular
# directions are then found by a randomized range finder, at most _SKETCH of them.
_DENSE_CELLS = 1 << 18
_SKETCH = 64
# LFs with at most this many values (abstain included) group sums by dense products.
_DENSE_VALUES = 8
# Kept singular values at least this share of the largest: read from eigh of M M^T.
_EIGH_RATIO = 1e-4
# Small alphabets (one-hot features only) read the folds' second moments
# (_finite_onehot); False: the per-pattern path for every space (a reference).
_SECOND_MOMENTS = True


def pairs(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (a, b), a < b, of all pairs of m LFs, in row-major order."""
    a, b = np.triu_indices(m, k=1)
    return a.astype(np.int64), b.astype(np.int64)


class _Votes:
    """Each LF's alphabet (values used, abstain included) and coded votes per pattern.

    Parameters
    ----------
    patterns : ndarray of int of shape (n_patterns, n_lfs)
    counts : ndarray of shape (n_patterns,)
    """

    def __init__(self, patterns: np.ndarray, counts: np.ndarray) -> None:
        self.patterns = patterns
        self.counts = counts
        self.n = float(counts.sum())
        self.vals: list[np.ndarray] = []
        self.codes: list[np.ndarray] = []
        self._by_value: list[Any] = []
        u = patterns.shape[0]
        for c in range(patterns.shape[1]):
            v, inv = np.unique(patterns[:, c], return_inverse=True)
            inv = inv.ravel()
            self.vals.append(v)
            self.codes.append(inv)
            # (s_c, n_patterns): sums over the patterns grouped by LF c's value;
            # dense for a few values, where a BLAS product beats the sparse one
            if v.size <= _DENSE_VALUES:
                by: Any = np.zeros((v.size, u))
                by[inv, np.arange(u)] = 1.0
            else:
                by = sparse.csr_matrix(
                    (np.ones(u), (inv, np.arange(u))), shape=(v.size, u)
                )
            self._by_value.append(by)

    @property
    def m(self) -> int:
        return int(self.patterns.shape[1])

    def onehot(self, c: int) -> np.ndarray:
        """LF c's one-hot votes, (n_patterns, s_c)."""
        return np.eye(self.vals[c].size)[self.codes[c]]

    def reweighted(self, counts: np.ndarray) -> _Votes:
        """The same LFs and alphabets with new counts per pattern, over the patterns
        with a positive count only (e.g. one fold of the rows); ``rows`` are their
        indices among this object's patterns."""
        rows = np.flatnonzero(counts > 0)
        out = object.__new__(_Votes)
        out.rows = rows
        out.patterns, out.counts = self.patterns[rows], counts[rows]
        out.n = float(out.counts.sum())
        out.vals = self.vals
        out.codes = [code[rows] for code in self.codes]
        out._by_value = [by[:, rows] for by in self._by_value]
        return out

    def group_sum(self, c: int, X: np.ndarray) -> np.ndarray:
        """Rows of X summed by LF c's value, (s_c, X.shape[1])."""
        return np.asarray(self._by_value[c] @ X)

    def pair_table(
        self, c: int, d: int, p: np.ndarray, *, votes_only: bool = False
    ) -> Any:
        """Joint frequencies of the values of LFs c and d under pattern weights p.

        Dense (s_c, s_d) when small, else a sparse matrix; ``votes_only`` leaves out
        the abstain row and column.
        """
        sc, sd = self.vals[c].size, self.vals[d].size
        if sc * sd <= _DENSE_CELLS:
            flat = np.bincount(
                self.codes[c] * sd + self.codes[d], weights=p, minlength=sc * sd
            )
            table: Any = flat.reshape(sc, sd)
        else:
            table = sparse.csr_matrix(
                (p, (self.codes[c], self.codes[d])), shape=(sc, sd)
            )
        if votes_only:
            table = table[self.vals[c] != ABSTAIN][:, self.vals[d] != ABSTAIN]
        return table


def _top_svd(M: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Singular triplets of M, at least its top k: (U, sv, Vt) as ``np.linalg.svd``.

    From ``eigh`` of the smaller Gram matrix when the k-th singular value is above
    ``_EIGH_RATIO`` times the first (then only the top k are returned): squaring
    costs each kept direction about ``eps / ratio^2`` of accuracy, 1e-8 at worst,
    for half the time of an SVD. Otherwise, where squaring would lose directions
    near the rank cut, an SVD.
    """
    tall = M.shape[0] > M.shape[1]
    A = M.T if tall else M
    kk = min(k, A.shape[0])
    if kk > 0:
        ev, U = np.linalg.eigh(A @ A.T)
        ev, U = ev[::-1][:kk], U[:, ::-1][:, :kk]
        if ev[0] > 0 and ev[-1] > _EIGH_RATIO**2 * ev[0]:
            sv = np.sqrt(ev)
            Vt = (U.T @ A) / sv[:, None]
            return (Vt.T, sv, U.T) if tall else (U, sv, Vt)
    return np.linalg.svd(M, full_matrices=False)


def _top_singular(blocks: list[Any], n_vectors: int) -> tuple[np.ndarray, np.ndarray]:
    """Top left singular vectors and singular values of ``hstack(blocks)``.

    Exact (:func:`_top_svd`) for a table of at most ``_DENSE_CELLS`` cells; otherwise
    the blocks stay sparse and the top ``n_vectors`` (at most ``_SKETCH``) directions
    come from a randomized range finder with three power iterations, started from a
    fixed seed (the result does not depend on it beyond rounding).

    Returns
    -------
    U : ndarray of shape (n_rows, <= n_vectors)
    sv : ndarray
        Singular values, decreasing (only the leading ones on the sparse path and
        when :func:`_top_svd` reads them from ``eigh``).
    """
    rows = blocks[0].shape[0]
    cols = sum(b.shape[1] for b in blocks)
    dense = rows * cols <= _DENSE_CELLS
    if dense:
        A = np.hstack([b.toarray() if sparse.issparse(b) else b for b in blocks])
        U, sv, _ = _top_svd(A, n_vectors)
        return U[:, :n_vectors], sv
    A = sparse.hstack([sparse.csr_matrix(b) for b in blocks]).tocsr()
    width = min(min(n_vectors, _SKETCH) + 10, rows, cols)
    start = np.random.default_rng(0).standard_normal((cols, width))
    Q, _ = np.linalg.qr(A @ start)
    for _ in range(3):
        Q, _ = np.linalg.qr(A @ (A.T @ Q))
    Ub, sv, _ = np.linalg.svd(np.asarray((A.T @ Q).T), full_matrices=False)
    return (Q @ Ub)[:, :n_vectors], sv


def _noise_floor(row_sums: np.ndarray, col_sums: np.ndarray, n: float) -> float:
    """Operator-norm scale of the sampling noise of a frequency table of n rows.

    Entry (i, j) has variance about p_ij / n; the norm of such a noise matrix is about
    sqrt(max row sum) + sqrt(max column sum) of those variances.
    """
    rows = row_sums.max(initial=0.0)
    cols = col_sums.max(initial=0.0)
    return float(np.sqrt(rows / n) + np.sqrt(cols / n))


def estimate_n_components(patterns: np.ndarray, counts: np.ndarray) -> int:
    """The rank k of the LFs' joint tables (labels with prior mass), from the votes.

    Under conditional independence the table of LF c's votes against all other LFs'
    votes has rank at most k. Per LF, the singular values above the sampling noise
    (:func:`_noise_floor`) are counted with each other LF left out in turn and the
    smallest count is kept (a copying partner adds its own diagonal, full-rank
    table); k is the largest of these counts over the LFs. Labels too rare, or LFs
    too weak, to rise above the noise are not counted.

    Parameters
    ----------
    patterns : ndarray of int of shape (n_patterns, n_lfs)
        Distinct vote patterns, -1 = abstain.
    counts : ndarray of shape (n_patterns,)
        Rows per pattern.

    Returns
    -------
    k : int
        At least 1.
    """
    votes = _Votes(np.asarray(patterns), np.asarray(counts, dtype=np.float64))
    return _estimate_rank(votes)


def _estimate_rank(votes: _Votes) -> int:
    p = votes.counts / votes.n
    k = 1
    for c in range(votes.m):
        if not (votes.vals[c] != ABSTAIN).any():
            continue
        tables = [
            votes.pair_table(c, d, p, votes_only=True) for d in range(votes.m) if d != c
        ]
        row_sums = np.stack([np.asarray(t.sum(axis=1)).ravel() for t in tables])
        col_max = np.array([np.asarray(t.sum(axis=0)).max(initial=0.0) for t in tables])
        dense = all(isinstance(t, np.ndarray) for t in tables)
        if dense:  # leave-one-out Gram matrices of the (s_c, sum s_d) table
            grams = np.stack([t @ t.T for t in tables])
            total = grams.sum(axis=0)
        rank_c = None
        for j in range(len(tables)):  # leave one other LF out
            if dense:
                ev = np.linalg.eigvalsh(total - grams[j])
                sv = np.sqrt(np.clip(ev, 0.0, None))
            else:
                rest = [t for i, t in enumerate(tables) if i != j]
                sv = _top_singular(rest, _SKETCH)[1]
            floor = _noise_floor(
                row_sums.sum(axis=0) - row_sums[j], np.delete(col_max, j), votes.n
            )
            r = int((sv > floor).sum())
            rank_c = r if rank_c is None else min(rank_c, r)
        k = max(k, rank_c or 1)
    return k


def _lf_features(votes: _Votes, k: int, p: np.ndarray) -> list[np.ndarray]:
    """Each LF's vote as features per pattern, (n_patterns, q_c) with q_c <= k + 2.

    An LF with at most ``k + 2`` values (abstain included) keeps its one-hot vote. A
    larger alphabet is projected on the top left singular vectors of its table
    against the other LFs' votes *pooled* (label by label, abstain a label) under the
    pattern weights ``p``: ``sum_d J_cd = mu_c W (sum_d mu_d)^T`` still has the column
    space of ``mu_c W^(1/2)``, and pooling adds the other LFs' signal coherently and
    their sampling noise incoherently (a sharper estimate than the stacked tables on
    large spaces, where each cell holds few rows).
    """
    q = k + _EXTRA_FEATURES
    feats = []
    P = votes.patterns
    for c in range(votes.m):
        if votes.vals[c].size <= q:
            feats.append(votes.onehot(c))
            continue
        others = [d for d in range(votes.m) if d != c]
        labels = (P[:, others] - ABSTAIN).ravel()  # abstain -> 0, label l -> l + 1
        rows = np.repeat(votes.codes[c], len(others))
        weights = np.repeat(p, len(others))
        shape = (votes.vals[c].size, int(labels.max(initial=0)) + 1)
        if shape[0] * shape[1] <= _DENSE_CELLS:
            flat = np.bincount(
                rows * shape[1] + labels, weights=weights, minlength=shape[0] * shape[1]
            )
            table: Any = flat.reshape(shape)
        else:
            table = sparse.csr_matrix((weights, (rows, labels)), shape=shape)
        U, _ = _top_singular([table], q)
        feats.append(U[votes.codes[c], :q])  # the one-hot vote times U[:, :q]
    return feats


def halves(
    others: list[int], a: int, b: int, flagged: list[tuple[int, int]]
) -> tuple[list[int], list[int]] | None:
    """Split the other LFs in two so that no flagged pair straddles a used cross-table.

    The prediction reads the tables (a, O1), (O2, O1) and (O2, b): a flagged partner
    of a goes to O2, one of b to O1, and flagged pairs among the others stay on one
    side (their joint table is then never read). Groups are balanced greedily.
    """
    parent = {c: c for c in others}

    def find(c: int) -> int:
        while parent[c] != c:
            c = parent[c]
        return c

    for x, y in flagged:
        if x in parent and y in parent:
            parent[find(x)] = find(y)
    groups: dict[int, list[int]] = {}
    for c in others:
        groups.setdefault(find(c), []).append(c)
    partners_a = {y if x == a else x for x, y in flagged if a in (x, y)}
    partners_b = {y if x == b else x for x, y in flagged if b in (x, y)}
    O1: list[int] = []
    O2: list[int] = []
    free = []
    for g in groups.values():
        to_a, to_b = bool(partners_a & set(g)), bool(partners_b & set(g))
        if to_a and to_b:
            continue  # dependent on both: usable on neither side
        if to_a:
            O2 += g
        elif to_b:
            O1 += g
        else:
            free.append(g)
    for g in sorted(free, key=len, reverse=True):
        (O1 if len(O1) <= len(O2) else O2).extend(g)
    if not O1 or not O2:
        return None
    return sorted(O1), sorted(O2)


class _FoldFeatures:
    """One fold's features of every LF side by side, their Gram matrix under the
    fold's pattern weights, and the top-k bases already computed per split.

    Every pair's cross-table is a block of the one Gram matrix, and pairs (and the
    rounds of the forward selection) share splits: one product over the patterns
    per fold instead of one per pair and round. The bases are only ever applied to
    the other fold's statistic, so they are projected on that fold's patterns
    (``rows``) alone: with few rows per pattern, about half of them.
    """

    def __init__(
        self, feats: list[np.ndarray], p: np.ndarray, rows: np.ndarray
    ) -> None:
        Z = np.hstack(feats)
        edges = np.cumsum([f.shape[1] for f in feats])[:-1]
        self.cols = np.split(np.arange(Z.shape[1]), edges)
        own = p > 0
        self.gram = Z[own].T @ (Z[own] * p[own, None])
        self._all, self._rows = Z, rows
        self._tops: dict[Any, Any] = {}
        self._bases: dict[Any, tuple[np.ndarray, np.ndarray] | None] = {}

    @functools.cached_property
    def Z(self) -> np.ndarray:
        """The features on ``rows``, column-major (the halves' columns are read as
        whole contiguous columns); only :meth:`basis` reads them, so the
        second-moment path never builds them."""
        Z = np.asfortranarray(self._all[self._rows])
        del self._all
        return Z

    def _top(self, O1: list[int], O2: list[int], k: int) -> Any:
        """(columns of O1, of O2, right and left top-k singular vectors of their
        cross-table, 1 / sqrt of the singular values), or None when it is zero."""
        key = (tuple(O1), tuple(O2), k)
        if key not in self._tops:
            c1 = np.concatenate([self.cols[c] for c in O1])
            c2 = np.concatenate([self.cols[c] for c in O2])
            Uk, sv, Vkt = _top_svd(self.gram[np.ix_(c2, c1)], k)
            if sv.size == 0 or not sv[0] > 0:
                self._tops[key] = None
            else:
                kk = min(k, int((sv > 1e-10 * sv[0]).sum()))
                scale = 1.0 / np.sqrt(sv[:kk])
                self._tops[key] = (c1, c2, Vkt[:kk].T, Uk[:, :kk], scale)
        return self._tops[key]

    def basis(
        self, O1: list[int], O2: list[int], k: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The halves' features projected on the top-k subspace of their cross-table.

        Returns
        -------
        v1, v2 : ndarray of shape (rows.size, kk)
            Features of O1 and O2, kk = min(k, numerical rank), scaled so that the
            reduced table ``sum_u p_u v2_u v1_u^T`` is the identity on this fold.
            None when the cross-table is zero.
        """
        key = (tuple(O1), tuple(O2), k)
        if key not in self._bases:
            top = self._top(O1, O2, k)
            if top is None:
                self._bases[key] = None
            else:
                c1, c2, V, U, scale = top
                self._bases[key] = (
                    (self.Z[:, c1] @ V) * scale,
                    (self.Z[:, c2] @ U) * scale,
                )
        return self._bases[key]

    def maps(
        self, O1: list[int], O2: list[int], k: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`basis` as linear maps of all LFs' features, (D, kk) each and zero
        off the halves' columns: ``v1 = Z F1``, ``v2 = Z F2``. None likewise."""
        top = self._top(O1, O2, k)
        if top is None:
            return None
        c1, c2, V, U, scale = top
        F1 = np.zeros((self.gram.shape[0], V.shape[1]))
        F2 = np.zeros_like(F1)
        F1[c1], F2[c2] = V * scale, U * scale
        return F1, F2


def _pair_statistic(
    votes: _Votes,
    v1: np.ndarray,
    v2: np.ndarray,
    a: int,
    b: int,
    p: np.ndarray,
    both_orientations: bool = True,
) -> tuple[float, np.ndarray]:
    """Observed minus predicted agreement mass of (a, b), and its influence per pattern.

    Per orientation (fa, fb) = (v1, v2) and (v2, v1), with the reduced tables
    ``C = sum_u p_u fb_u fa_u^T``, ``A[j] = sum_u p_u 1(a_u = l_j) fa_u`` and
    ``B[j] = sum_u p_u 1(b_u = l_j) fb_u`` over the labels l_j both LFs use, the
    prediction is ``tr(C^-1 K)`` with ``K = B^T A``. It is homogeneous of degree 1
    in p, so its influence at pattern u is its derivative
    ``-fa_u^T C^-1 K C^-1 fb_u + fa_u^T C^-1 B[j(a_u)] + A[j(b_u)] C^-1 fb_u``
    minus the prediction itself (Euler). The two orientations are averaged, or only
    the first is used when ``both_orientations`` is False: the second reads the
    tables (a, O2) and (O1, b), which hold a's and b's flagged partners.

    Returns
    -------
    diff : float
        P(lambda_a = lambda_b, both vote) minus its prediction.
    influence : ndarray of shape (n_patterns,)
        Influence function of ``diff``: its variance is
        ``sum_u p_u influence_u^2 / n``.
    """
    va, vb = votes.vals[a], votes.vals[b]
    code_a, code_b = votes.codes[a], votes.codes[b]
    la, lb = va[code_a], vb[code_b]
    e = ((la == lb) & (la != ABSTAIN)).astype(np.float64)
    agree = float(p @ e)
    ia, ib = np.nonzero((va[:, None] == vb[None, :]) & (va != ABSTAIN)[:, None])
    if ia.size == 0:
        return agree, e - agree
    # j(a_u): index of a's vote among the shared labels; -1 (abstain or not shared)
    # picks the zero row appended to A and B below
    ja = np.full(va.size, -1)
    ja[ia] = np.arange(ia.size)
    jb = np.full(vb.size, -1)
    jb[ib] = np.arange(ib.size)
    ja_u, jb_u = ja[code_a], jb[code_b]
    pred = 0.0
    deriv = np.zeros(p.size)
    # The second orientation's table is the first's transposed, and so is its
    # inverse: the two share pv1, pv2 and the rows v1 C^-1, v2 C^-T.
    pv1, pv2 = v1 * p[:, None], v2 * p[:, None]
    Ci = inverse_tables(v2.T @ pv1)
    v1C, v2C = v1 @ Ci, v2 @ Ci.T
    orientations = [(pv1, pv2, Ci, v1C, v2C)]
    if both_orientations:
        orientations.append((pv2, pv1, Ci.T, v2C, v1C))
    share = 1.0 / len(orientations)
    zero = np.zeros((1, v1.shape[1]))
    ones = np.ones(v1.shape[1])
    for pfa, pfb, Ci_o, faC, Cfb in orientations:
        # sums of fa (fb) over the patterns, grouped by a's (b's) shared label
        A = np.vstack([votes.group_sum(a, pfa)[ia], zero])
        B = np.vstack([votes.group_sum(b, pfb)[ib], zero])
        K = B[:-1].T @ A[:-1]
        pred += share * float(np.sum(Ci_o * K.T))  # tr(Ci K)
        # faC: rows fa_u^T C^-1; Cfb: rows (C^-1 fb_u)^T. Row sums as a product
        # with ones and gathers with take: numpy's sum over a short last axis and
        # its fancy indexing of rows cost 5-10x more on these (u, k) arrays.
        d = faC * (np.take(B, ja_u, axis=0) - Cfb @ np.ascontiguousarray(K.T))
        d += np.take(A, jb_u, axis=0) * Cfb
        deriv += share * (d @ ones)
    return agree - pred, (e - agree) - (deriv - pred)


def _cross_fitted(
    fold_votes: list[_Votes],
    feats: list[_FoldFeatures],
    a: int,
    b: int,
    split: tuple[list[int], list[int]],
    k: int,
    both_orientations: bool,
) -> tuple[float, list[np.ndarray]] | None:
    """The pair's statistic averaged over the two folds, and its scaled influences.

    The features and the top-k subspace are chosen on one fold and the statistic is
    computed on the other (``fold_votes[f]``: fold f's patterns, weighted by their
    rows in it), both ways.

    Returns
    -------
    diff : float
    scaled : list of two ndarrays of shape (n_patterns_f,)
        Per fold f, ``influence_u sqrt(p_u / n_f) / 2``: the covariance of two pairs'
        statistics is the sum over folds of the products of these.
    """
    out = []
    scaled = []
    for stat_fold in (0, 1):
        basis = feats[1 - stat_fold].basis(*split, k)
        if basis is None:
            return None
        votes = fold_votes[stat_fold]
        p = votes.counts / votes.n
        d, infl = _pair_statistic(votes, *basis, a, b, p, both_orientations)
        out.append(d)
        scaled.append(0.5 * infl * np.sqrt(p / votes.n))
    return 0.5 * (out[0] + out[1]), scaled


def _cross_fitted_onehot(
    votes: _Votes,
    feats: list[_FoldFeatures],
    pairs_to_do: list[tuple[Any, int, int, tuple[list[int], list[int]], bool]],
    k: int,
) -> dict[Any, Any]:
    """:func:`_cross_fitted` from each fold's second moments (one-hot features), for
    every (key, a, b, split, both_orientations) of ``pairs_to_do`` at once.

    Returns
    -------
    dict
        Per key None (a split's cross-table is zero), or (diff, per_fold, scaled):
        per_fold the two folds' (diff_f, G_f) (:func:`pair_quadratic_forms`) and
        scaled two Nones that the caller fills with the scaled influences.
    """
    cols = feats[0].cols
    D = feats[0].gram.shape[0]
    shared = {}
    for key, a, b, _, _ in pairs_to_do:
        va, vb = votes.vals[a], votes.vals[b]
        ia, ib = np.nonzero((va[:, None] == vb[None, :]) & (va != ABSTAIN)[:, None])
        shared[key] = (cols[a][ia], cols[b][ib])
    out: dict[Any, Any] = {key: [None, None] for key, *_ in pairs_to_do}
    for stat_fold in (0, 1):
        groups: dict[Any, list[Any]] = {}  # stacked by (kk, both orientations)
        for key, _, _, split, both in pairs_to_do:
            maps = feats[1 - stat_fold].maps(*split, k)
            if maps is None:
                out[key] = None
            elif out[key] is not None:
                groups.setdefault((maps[0].shape[1], both), []).append((key, maps))
        for (_, both), members in groups.items():
            keys = [key for key, _ in members]
            E = agreement_indicators(
                D, [shared[key][0] for key in keys], [shared[key][1] for key in keys]
            )
            diffs, Gs = pair_quadratic_forms(
                feats[stat_fold].gram,
                np.stack([maps[0] for _, maps in members]),
                np.stack([maps[1] for _, maps in members]),
                E,
                both,
            )
            for i, key in enumerate(keys):
                if out[key] is not None:
                    out[key][stat_fold] = (float(diffs[i]), Gs[i])
    return {
        key: None
        if per_fold is None
        else (0.5 * (per_fold[0][0] + per_fold[1][0]), per_fold, [None, None])
        for key, per_fold in out.items()
    }


def finite_test(
    patterns: np.ndarray,
    counts: np.ndarray,
    n_components: int | None,
    alpha: float,
    n_sim: int,
    rng: np.random.Generator,
    until: Any = None,
) -> tuple[Any, ...]:
    """Forward selection of dependent pairs with the max-T criterion, cross-fitted.

    Parameters
    ----------
    patterns : ndarray of int of shape (n_patterns, n_lfs)
    counts : ndarray of shape (n_patterns,)
        Integer rows per pattern.
    n_components : int or None
        Rank k of the joint tables; None estimates it (:func:`estimate_n_components`).
    alpha : float
    n_sim : int
        Gaussian draws of the null maximum.
    rng : numpy.random.Generator
        Draws the fold split and the Gaussian draws.
    until : callable, optional
        ``until(observed, expected)`` of a pair just flagged (its agreement rate and
        prediction, as returned): True stops the selection there. The returned
        statistics are then those of the round that flagged it.

    Returns
    -------
    a_idx, b_idx : ndarray of int of shape (n_pairs,)
    n_both : ndarray of shape (n_pairs,)
        Rows where both LFs vote.
    observed, expected : ndarray of shape (n_pairs,)
        Agreement rate among those rows, and its cross-fitted prediction.
    z : ndarray of shape (n_pairs,)
    flagged : list of (int, int)
        In the order flagged.
    """
    votes = _Votes(np.asarray(patterns), np.asarray(counts, dtype=np.float64))
    m = votes.m
    a_idx, b_idx = pairs(m)
    P = votes.patterns
    both = (P[:, a_idx] != ABSTAIN) & (P[:, b_idx] != ABSTAIN)
    agree_full = votes.counts @ (both & (P[:, a_idx] == P[:, b_idx])) / votes.n
    n_both = votes.counts @ both
    folds = split_counts(votes.counts, rng)
    normals = rng.standard_normal((n_sim, a_idx.size))
    nan = np.full(a_idx.size, np.nan)
    if folds is None:  # too few rows to split: nothing can be tested
        return a_idx, b_idx, n_both, agree_full / (n_both / votes.n), nan, nan, []
    k = _estimate_rank(votes) if n_components is None else int(n_components)
    fold_votes = [votes.reweighted(f) for f in folds]
    fold_p = [f / f.sum() for f in folds]
    # fold f's features, projected on the other fold's patterns
    feats = [
        _FoldFeatures(
            _lf_features(votes, k, fold_p[f]), fold_p[f], fold_votes[1 - f].rows
        )
        for f in (0, 1)
    ]
    # Every LF keeps its one-hot vote: the statistics from each fold's second
    # moments, the influences as quadratic forms of the vote pairs (_finite_onehot).
    onehot = _SECOND_MOMENTS and all(v.size <= k + _EXTRA_FEATURES for v in votes.vals)
    if onehot:
        sizes = [v.size for v in votes.vals]
        fold_pairs = [OneHotFold(fold.codes, sizes) for fold in fold_votes]
    weights = [
        0.5 * np.sqrt(fold.counts / fold.n) / np.sqrt(fold.n) for fold in fold_votes
    ]
    cache: dict[Any, Any] = {}
    flagged: list[tuple[int, int]] = []
    while True:
        diff = np.full(a_idx.size, np.nan)
        # influences scaled by sqrt(p_u / n) per fold: cov = sum of G_f^T G_f
        G = [np.zeros((fold.counts.size, a_idx.size)) for fold in fold_votes]
        todo: list[Any] = []  # one-hot path: pairs whose statistics are to compute
        new: list[Any] = []  # ... and whose influences are still to form
        used: dict[int, Any] = {}
        for t in range(a_idx.size):
            a, b = int(a_idx[t]), int(b_idx[t])
            split = halves([c for c in range(m) if c not in (a, b)], a, b, flagged)
            if split is None or n_both[t] == 0:
                continue
            # the second orientation reads (a, O2) and (O1, b): only without partners
            both_ways = not any(a in f or b in f for f in flagged)
            key = (t, tuple(split[0]), tuple(split[1]), both_ways)
            if key not in cache:  # recomputed only when a flag changes the split
                if onehot:
                    todo.append((key, a, b, split, both_ways))
                else:
                    cache[key] = _cross_fitted(
                        fold_votes, feats, a, b, split, k, both_ways
                    )
            used[t] = key
        if todo:  # the one-hot path: this round's new pairs at once
            cache.update(_cross_fitted_onehot(votes, feats, todo, k))
            new = [key for key, *_ in todo if cache[key] is not None]
        used = {t: key for t, key in used.items() if cache[key] is not None}
        for t, key in used.items():
            diff[t] = cache[key][0]
        for f in (0, 1) if onehot and new else ():
            # the new pairs' influences at once: one sparse product per fold
            forms = fold_pairs[f].quadratic_forms(
                np.stack([cache[key][1][f][1] for key in new])
            )
            for i, key in enumerate(new):
                cache[key][2][f] = (forms[:, i] - cache[key][1][f][0]) * weights[f]
        for t, key in used.items():
            G[0][:, t], G[1][:, t] = cache[key][-1]
        cov = G[0].T @ G[0] + G[1].T @ G[1]
        se = np.sqrt(np.diag(cov))
        with np.errstate(invalid="ignore", divide="ignore"):
            z = np.where(se > 0, diff / se, np.nan)
        open_ = np.array(
            [(x, y) not in flagged for x, y in zip(a_idx, b_idx, strict=True)]
        )
        pick = gaussian_max_t_step(z, cov, open_, alpha, normals)
        if pick is None:
            break
        flagged.append((int(a_idx[pick]), int(b_idx[pick])))
        if until is not None:
            share = n_both[pick] / votes.n
            if until(agree_full[pick] / share, (agree_full[pick] - diff[pick]) / share):
                break
    share = n_both / votes.n
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = agree_full / share
        expected = (agree_full - diff) / share
    return a_idx, b_idx, n_both, observed, expected, z, flagged
