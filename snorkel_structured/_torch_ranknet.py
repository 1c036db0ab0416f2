"""The RankNet pair loss for networks that score a row's items, noise-aware.

For rankings of any length (:class:`~snorkel_structured.RankingLabelModel`) each item
pair of a row is a binary task, ``i`` before ``j`` or not, and
``RankingLabelModel.loss_weights`` gives its pseudolabel and the two entries of the
binary Q^-1 row. :func:`pair_weights_tensor` lays that DataFrame out as
(n_rows, n_pairs) tensors, and :class:`RankNetLoss` / :func:`ranknet_loss` train a
network on them. Import these from :mod:`snorkel_structured.torch`, which re-exports
them beside the Q^-1 label loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F

from snorkel_structured._torch_reduction import (
    check_float_tensor,
    check_reduction,
    reduce_rows,
)

__all__ = [
    "PAIR_COLUMNS",
    "POSTERIOR",
    "PairWeights",
    "RankNetLoss",
    "pair_weights_tensor",
    "ranknet_loss",
]

PAIR_COLUMNS = (
    "row",
    "item_i",
    "item_j",
    "pseudolabel",
    "weight_pseudolabel",
    "weight_flipped",
)
POSTERIOR = "p_before"


class PairWeights(NamedTuple):
    """Per-pair training targets for a network scoring items; see :func:`pair_weights_tensor`.

    Pairs run over ``numpy.triu_indices(n_items, 1)``: (0, 1), (0, 2), ..., (n-2, n-1).

    Attributes
    ----------
    targets : Tensor of shape (n_rows, n_pairs)
        Each pair's pseudolabel: +1 if item i comes before item j, -1 if after.
    weights : Tensor of shape (n_rows, n_pairs, 2)
        ``[weight_pseudolabel, weight_flipped]`` of each pair (both 0 for pairs no
        LF orders).
    p_before : Tensor of shape (n_rows, n_pairs) or None
        The posterior P(i before j), for the soft loss; None if the DataFrame has no
        ``"p_before"`` column.
    rows : ndarray of int64 of shape (n_rows,)
        The DataFrame's ``row`` id of each tensor row, ascending: features
        ``X[rows]`` line up with the tensors.
    """

    targets: torch.Tensor
    weights: torch.Tensor
    p_before: torch.Tensor | None
    rows: np.ndarray


def _int_column(frame: pd.DataFrame, name: str) -> np.ndarray:
    col = frame[name]
    if pd.api.types.is_bool_dtype(col) or not pd.api.types.is_numeric_dtype(col):
        raise ValueError(f"column {name!r} must hold integers; got dtype {col.dtype}.")
    vals = col.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(vals) | (vals != np.round(vals))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"column {name!r} must hold integers; line {k} (index "
            f"{frame.index[k]!r}) holds {vals[k]!r}."
        )
    return vals.astype(np.int64)


def _float_columns(frame: pd.DataFrame, names: Sequence[str]) -> np.ndarray:
    for name in names:
        col = frame[name]
        if pd.api.types.is_bool_dtype(col) or not pd.api.types.is_numeric_dtype(col):
            raise ValueError(f"column {name!r} must be numeric; got dtype {col.dtype}.")
    vals = frame[list(names)].to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(vals).all(axis=1)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"columns {list(names)} must be finite; line {k} (index "
            f"{frame.index[k]!r}) holds NaN or inf (loss_weights never writes NaN; a "
            "join or reindex may have)."
        )
    return vals


def pair_weights_tensor(
    frame: pd.DataFrame,
    n_items: int | None = None,
    *,
    dtype: torch.dtype = torch.float32,
    device: Any = None,
) -> PairWeights:
    """A ranking ``loss_weights`` DataFrame as (n_rows, n_pairs) tensors.

    Parameters
    ----------
    frame : DataFrame
        The output of ``RankingLabelModel.loss_weights``: one line per (row, pair)
        with columns ``row``, ``item_i``, ``item_j`` (i < j), ``pseudolabel`` (+1 / -1),
        ``weight_pseudolabel``, ``weight_flipped`` and optionally ``p_before``. The
        lines may come in any order, and rows may be a subset (e.g. a training
        split), but each row present must hold each of its pairs exactly once.
    n_items : int, optional
        Items per row. Default: ``max(item_j) + 1``. Pass it to catch frames from
        which the last item's pairs were dropped.
    dtype : torch.dtype, default=torch.float32
    device : torch.device or str, optional

    Returns
    -------
    PairWeights
        Named tuple ``(targets, weights, p_before, rows)``: targets (n_rows, n_pairs)
        in {-1, +1}; weights (n_rows, n_pairs, 2) ``[weight_pseudolabel,
        weight_flipped]``; p_before (n_rows, n_pairs) or None; rows, the frame's row
        id of each tensor row (ascending). Pairs in ``numpy.triu_indices(n_items, 1)``
        order, the order :func:`ranknet_loss` expects.

    Raises
    ------
    ValueError
        If ``frame`` is not a DataFrame, is empty or lacks a column; if ids are not
        integers, ``item_i >= item_j`` or an item is outside ``0..n_items-1``; if a
        row holds a pair twice or misses one; if a pseudolabel is not +1 or -1, a
        weight is not finite, or ``p_before`` is outside [0, 1].

    Examples
    --------
    >>> import numpy as np, snorkel_structured as ss
    >>> from snorkel_structured.rankings.mallows import sample_mallows
    >>> from snorkel_structured.torch import pair_weights_tensor
    >>> space = ss.Rankings(5)
    >>> Y = space.random_point(200, seed=0)
    >>> V = np.stack([sample_mallows(Y, t, seed=a)
    ...               for a, t in enumerate([0.4, 0.7, 1.0])], axis=1)
    >>> lm = ss.RankingLabelModel(space, seed=0).fit(V)
    >>> pw = pair_weights_tensor(lm.loss_weights(V))
    >>> tuple(pw.targets.shape), tuple(pw.weights.shape), tuple(pw.p_before.shape)
    ((200, 10), (200, 10, 2), (200, 10))
    """
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(
            "frame must be the DataFrame RankingLabelModel.loss_weights returns; got "
            f"{type(frame).__name__}."
        )
    missing = [c for c in PAIR_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(
            f"the pair loss-weights DataFrame lacks column(s) {missing}; expected "
            f"{list(PAIR_COLUMNS)} (and optionally {POSTERIOR!r}), as "
            "RankingLabelModel.loss_weights returns."
        )
    if len(frame) == 0:
        raise ValueError("the pair loss-weights DataFrame has no lines.")
    row = _int_column(frame, "row")
    i = _int_column(frame, "item_i")
    j = _int_column(frame, "item_j")
    if n_items is None:
        n = int(j.max()) + 1
        if n < 2:
            raise ValueError(
                f"item_j is at most {n - 1}: there is no pair of items (n_items >= 2)."
            )
    else:
        if (
            isinstance(n_items, bool)
            or not isinstance(n_items, (int, np.integer))
            or n_items < 2
        ):
            raise ValueError(f"n_items must be an int >= 2; got {n_items!r}.")
        n = int(n_items)
    unordered = i >= j
    if unordered.any():
        k = int(np.flatnonzero(unordered)[0])
        raise ValueError(
            f"each line must have item_i < item_j; line {k} (index "
            f"{frame.index[k]!r}) has item_i={i[k]}, item_j={j[k]}."
        )
    outside = (i < 0) | (j >= n)
    if outside.any():
        k = int(np.flatnonzero(outside)[0])
        raise ValueError(
            f"items must be in 0..{n - 1} (n_items={n}); line {k} (index "
            f"{frame.index[k]!r}) has item_i={i[k]}, item_j={j[k]}."
        )
    n_pairs = n * (n - 1) // 2
    pair = i * (2 * n - i - 1) // 2 + (j - i - 1)  # position in triu_indices(n, 1)
    rows, r = np.unique(row, return_inverse=True)
    key = r * n_pairs + pair
    uniq, first, counts = np.unique(key, return_index=True, return_counts=True)
    if uniq.size != key.size:
        k = int(first[np.flatnonzero(counts > 1)[0]])
        raise ValueError(
            f"row {row[k]} holds pair ({i[k]}, {j[k]}) {int(counts.max())} times; each "
            "row must hold each pair once (a concatenation may have repeated lines)."
        )
    per_row = np.bincount(r, minlength=rows.size)
    if np.any(per_row != n_pairs):
        b = int(np.flatnonzero(per_row != n_pairs)[0])
        raise ValueError(
            f"row {rows[b]} holds {per_row[b]} of its {n_pairs} pairs (n_items={n}); "
            "every row must hold all of its pairs. Filter the frame by whole rows "
            "(frame[frame.row.isin(ids)]), and pass n_items if it is not "
            "max(item_j) + 1."
        )
    z = _float_columns(frame, ["pseudolabel"])[:, 0]
    bad = (z != 1) & (z != -1)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"pseudolabel must be +1 (i before j) or -1; line {k} (index "
            f"{frame.index[k]!r}) holds {z[k]!r}."
        )
    W = _float_columns(frame, ["weight_pseudolabel", "weight_flipped"])
    T = np.empty(rows.size * n_pairs)
    T[key] = z
    Wt = np.empty((rows.size * n_pairs, 2))
    Wt[key] = W
    P = None
    if POSTERIOR in frame.columns:
        p = _float_columns(frame, [POSTERIOR])[:, 0]
        bad = (p < 0) | (p > 1)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{POSTERIOR} must be a probability in [0, 1]; line {k} (index "
                f"{frame.index[k]!r}) holds {p[k]!r}."
            )
        Pa = np.empty(rows.size * n_pairs)
        Pa[key] = p
        P = torch.tensor(Pa.reshape(rows.size, n_pairs), dtype=dtype, device=device)
    return PairWeights(
        targets=torch.tensor(T.reshape(rows.size, n_pairs), dtype=dtype, device=device),
        weights=torch.tensor(
            Wt.reshape(rows.size, n_pairs, 2), dtype=dtype, device=device
        ),
        p_before=P,
        rows=rows.astype(np.int64),
    )


def _pair_tensor(
    x: Any, name: str, shape: tuple[int, ...], like: torch.Tensor
) -> torch.Tensor:
    t = torch.as_tensor(x, dtype=like.dtype, device=like.device)
    if tuple(t.shape) != shape:
        raise ValueError(
            f"{name} must have shape {shape} (n_rows, n_pairs"
            f"{', 2' if len(shape) == 3 else ''}) to match scores of shape "
            f"{tuple(like.shape)}, pairs in numpy.triu_indices(n_items, 1) order; got "
            f"{tuple(t.shape)}. pair_weights_tensor builds them from a loss_weights "
            "DataFrame."
        )
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} must be finite; got NaN or inf.")
    return t


def _ranknet(
    scores: torch.Tensor,
    targets: Any,
    weights: Any,
    soft: Any,
    reduction: str,
    clip: float | None,
) -> torch.Tensor:
    check_float_tensor(scores, "scores", "(n_rows, n_items)")
    if scores.ndim != 2 or scores.shape[1] < 2:
        raise ValueError(
            "scores must have shape (n_rows, n_items) with n_items >= 2 (one score per "
            f"item, higher = earlier); got {tuple(scores.shape)}."
        )
    n_rows, n = scores.shape
    shape = (n_rows, n * (n - 1) // 2)
    if targets is None and soft is None:
        raise ValueError("targets may be None only with soft= (the soft loss).")
    active = None
    t = None
    if targets is not None:
        t = _pair_tensor(targets, "targets", shape, scores)
        if not ((t == 1) | (t == -1) | (t == 0)).all():
            raise ValueError(
                "targets must hold +1 (i before j), -1 (j before i) or 0 (skip the "
                "pair)."
            )
        active = t != 0
    w = None
    if weights is not None:
        w = _pair_tensor(weights, "weights", (*shape, 2), scores)
        voted = (w != 0).any(dim=2)
        active = voted if active is None else active & voted
    idx_i, idx_j = (
        torch.as_tensor(a, device=scores.device) for a in np.triu_indices(n, 1)
    )
    # > 0: the network puts i first (index_select: far faster than fancy indexing)
    s = scores.index_select(1, idx_i) - scores.index_select(1, idx_j)
    if soft is not None:
        p = _pair_tensor(soft, "soft", shape, scores)
        if ((p < 0) | (p > 1)).any():
            raise ValueError("soft must hold probabilities P(i before j) in [0, 1].")
        pair = p * F.softplus(-s) + (1 - p) * F.softplus(s)
    else:
        assert t is not None
        zs = t * s
        pair = F.softplus(-zs)
        if w is not None:
            pair = w[..., 0] * pair + w[..., 1] * F.softplus(zs)
    if active is not None:
        pair = torch.where(active, pair, torch.zeros_like(pair))
    return reduce_rows(pair.sum(dim=1), reduction, clip)


def ranknet_loss(
    scores: torch.Tensor,
    targets: Any,
    weights: Any = None,
    *,
    soft: Any = None,
    reduction: str = "mean",
    clip: float | None = None,
) -> torch.Tensor:
    """Pairwise RankNet loss of item scores, noise-aware; see :class:`RankNetLoss`.

    Parameters
    ----------
    scores : Tensor of shape (n_rows, n_items)
        The network's score of each item; higher = earlier in the ranking.
    targets : Tensor or array-like of shape (n_rows, n_pairs), or None
        Each pair's order z: +1 (i before j), -1 (j before i), or 0 to skip the pair;
        pairs in ``numpy.triu_indices(n_items, 1)`` order
        (:func:`pair_weights_tensor`). May be None with ``soft``.
    weights : Tensor or array-like of shape (n_rows, n_pairs, 2), optional
        ``[weight_pseudolabel, weight_flipped]`` per pair: the corrected loss
        ``w[0] ell(z) + w[1] ell(-z)``. Pairs with both weights 0 contribute 0. None:
        plain RankNet on ``targets``.
    soft : Tensor or array-like of shape (n_rows, n_pairs), optional
        P(i before j) (``p_before``): the soft RankNet cross-entropy
        ``-(p log sig(s) + (1 - p) log sig(-s))`` instead. ``weights`` and zero
        ``targets`` then only select the pairs (those with a nonzero weight and a
        nonzero target); their values are not used.
    reduction : {"mean", "sum", "none"}, default="mean"
        Over rows, each row's loss being the sum over its pairs. The mean of an empty
        batch is 0 (with a zero gradient), where ``torch.nn.functional`` returns NaN.
    clip : float, optional
        Clamp each row's loss below at ``clip`` (biased). None: the unbiased loss.

    Returns
    -------
    loss : Tensor of shape () or (n_rows,) with ``reduction="none"``

    Examples
    --------
    >>> import torch
    >>> from snorkel_structured.torch import ranknet_loss
    >>> scores = torch.tensor([[1.0, 0.0]])  # item 0 first, margin 1
    >>> round(ranknet_loss(scores, [[1]]).item(), 4)  # softplus(-1)
    0.3133
    >>> w = [[[4 / 3, -1 / 3]]]  # q = 0.8: q / (2q - 1), -(1 - q) / (2q - 1)
    >>> round(ranknet_loss(scores, [[1]], w).item(), 4)  # (4 softplus(-1) - softplus(1)) / 3
    -0.0201
    >>> round(ranknet_loss(scores, None, soft=[[0.5]]).item(), 4)
    0.8133
    """
    check_reduction(reduction, clip)
    return _ranknet(scores, targets, weights, soft, reduction, clip)


class RankNetLoss(torch.nn.Module):
    """Noise-aware RankNet loss for a network that scores each row's items.

    For a row with item scores ``s_1..s_n`` (higher = earlier), pair (i, j), i < j,
    has score gap ``s = s_i - s_j``; the RankNet loss of the order z (+1: i before j,
    -1: j before i) is ``ell(z) = softplus(-z s) = -log sigmoid(z s)`` (Burges et al.
    2005). With the pair's pseudolabel z and the weights of
    ``RankingLabelModel.loss_weights`` the pair's loss is::

        weight_pseudolabel * ell(z) + weight_flipped * ell(-z)

    the Q^-1 correction for the symmetric pair noise ``[[q, 1 - q], [1 - q, q]]``
    (Natarajan et al. 2013). A row's loss is the sum over its pairs; pairs no LF
    orders (both weights 0) contribute 0. Without weights, the plain RankNet loss of
    the pseudolabels; with ``soft`` (the posterior ``p_before``), the soft RankNet
    cross-entropy ``-(p log sigmoid(s) + (1 - p) log sigmoid(-s))``.

    Parameters
    ----------
    reduction : {"mean", "sum", "none"}, default="mean"
        Over rows: ``"none"`` returns the (n_rows,) per-row losses. The mean of an
        empty batch is 0 (with a zero gradient), where ``torch.nn.functional``
        returns NaN: a batch with no rows adds nothing to the objective.
    clip : float, optional
        None (default): the unbiased loss. A float c: each row's loss is
        ``max(row loss, c)``; ``clip=0.0`` is the natural choice, the clean RankNet
        loss being non-negative.

    Raises
    ------
    ValueError
        For an unknown ``reduction`` or a non-finite ``clip``; in ``forward``, for
        scores that are not a floating (n_rows, n_items) tensor, targets, weights or
        soft of the wrong shape or not finite, targets outside {-1, 0, +1}, or soft
        outside [0, 1].

    Notes
    -----
    *Unbiasedness.* With ``w = (q, -(1 - q)) / (2q - 1)``, if the pseudolabel equals
    the true order z* with probability q and is flipped otherwise, then
    ``q (w_0 ell(z*) + w_1 ell(-z*)) + (1 - q) (w_0 ell(-z*) + w_1 ell(z*)) =
    ell(z*)``, and likewise for gradients. ``RankingLabelModel.loss_weights`` uses
    one q for all pairs (the mean posterior probability of the pseudolabels), so the
    correction is exact under that model only: pairs whose posterior is far from q
    are over- or under-corrected, and the pair errors of one row, decoded from one
    ranking, are not independent (the expectation is still linear, so the row sum
    stays unbiased under the per-pair model).

    *Unbounded below.* ``weight_flipped < 0`` and ``softplus(z s) ~ z s`` for large
    ``z s``, so a pair's corrected loss tends to ``-inf`` linearly as the network
    widens the gap in the pseudolabel's direction. A network that scales its scores
    lowers the objective without limit once the gaps it sets in the pseudolabels'
    direction outweigh ``q / (1 - q)`` times those against them, i.e. by fitting its
    pseudolabels. Use ``clip=0.0``, weight decay, early stopping or bounded scores.
    The soft loss is bounded below (by the posterior's entropy) and needs none.

    References
    ----------
    C. Burges, T. Shaked, E. Renshaw, A. Lazier, M. Deeds, N. Hamilton, G. Hullender.
    Learning to rank using gradient descent. ICML 2005. N. Natarajan, I. Dhillon,
    P. Ravikumar, A. Tewari. Learning with noisy labels. NeurIPS 2013.

    Examples
    --------
    >>> import torch
    >>> from snorkel_structured.torch import RankNetLoss
    >>> crit = RankNetLoss(clip=0.0)
    >>> scores = torch.zeros(1, 3, requires_grad=True)
    >>> targets = torch.tensor([[1.0, 1.0, -1.0]])  # pairs (0, 1), (0, 2), (1, 2)
    >>> w = torch.tensor([[[1.5, -0.5]] * 3])  # q = 0.75
    >>> crit(scores, targets, w)  # s = 0: each pair (1.5 - 0.5) log 2
    tensor(2.0794, grad_fn=<MeanBackward0>)
    """

    def __init__(self, *, reduction: str = "mean", clip: float | None = None) -> None:
        super().__init__()
        check_reduction(reduction, clip)
        self.reduction = reduction
        self.clip = None if clip is None else float(clip)

    def forward(
        self,
        scores: torch.Tensor,
        targets: Any,
        weights: Any = None,
        *,
        soft: Any = None,
    ) -> torch.Tensor:
        """The loss of item ``scores`` (n_rows, n_items); see :func:`ranknet_loss`.

        Returns
        -------
        loss : Tensor of shape () or (n_rows,) with ``reduction="none"``
        """
        return _ranknet(scores, targets, weights, soft, self.reduction, self.clip)

    def extra_repr(self) -> str:
        """Shown inside ``repr``."""
        return f"reduction={self.reduction!r}, clip={self.clip}"
