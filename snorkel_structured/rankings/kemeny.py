"""Weighted Kemeny decoding (the linear ordering problem), row by row.

Each row holds a real matrix ``C`` of shape (n_items, n_items): ``C[i, j]`` is the
weight of the evidence that item ``i`` comes before item ``j`` (the diagonal is
ignored). Decoding finds the ordering ``pi`` (best first, as in
:mod:`snorkel_structured.rankings._votes`) that maximizes

    sum over pairs with i placed before j of C[i, j],

equivalently that minimizes the weight ``sum C[j, i]`` of the evidence it overrides.
The problem is NP-hard in general; :func:`kemeny_rank` offers two exact methods (a
dynamic program over subsets for up to 20 items, an integer program for moderate
sizes) and a fast local-search heuristic.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any

import numpy as np

from snorkel_structured import _warnings
from snorkel_structured._validation import check_seed
from snorkel_structured.exceptions import ConvergenceWarning
from snorkel_structured.rankings._votes import check_orderings

__all__ = ["AUTO_EXACT_MAX_ITEMS", "DP_MAX_ITEMS", "kemeny_objective", "kemeny_rank"]

#: The largest ``n_items`` the subset dynamic program accepts (2^n states per row).
DP_MAX_ITEMS = 20
#: ``method="auto"`` decodes exactly (dynamic program) up to this many items.
AUTO_EXACT_MAX_ITEMS = 12
# Rows of the dynamic program are processed in chunks whose tables stay below this.
_DP_BYTES = 128 * 2**20
# Layer structures of the dynamic program are cached up to this many items.
_DP_CACHE_MAX_ITEMS = 16
# Rows of the local search are processed in chunks whose (rows, n, n) copies stay
# below this.
_LS_BYTES = 64 * 2**20
_METHODS = ("auto", "exact_dp", "ilp", "heuristic")
# Iterated local search of the heuristic: max(_ILS_MIN_ROUNDS, min(_ILS_MAX_ROUNDS,
# _ILS_BUDGET // n_items)) rounds, each reversing _ILS_KICKS random segments of 2 to
# _ILS_SEGMENT items before searching again. 16 rounds left one row in 1,000 of
# 10 items 0.6% below the optimum (5 Mallows LFs); 24 found every optimum there.
_ILS_MAX_ROUNDS = 24
_ILS_MIN_ROUNDS = 3
_ILS_BUDGET = 320
_ILS_KICKS = 2
_ILS_SEGMENT = 5
# Rows of C with an entry larger than this in magnitude are scaled by a power of two
# before decoding (see _rescale_large_rows). Below it, the decoders' sums (at most
# n_items^2 entries) cannot overflow and the integer program's costs stay below
# 1e20, where HiGHS starts treating a cost as infinite.
_C_RESCALE_ABOVE = 2.0**60


# --------------------------------------------------------------------------------
# Validation


def _check_C(C: Any) -> tuple[np.ndarray, bool]:
    """``C`` as a float64 (n_rows, n, n) copy with a zero diagonal; and whether the
    input was a single 2-D matrix."""
    try:
        arr = np.asarray(C)
    except (ValueError, TypeError) as exc:
        raise ValueError(
            "C must be a real numeric array of pairwise weights (n_rows, n_items, "
            f"n_items) or (n_items, n_items); could not convert it: {exc}"
        ) from None
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.integer)
        or np.issubdtype(arr.dtype, np.floating)
        or arr.dtype == bool
    ):
        raise ValueError(
            "C must be a real numeric array of pairwise weights; got dtype "
            f"{arr.dtype}."
        )
    if arr.ndim not in (2, 3) or arr.shape[-1] != arr.shape[-2]:
        raise ValueError(
            "C must be a square matrix (n_items, n_items) or a batch of them "
            f"(n_rows, n_items, n_items); got shape {arr.shape}."
        )
    if arr.shape[-1] < 1:
        raise ValueError(f"C must have at least one item; got shape {arr.shape}.")
    single = arr.ndim == 2
    out = np.array(arr, dtype=np.float64, ndmin=3)  # always a copy
    if not np.all(np.isfinite(out)):
        where = tuple(int(x) for x in np.argwhere(~np.isfinite(out))[0])
        where = where[1:] if single else where
        raise ValueError(
            f"C{list(where)} is not finite; pairwise weights must be finite numbers."
        )
    n = out.shape[-1]
    out[:, np.arange(n), np.arange(n)] = 0.0
    return out, single


def _rescale_large_rows(C: np.ndarray) -> np.ndarray:
    """``C`` (n_rows, n, n), modified in place, with each row whose largest magnitude
    exceeds ``_C_RESCALE_ABOVE`` multiplied by the power of two that brings it into
    [0.5, 1).

    Weighted Kemeny is invariant to a positive common scale of a row, and scaling by
    a power of two is exact in floating point (short of underflow, for entries below
    1e-308 times the row's largest, which cannot change any sum of it): the optima
    are those of the given row, without overflow. Other rows are left bit for bit.
    """
    # two reductions, not a copy of |C| (every predict decodes through here)
    peak = np.maximum(C.max(axis=(1, 2)), -C.min(axis=(1, 2)))
    large = peak > _C_RESCALE_ABOVE
    if large.any():
        _, exponent = np.frexp(peak[large])  # peak = mantissa * 2**exponent
        C[large] = np.ldexp(C[large], -exponent[:, None, None])
    return C


def _check_time_limit(time_limit: Any) -> float | None:
    if time_limit is None:
        return None
    if (
        isinstance(time_limit, bool)
        or not isinstance(time_limit, numbers.Real)
        or not (math.isfinite(time_limit) and time_limit > 0)
    ):
        raise ValueError(
            f"time_limit must be None or a positive number of seconds; got {time_limit!r}."
        )
    return float(time_limit)


# --------------------------------------------------------------------------------
# Objective


def _objective(C: np.ndarray, orderings: np.ndarray) -> np.ndarray:
    """``sum_{a < b} C[o_a, o_b]`` per row; C (R, n, n), orderings (R, n) valid."""
    R, n = orderings.shape
    if R == 0:
        return np.zeros(0)
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    out = np.empty(R)
    step = max(1, _LS_BYTES // (8 * n * n))
    for s in range(0, R, step):
        o = orderings[s : s + step]
        rows = np.arange(s, s + o.shape[0])[:, None, None]
        A = C[rows, o[:, :, None], o[:, None, :]]
        out[s : s + o.shape[0]] = np.where(upper, A, 0.0).sum(axis=(1, 2))
    return out


def kemeny_objective(C: Any, orderings: Any) -> np.ndarray:
    """The weighted Kemeny objective of orderings: the evidence they agree with.

    Parameters
    ----------
    C : array-like of float of shape (n_rows, n_items, n_items) or (n_items, n_items)
        ``C[r, i, j]`` is the weight of the evidence that item ``i`` comes before
        item ``j`` in row ``r``; the diagonal is ignored.
    orderings : array-like of int of shape (n_rows, n_items) or (n_items,)
        Orderings of the items ``0..n_items-1``, best first (1-D with a 2-D ``C``).

    Returns
    -------
    objective : ndarray of float64 of shape (n_rows,), or a float64 scalar for 2-D ``C``
        ``sum over pairs with i placed before j of C[i, j]``.

    Examples
    --------
    >>> C = [[0, 3, 1], [2, 0, 5], [4, 0, 0]]
    >>> float(kemeny_objective(C, [1, 0, 2]))  # C[1, 0] + C[1, 2] + C[0, 2]
    8.0
    """
    Cv, single = _check_C(C)
    n = Cv.shape[-1]
    orders = np.asarray(orderings)
    if single:
        if orders.ndim != 1:
            raise ValueError(
                "orderings must be 1-D (n_items,) for a 2-D C; got shape "
                f"{orders.shape}."
            )
        orders = orders[None, :]
    orders = check_orderings(orders, n, name="orderings")
    if orders.shape[0] != Cv.shape[0]:
        raise ValueError(
            f"C has {Cv.shape[0]} rows and orderings {orders.shape[0]}; they must match."
        )
    with np.errstate(over="ignore"):
        out = _objective(Cv, orders)
    if not np.all(np.isfinite(out)):
        row = int(np.flatnonzero(~np.isfinite(out))[0])
        raise ValueError(
            f"the Kemeny objective of row {row} exceeds the float range (C's largest "
            f"off-diagonal magnitude is {float(np.abs(Cv[row][~np.eye(n, dtype=bool)]).max()):.3g}, summed over "
            f"{n * (n - 1) // 2} pairs): divide C by a common scale first, which "
            "leaves the orderings' comparison unchanged."
        )
    return out[0] if single else out


# --------------------------------------------------------------------------------
# Exact: dynamic program over subsets


def _dp_layers_uncached(n: int) -> tuple[tuple[np.ndarray, ...], ...]:
    """Per subset size k = 1..n: the k-subsets' bit masks (b,) in lexicographic order
    of their sorted members, their members (b, k) in descending order, and the masks
    without each member (b, k).

    In lexicographic order, the k-subsets with lowest member ``l`` are contiguous,
    and without ``l`` they are, in the same order, the (k-1)-subsets of
    ``{l + 1, ..., n - 1}``: the last ``comb(n - l - 1, k - 1)`` of layer k - 1.
    """
    layers = [np.zeros(1, dtype=np.int64)]
    for k in range(1, n + 1):
        prev = layers[-1]
        layers.append(
            np.concatenate(
                [
                    (np.int64(1) << low)
                    | prev[prev.size - math.comb(n - low - 1, k - 1) :]
                    for low in range(n - k + 1)
                ]
            )
        )
    shifts = np.arange(n, dtype=np.int64)
    out = []
    for k in range(1, n + 1):
        m = layers[k]
        members = np.nonzero((m[:, None] >> shifts) & 1)[1].reshape(m.size, k)
        members = np.ascontiguousarray(members[:, ::-1])
        preds = m[:, None] ^ (np.int64(1) << members)
        arrays = (m.astype(np.int32), members.astype(np.int8), preds.astype(np.int32))
        for arr in arrays:
            arr.setflags(write=False)
        out.append(arrays)
    return tuple(out)


_dp_layers_cached = functools.lru_cache(maxsize=None)(_dp_layers_uncached)


def _dp_layers(n: int) -> tuple[tuple[np.ndarray, ...], ...]:
    if n <= _DP_CACHE_MAX_ITEMS:
        return _dp_layers_cached(n)
    return _dp_layers_uncached(n)


def _dp_chunk_rows(n: int) -> int:
    """Rows per chunk: the widest layer's (subsets, n, rows) sums stay near 8 MB (in
    cache) and all tables below ``_DP_BYTES``."""
    widest = math.comb(n, n // 2)
    per_row = (1 << n) * 9 + widest * (16 * n + 40)
    return max(1, min(_DP_BYTES // per_row, 2**20 // (widest * n)))


def _rank_dp(C: np.ndarray) -> np.ndarray:
    """Exact orderings by dynamic programming over subsets, O(2^n n) per row.

    ``f(T)``, the best score of placing the set ``T`` first, is the maximum over its
    last item ``j`` of ``f(T - j) + W(T, j)``, with ``W(T, j) = sum_{i in T} C[i, j]``
    (the diagonal is zero). Subsets are processed by size, in lexicographic order
    (:func:`_dp_layers_uncached`), so that ``W`` of a layer is ``W`` of contiguous
    slices of the previous layer plus one row of ``C``: no gather. A loop over the
    k members' slots (members in descending order, strict comparisons) keeps the
    best last item: among tied ones the highest id. The ordering is read from the
    back (the full set's choice last, and so on), so among tied optima it is the
    one whose reversal is lexicographically largest: the highest id that ends
    some optimum goes last, then, among the optima ending with it, the highest id
    found just before it, and so on. This is not the lexicographically smallest
    optimum in general. Tables are laid out (subset, row), so every step is a vectorized
    operation over the chunk's rows, and a row's result does not depend on the
    other rows of its chunk.
    """
    R, n, _ = C.shape
    out = np.empty((R, n), dtype=np.int64)
    if n == 1:
        out[:] = 0
        return out
    layers = _dp_layers(n)
    full = (1 << n) - 1
    step = _dp_chunk_rows(n)
    for s in range(0, R, step):
        r = min(step, R - s)
        Ct = np.ascontiguousarray(C[s : s + r].transpose(1, 2, 0))  # (i, j, row)
        f = np.empty((1 << n, r))
        f[0] = 0.0
        choice = np.empty((1 << n, r), dtype=np.int8)
        W = np.zeros((1, n, r))  # W(T, :) for the subsets T of the previous layer
        for k, (masks, members, preds) in enumerate(layers, start=1):
            b = masks.size
            W_new = np.empty((b, n, r))
            end = 0
            for low in range(n - k + 1):
                count = math.comb(n - low - 1, k - 1)
                np.add(W[W.shape[0] - count :], Ct[low], out=W_new[end : end + count])
                end += count
            W = W_new
            rows = np.arange(b)
            best = f[preds[:, 0]] + W[rows, members[:, 0]]
            slot = np.zeros((b, r), dtype=np.int8)
            for j in range(1, k):
                v = f[preds[:, j]] + W[rows, members[:, j]]
                up = v > best
                np.maximum(best, v, out=best)
                np.maximum(slot, up * np.int8(j), out=slot)
            f[masks] = best
            choice[masks] = np.take_along_axis(members, slot.astype(np.intp), axis=1)
        del W
        T = np.full(r, full, dtype=np.int64)
        cols = np.arange(r)
        for p in range(n - 1, -1, -1):
            j = choice[T, cols].astype(np.int64)
            out[s : s + r, p] = j
            T ^= np.int64(1) << j
    return out


# --------------------------------------------------------------------------------
# Heuristic: weighted Borda / Copeland start, then insertion local search


def _start(C: np.ndarray) -> np.ndarray:
    """The better of weighted Borda and Copeland (Borda, then lower id, breaking
    Copeland ties) for each row."""
    R, n, _ = C.shape
    D = C - C.transpose(0, 2, 1)
    borda = D.sum(axis=2)
    copeland = (D > 0).sum(axis=2)
    ids = np.broadcast_to(np.arange(n), (R, n))
    o_borda = np.argsort(-borda, axis=1, kind="stable")
    o_cope = np.lexsort((ids, -borda, -copeland), axis=1)
    better = _objective(C, o_cope) > _objective(C, o_borda)
    return np.where(better[:, None], o_cope, o_borda)


def _insertion_search(D: np.ndarray, order: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """Local search with insertion moves until no move gains more than ``tol``.

    Each round evaluates every insertion move of every active row at once. Taking
    the item at position ``p`` out and inserting it at position ``q`` changes the
    objective by ``sum_{q <= b < p} A[p, b]`` (q < p) or ``-sum_{p < b <= q} A[p, b]``
    (q > p), where ``A = D[o][:, o]`` is ``D = C - C^T`` permuted by the ordering
    ``o``: one cumulative sum along each row of ``A`` gives all n^2 moves in O(n^2).
    Each item's best move (leftmost target among ties) is a candidate; the round
    applies the improving candidates whose spans ``[min(p, q), max(p, q)]`` overlap
    no better candidate's. Moves with disjoint spans reorder disjoint sets of pairs,
    so their gains add up, and the best move of the row is always among them. Rows
    leave the loop when no move improves.
    """
    order = order.copy()
    R, n = order.shape
    idx = np.arange(n)
    later = idx[None, :] > idx[:, None]  # [p, p']: p' > p
    active = np.arange(R)
    for _ in range(n * n + 1):  # each round gains > tol; the bound is never reached
        o = order[active]
        a = active.size
        # cs[:, p, c] = sum_{b < c} A[p, b]. Moving p to q < p gains cs[p, p] -
        # cs[p, q]; to q > p, cs[p, p] - cs[p, q + 1]. As A[p, p] = 0, cs[p, p] =
        # cs[p, p + 1], so the best move of p is the minimum of cs[p, :] over all
        # n + 1 columns (first minimum: leftmost target), at q = c (c <= p) or
        # q = c - 1 (c > p).
        cs = np.zeros((a, n, n + 1))
        np.cumsum(
            D[active[:, None, None], o[:, :, None], o[:, None, :]],
            axis=2,
            out=cs[:, :, 1:],
        )
        c = np.argmin(cs, axis=2)
        gain = cs[:, idx, idx] - np.take_along_axis(cs, c[:, :, None], axis=2)[:, :, 0]
        q = c - (c > idx)
        del cs
        improving = gain > tol[active, None]
        keep = improving.any(axis=1)
        if not keep.all():
            active, o, q, gain, improving = (
                x[keep] for x in (active, o, q, gain, improving)
            )
            if active.size == 0:
                break
        a = active.size
        lo, hi = np.minimum(idx, q), np.maximum(idx, q)
        overlap = (lo[:, :, None] <= hi[:, None, :]) & (
            lo[:, None, :] <= hi[:, :, None]
        )
        g, g2 = gain[:, :, None], gain[:, None, :]
        better = (g2 > g) | ((g2 == g) & ~later)  # [p, p']: p' beats p (p' != p)
        better[:, idx, idx] = False
        accepted = improving & ~(overlap & better & improving[:, None, :]).any(axis=2)
        # The new ordering as a source position for each position: a move p -> q
        # shifts the items strictly between by one toward p and puts o[p] at q.
        rows, p = np.nonzero(accepted)
        qa = q[rows, p]
        right = qa > p
        base = rows * (n + 1)
        marks = np.concatenate(
            [base + np.where(right, p, qa + 1), base + np.where(right, qa, p + 1)]
        )
        weights = np.concatenate(
            [np.where(right, 1, -1), np.where(right, -1, 1)]
        ).astype(np.float64)
        shift = np.bincount(marks, weights, minlength=a * (n + 1)).reshape(a, n + 1)
        src = idx + np.cumsum(shift[:, :n], axis=1).astype(np.int64)
        src[rows, qa] = p
        order[active] = np.take_along_axis(o, src, axis=1)
    return order


def _ils_rounds(n: int) -> int:
    """Rounds of iterated local search: 24 up to 13 items, ``320 // n_items`` above
    (16 at 20 items) and at least 3, where each round costs more and local optima
    differ less in relative value."""
    return min(_ILS_MAX_ROUNDS, max(_ILS_MIN_ROUNDS, _ILS_BUDGET // n))


def _perturb(order: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Reverse ``_ILS_KICKS`` random segments of 2 to ``_ILS_SEGMENT`` positions in
    each row."""
    R, n = order.shape
    idx = np.arange(n)
    out = order
    for _ in range(_ILS_KICKS):
        lo = rng.integers(0, n - 1, R)[:, None]
        hi = np.minimum(lo + rng.integers(1, _ILS_SEGMENT, R)[:, None], n - 1)
        src = np.where((idx >= lo) & (idx <= hi), lo + hi - idx, idx)
        out = np.take_along_axis(out, src, axis=1)
    return out


def _rank_heuristic(C: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Borda / Copeland start and insertion local search, then iterated local search:
    each round perturbs every row's best ordering (:func:`_perturb`), searches again,
    and keeps the result when it is better."""
    R, n, _ = C.shape
    if n == 1:
        return np.zeros((R, 1), dtype=np.int64)
    out = np.empty((R, n), dtype=np.int64)
    # _insertion_search holds about four (rows, n, n) float64 arrays at once.
    step = max(1, _LS_BYTES // (32 * n * n))
    for s in range(0, R, step):
        Cs = C[s : s + step]
        D = Cs - Cs.transpose(0, 2, 1)
        # Moves gaining less than rounding noise do not count (no cycling on ties).
        tol = 1e-10 * n * np.abs(D).max(axis=(1, 2))
        best = _insertion_search(D, _start(Cs), tol)
        if n >= 3:
            value = _objective(Cs, best)
            for _ in range(_ils_rounds(n)):
                cand = _insertion_search(D, _perturb(best, rng), tol)
                cand_value = _objective(Cs, cand)
                gain = cand_value > value + tol
                best[gain] = cand[gain]
                value = np.where(gain, cand_value, value)
        out[s : s + Cs.shape[0]] = best
    return out


# --------------------------------------------------------------------------------
# Exact: integer program (HiGHS through scipy.optimize.milp)


@functools.lru_cache(maxsize=8)
def _ilp_constraints(n: int) -> Any:
    from scipy.optimize import LinearConstraint
    from scipy.sparse import csr_array

    pid = np.full((n, n), -1, dtype=np.int64)
    iu, ju = np.triu_indices(n, 1)
    pid[iu, ju] = np.arange(iu.size)
    # The triples i < j < k: for each i, the pairs (j, k) with j > i, a suffix of
    # the pairs in triu order.
    first = np.searchsorted(iu, np.arange(1, n + 1))
    i = np.repeat(np.arange(n), iu.size - first)
    j = np.concatenate([iu[first[a] :] for a in range(n)])
    k = np.concatenate([ju[first[a] :] for a in range(n)])
    m = i.size
    rows = np.repeat(np.arange(m), 3)
    cols = np.stack([pid[i, j], pid[j, k], pid[i, k]], axis=1).ravel()
    vals = np.tile([1.0, 1.0, -1.0], m)
    A = csr_array((vals, (rows, cols)), shape=(m, iu.size))
    return LinearConstraint(A, np.zeros(m), np.ones(m))


def _rank_ilp(
    C: np.ndarray, time_limit: float | None, rng: np.random.Generator
) -> np.ndarray:
    from scipy.optimize import Bounds, milp

    R, n, _ = C.shape
    out = np.empty((R, n), dtype=np.int64)
    if n <= 2:
        return _rank_dp(C)
    iu, ju = np.triu_indices(n, 1)
    constraints = _ilp_constraints(n)
    bounds = Bounds(0.0, 1.0)
    integrality = np.ones(iu.size)
    options: dict[str, Any] = {"mip_rel_gap": 0.0}
    if time_limit is not None:
        options["time_limit"] = time_limit
    failed: list[int] = []
    incumbents: dict[int, np.ndarray] = {}
    for r in range(R):
        # Maximize sum_{i<j} C[i,j] x_ij + C[j,i] (1 - x_ij); milp minimizes.
        c = C[r, ju, iu] - C[r, iu, ju]
        # HiGHS's tolerances are absolute (about 1e-7): costs that small read as 0
        # and it reports an arbitrary ordering as optimal (30 of 30 random rows at a
        # scale of 1e-7). A power of two that brings the largest cost into [0.5, 1)
        # is exact and leaves the optimal orderings unchanged.
        peak = float(np.abs(c).max()) if c.size else 0.0
        if peak > 0.0:
            c = np.ldexp(c, -np.frexp(peak)[1])
        res = milp(
            c,
            constraints=constraints,
            integrality=integrality,
            bounds=bounds,
            options=options,
        )
        order = None
        if res.x is not None:
            X = np.zeros((n, n))
            x = np.round(res.x)
            X[iu, ju] = x
            X[ju, iu] = 1.0 - x
            wins = X.sum(axis=1)
            order = np.argsort(-wins, kind="stable")
            if not np.array_equal(wins[order], np.arange(n - 1, -1, -1)):
                order = None  # not transitive: cannot happen for a feasible x
        if res.status == 0 and order is not None:
            out[r] = order
        else:
            failed.append(r)
            if order is not None:
                incumbents[r] = order
    if failed:
        rows = np.asarray(failed)
        fallback = _rank_heuristic(C[rows], rng)
        for a, r in enumerate(failed):
            out[r] = fallback[a]
            if r in incumbents:
                cand = np.stack([fallback[a], incumbents[r]])
                obj = _objective(np.broadcast_to(C[r], (2, n, n)), cand)
                if obj[1] > obj[0]:
                    out[r] = incumbents[r]
        within = f" within time_limit = {time_limit:g} s" if time_limit else ""
        _warnings.warn(
            f"The integer program was not solved to optimality{within} on "
            f"{len(failed)} of {R} rows; those rows hold the better of the "
            "heuristic's ordering and the solver's best one found, which may not be "
            "optimal.",
            ConvergenceWarning,
            stacklevel=3,
        )
    return out


# --------------------------------------------------------------------------------
# Public entry point


def kemeny_rank(
    C: Any,
    method: str = "auto",
    *,
    seed: None | int | np.random.Generator = 0,
    time_limit: float | None = None,
) -> np.ndarray:
    """Orderings that maximize the weighted Kemeny objective, row by row.

    For each row, find the ordering (best first) maximizing
    ``sum over pairs with i placed before j of C[i, j]`` (see
    :func:`kemeny_objective`).

    Parameters
    ----------
    C : array-like of float of shape (n_rows, n_items, n_items) or (n_items, n_items)
        ``C[r, i, j]`` is the weight of the evidence that item ``i`` comes before
        item ``j`` in row ``r`` (e.g. the weighted count of votes putting ``i``
        before ``j``); the diagonal is ignored. Any finite real values: a row with
        an entry larger than ``2**60`` in magnitude is first divided by a power of
        two (exact, and the optimal orderings do not depend on a positive scale),
        so that the decoders' sums cannot overflow.
    method : {"auto", "exact_dp", "ilp", "heuristic"}, default="auto"
        - ``"exact_dp"``: exact dynamic program over the subsets of items, O(2^n n)
          time and O(2^n) memory per row, vectorized across rows (about 0.25 ms per
          row at 12 items, 10 ms at 16, 0.4 s at 20). At most 20 items.
        - ``"ilp"``: exact integer program (binary ``x_ij`` = "i before j" for
          ``i < j`` with the transitivity constraints ``0 <= x_ij + x_jk - x_ik <=
          1``) solved by HiGHS through :func:`scipy.optimize.milp` with a zero
          optimality gap, one solve per row. Suited to moderate sizes (up to about
          50 items, under a second per row on consistent evidence; its time grows
          quickly with the size and the amount of conflict). A row whose solve hits
          ``time_limit`` (or fails) gets the better of the heuristic's ordering and
          the solver's best one found, and a
          :class:`~snorkel_structured.exceptions.ConvergenceWarning` says on how
          many rows.
        - ``"heuristic"``: start from the better of weighted Borda (items by
          decreasing row sum of ``C - C^T``) and Copeland (items by decreasing
          number of ``j`` with ``C[i, j] > C[j, i]``, Borda breaking ties), then
          local search with insertion moves (take one item out, insert it at its
          best position) until no move improves: every round evaluates all n^2
          moves of a row in O(n^2) and applies the best one together with the other
          improving moves whose spans do not overlap a better one. Then iterated
          local search: 24 rounds up to 13 items, ``max(3, 320 // n_items)`` above,
          each reversing two random short segments of every row's best ordering
          (drawn from ``seed``), searching again, and keeping the result when it is
          better. Vectorized across rows; about 5 ms per row at 100 items. Not
          guaranteed optimal: on noisy votes, typically within 0.05% of the optimum
          and a few rows in a thousand above 0.5% at 8-12 items.
        - ``"auto"``: ``"exact_dp"`` up to 12 items, ``"heuristic"`` above. The
          integer program is used only on request, since its time is unpredictable.
    seed : None, int or numpy.random.Generator, default=0
        Randomness of the heuristic's iterated local search (also used by
        ``"ilp"``'s fallback rows); ``"exact_dp"`` does not use it.
    time_limit : float, optional
        Seconds allowed to each row's integer program (``method="ilp"`` only; the
        other methods ignore it). None: no limit.

    Returns
    -------
    orderings : ndarray of int64 of shape (n_rows, n_items), or (n_items,) for 2-D ``C``
        Item ids, best first. Deterministic: the same ``C`` and int ``seed`` give
        the same orderings (the heuristic draws one random stream for all rows, so
        a row's ordering may change when other rows are added to the batch). Among
        tied optima, ``"exact_dp"`` returns the one whose reversal is
        lexicographically largest: the last position holds the highest id that
        ends some optimal ordering, the position before it the highest id found
        there in an optimal ordering with that last item, and so on back to the
        front. When all orderings tie (e.g. a zero ``C``) this is
        ``0, 1, ..., n_items - 1``, but in general it is not the lexicographically
        smallest optimum (for ``C = [[0, 1, 1], [2, 0, 0], [0, 1, 0]]`` the optima
        are ``[0, 2, 1]``, ``[1, 0, 2]`` and ``[2, 1, 0]``, and it returns
        ``[1, 0, 2]``). ``"ilp"`` returns whichever optimum the solver finds.

    Raises
    ------
    ValueError
        If ``C`` is not a finite real square matrix or batch of them, ``method`` is
        unknown, ``"exact_dp"`` gets more than 20 items, ``time_limit`` is not a
        positive number, or ``seed`` is a negative int.
    TypeError
        If ``seed`` is not None, an int or a Generator.

    Examples
    --------
    >>> C = [[0, 3, 1], [2, 0, 5], [4, 0, 0]]
    >>> kemeny_rank(C, "exact_dp").tolist()
    [1, 2, 0]
    """
    Cv, single = _check_C(C)
    if not isinstance(method, str) or method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}; got {method!r}.")
    limit = _check_time_limit(time_limit)
    rng = check_seed(seed)
    n = Cv.shape[-1]
    if method == "auto":
        method = "exact_dp" if n <= AUTO_EXACT_MAX_ITEMS else "heuristic"
    if method == "exact_dp" and n > DP_MAX_ITEMS:
        raise ValueError(
            f"method='exact_dp' handles at most {DP_MAX_ITEMS} items (2^n states per "
            f"row); got n_items = {n}. Use method='ilp' (exact, time varies) or "
            "'heuristic'."
        )
    if Cv.shape[0] == 0:  # a 3-D batch of no rows
        return np.empty((0, n), dtype=np.int64)
    Cv = _rescale_large_rows(Cv)  # in place: Cv is _check_C's copy
    if method == "exact_dp":
        out = _rank_dp(Cv)
    elif method == "ilp":
        out = _rank_ilp(Cv, limit, rng)
    else:
        out = _rank_heuristic(Cv, rng)
    return out[0] if single else out
