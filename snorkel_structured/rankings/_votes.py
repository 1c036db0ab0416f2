"""Ranking votes over any number of items, stored without enumerating S_n.

A vote array ``V`` has shape (n_rows, n_lfs, n_items): ``V[r, a]`` is LF ``a``'s
ordering of row ``r``'s items (row-local ids ``0..n_items-1``), best first, padded
with -1 after its last ranked item. A top-k vote lists k items; the items it does
not list come after all listed ones, unordered among themselves. A vote of all -1 is
an abstain. The pairs a vote orders are therefore: every pair with at least one
listed item. Partial orders that are not top-k lists are given directly in the
pairwise form below.

The pairwise form ``S`` has shape (n_rows, n_lfs, n_pairs), int8, over the pairs
``(i, j)``, ``i < j``, of :func:`pair_index` (``numpy.triu_indices(n_items, 1)``
order): +1 when the vote puts ``i`` before ``j``, -1 when it puts ``j`` before ``i``,
0 when it leaves the pair unordered (an abstain on that pair).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "check_orderings",
    "check_pairwise",
    "check_votes",
    "kendall_tau_distance",
    "n_pairs",
    "pair_index",
    "pairwise_votes",
    "vote_positions",
]


def n_pairs(n_items: int) -> int:
    """Number of unordered item pairs, ``n_items (n_items - 1) / 2``."""
    return n_items * (n_items - 1) // 2


def pair_index(n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs ``(i, j)``, ``i < j``, in the order of the pairwise form's last axis."""
    return np.triu_indices(n_items, 1)


def _as_int_array(
    V: Any, name: str, ndim: int, n_items: int | None = None, *, full: bool = False
) -> np.ndarray:
    """``V`` as int64 item ids (``n_items=None``: ``V.shape[-1]`` items; ``full``:
    no -1 padding), after checks that the cast cannot hide: dtype, shape, integral
    values, and values beyond the int64 range (which would wrap)."""
    fix = (
        "every ordering must list all n_items items"
        if full
        else "pad top-k lists with -1 at the end to n_items slots"
    )
    try:
        arr = np.asarray(V)
    except ValueError:  # numpy's "inhomogeneous shape" for ragged sequences
        raise ValueError(
            f"{name} is ragged (its lists have unequal lengths); {fix}."
        ) from None
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise ValueError(
            f"{name} must be an integer array of item ids; got dtype {arr.dtype} "
            f"(if its lists have unequal lengths, {fix})."
        )
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions; got shape {arr.shape}.")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(
                f"{name} holds non-integer or non-finite values; pass item ids "
                "0..n_items-1" + ("." if full else " and -1 for padding.")
            )
    big = _beyond_int64(arr)
    if big is not None:
        n = arr.shape[-1] if n_items is None else n_items
        raise ValueError(
            f"{name}{big[0]} = {big[1]} is not an item id in 0..{n - 1}"
            + ("." if full else " nor -1 (padding).")
        )
    return arr.astype(np.int64, copy=False)


def _beyond_int64(arr: np.ndarray) -> tuple[list[int], int] | None:
    """The first entry (index, exact value) of an unsigned or float array that
    int64 cannot hold (a cast would wrap it, e.g. ``2**64 - 1`` to -1), or None."""
    if np.issubdtype(arr.dtype, np.unsignedinteger):
        bad = arr > np.uint64(np.iinfo(np.int64).max)
    elif np.issubdtype(arr.dtype, np.floating):
        bad = (arr >= 2.0**63) | (arr < -(2.0**63))
    else:
        return None
    if not bad.any():
        return None
    where = tuple(int(x) for x in np.argwhere(bad)[0])
    return list(where), int(arr[where])


def _check_lists(V: np.ndarray, name: str, n_items: int, *, full: bool) -> None:
    """Each list of the last axis: ids in range, no repeats, -1 only as a suffix."""
    if V.shape[-1] != n_items:
        raise ValueError(
            f"{name} has {V.shape[-1]} slots per list; expected n_items = {n_items} "
            "(pad top-k lists with -1)."
        )
    bad = (V < -1) | (V >= n_items)
    if full:
        bad |= V < 0
    if bad.any():
        where = tuple(int(x) for x in np.argwhere(bad)[0])
        raise ValueError(
            f"{name}{list(where)} = {int(V[where])} is not an item id in "
            f"0..{n_items - 1}" + ("." if full else " nor -1 (padding).")
        )
    listed = V >= 0
    # -1 must only pad the end: once a slot is -1, every later slot is -1.
    after_gap = listed[..., 1:] & ~listed[..., :-1]
    if after_gap.any():
        where = tuple(int(x) for x in np.argwhere(after_gap)[0])
        raise ValueError(
            f"{name}{list(where[:-1])} lists an item after a -1; pad top-k lists "
            "with -1 at the end only."
        )
    s = np.sort(np.where(listed, V, -1 - np.arange(n_items)), axis=-1)
    dup = s[..., 1:] == s[..., :-1]
    if dup.any():
        where = tuple(int(x) for x in np.argwhere(dup)[0])
        raise ValueError(
            f"{name}{list(where[:-1])} lists item {int(s[where])} twice; a vote is "
            "an ordering of distinct items."
        )


def check_votes(V: Any, n_items: int | None = None) -> np.ndarray:
    """Validate a vote array (n_rows, n_lfs, n_items) of item ids padded with -1.

    Returns
    -------
    V : ndarray of int64 of shape (n_rows, n_lfs, n_items)
    """
    arr = _as_int_array(V, "V", 3, n_items)
    if arr.shape[1] < 1 or arr.shape[2] < 2:
        raise ValueError(
            f"V must have at least 1 LF and 2 items; got shape {arr.shape} "
            "(n_rows, n_lfs, n_items)."
        )
    _check_lists(arr, "V", arr.shape[2] if n_items is None else n_items, full=False)
    return arr


def check_orderings(Y: Any, n_items: int | None = None, name: str = "Y") -> np.ndarray:
    """Validate full orderings (n_rows, n_items), each a permutation of the items."""
    arr = _as_int_array(Y, name, 2, n_items, full=True)
    _check_lists(arr, name, arr.shape[1] if n_items is None else n_items, full=True)
    return arr


_PAIR_VALUES = (
    "pass signed pair votes in {-1, 0, 1}: +1 (i before j), -1 (j before i), "
    "0 (unordered)"
)


def _as_signed_pairs(S: Any) -> np.ndarray:
    """``S`` as an integer or integral-float array of 3 dimensions (not yet
    range-checked; the caller checks -1 <= S <= 1 before any cast)."""
    try:
        arr = np.asarray(S)
    except ValueError:  # numpy's "inhomogeneous shape" for ragged sequences
        raise ValueError(
            "S is ragged (its votes have unequal lengths); every vote must have "
            "n_items (n_items - 1) / 2 entries, 0 for unordered pairs."
        ) from None
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise ValueError(
            f"S must be an integer array of signed pair votes; got dtype "
            f"{arr.dtype}: {_PAIR_VALUES}."
        )
    if arr.ndim != 3:
        raise ValueError(f"S must have 3 dimensions; got shape {arr.shape}.")
    if np.issubdtype(arr.dtype, np.floating) and (
        not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr))
    ):
        raise ValueError(f"S holds non-integer or non-finite values; {_PAIR_VALUES}.")
    return arr


def check_pairwise(S: Any, n_items: int) -> np.ndarray:
    """Validate a pairwise vote array (n_rows, n_lfs, n_pairs) with values in {-1, 0, 1}."""
    arr = _as_signed_pairs(S)
    if arr.shape[2] != n_pairs(n_items):
        raise ValueError(
            f"S has {arr.shape[2]} pairs per vote; {n_items} items have "
            f"{n_pairs(n_items)} (numpy.triu_indices(n_items, 1) order)."
        )
    bad = (arr < -1) | (arr > 1)  # before the cast: int8 would wrap e.g. 255 to -1
    if bad.any():
        where = tuple(int(x) for x in np.argwhere(bad)[0])
        raise ValueError(
            f"S{list(where)} = {int(arr[where])} is not a signed pair vote; "
            f"{_PAIR_VALUES}."
        )
    return arr.astype(np.int8)  # a copy, as before: never a view of the input


def vote_positions(V: np.ndarray) -> np.ndarray:
    """Each item's position in each vote; unlisted items share the position k.

    Parameters
    ----------
    V : ndarray of int of shape (..., n_items)
        Orderings padded with -1 (validated).

    Returns
    -------
    pos : ndarray of int8 (int16 from 127 items) of shape (..., n_items)
        ``pos[..., i]`` is item ``i``'s position (0 = first) when listed, else the
        number of listed items k. An abstain gives every item position 0.
    """
    n_items = V.shape[-1]
    dtype = np.int8 if n_items < 127 else np.int16
    k = (V >= 0).sum(axis=-1, keepdims=True)
    # One spare slot takes the padding's writes, so a single scatter places every
    # listed item and leaves the unlisted ones at k.
    pos = np.empty(V.shape[:-1] + (n_items + 1,), dtype=dtype)
    pos[...] = k.astype(dtype)
    np.put_along_axis(
        pos, np.where(V < 0, n_items, V), np.arange(n_items, dtype=dtype), axis=-1
    )
    return pos[..., :n_items]


def pairwise_votes(V: Any, n_items: int | None = None) -> np.ndarray:
    """The pairwise form (n_rows, n_lfs, n_pairs) of a vote array (see module doc).

    Parameters
    ----------
    V : array-like of int of shape (n_rows, n_lfs, n_items)
        Orderings of item ids, best first, padded with -1 (top-k lists, abstains).

    Returns
    -------
    S : ndarray of int8 of shape (n_rows, n_lfs, n_items (n_items - 1) / 2)
    """
    return signed_pairs(check_votes(V, n_items))


def signed_pairs(V: np.ndarray) -> np.ndarray:
    """:func:`pairwise_votes` of an already validated vote array."""
    pos = vote_positions(V)
    i, j = pair_index(V.shape[-1])
    return np.sign(pos[..., j] - pos[..., i]).astype(np.int8)


def kendall_tau_distance(
    pred: Any, truth: Any, *, normalize: bool = True
) -> np.ndarray:
    """Kendall's tau distance between full orderings, row by row.

    Parameters
    ----------
    pred, truth : array-like of int of shape (n_rows, n_items)
        Orderings (best first).
    normalize : bool, default=True
        Divide by the number of pairs, so that 0 is equal and 1 reversed.

    Returns
    -------
    d : ndarray of float64 of shape (n_rows,)
        The number (or fraction) of item pairs the two orderings put in opposite order.
    """
    P = check_orderings(pred, name="pred")
    T = check_orderings(truth, P.shape[1], name="truth")
    if P.shape[0] != T.shape[0]:
        raise ValueError(
            f"pred has {P.shape[0]} rows and truth {T.shape[0]}; they must match."
        )
    n_items = P.shape[1]
    i, j = pair_index(n_items)
    pp, pt = vote_positions(P), vote_positions(T)
    # int16 differences; the product's sign is what counts, so compare signs.
    discord = np.sign(pp[:, j] - pp[:, i]) != np.sign(pt[:, j] - pt[:, i])
    d = discord.sum(axis=1).astype(np.float64)
    return d / max(n_pairs(n_items), 1) if normalize else d
