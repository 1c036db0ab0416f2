"""Row filtering for manifold pseudolabels, after Snorkel's ``filter_unlabeled_dataframe``.

Snorkel drops the rows on which every LF abstained before training an end model
(``filter_unlabeled_dataframe(X, y, L)``). Manifold pseudolabels come with a spread
(``ManifoldLabelModel.predict(X_lf, return_spread=True)``: the expected squared
distance to the true label), so rows can also be dropped when their pseudolabel is too
uncertain, as one would drop finite rows whose ``predict_proba`` is flat.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from snorkel_structured._validation import check_scalar

__all__ = ["filter_unlabeled_manifold"]


def filter_unlabeled_manifold(
    X: Any,
    y: Any,
    L: Any,
    *,
    spread: Any = None,
    max_spread: float | None = None,
) -> tuple[Any, np.ndarray]:
    """Keep the rows some LF voted on (and, optionally, whose spread is small enough).

    Parameters
    ----------
    X : pandas.DataFrame or array-like of shape (n_samples, ...)
        End-model features (any object ``len`` and row selection work on: a DataFrame
        is filtered with ``.iloc`` and keeps its index).
    y : array-like of shape (n_samples, ambient_dim)
        Pseudolabels, e.g. ``ManifoldLabelModel.predict(L)``.
    L : array-like of shape (n_samples, n_lfs, ambient_dim)
        The LF outputs the pseudolabels came from; a row of NaN is an abstain.
    spread : array-like of shape (n_samples,), optional
        Each row's posterior spread, from ``predict(L, return_spread=True)``.
    max_spread : float, optional
        Drop rows whose ``spread`` exceeds this (squared units of the space's
        distance); needs ``spread``.

    Returns
    -------
    X_filtered : pandas object or ndarray
        A DataFrame or Series filtered with ``.iloc``; other ``X`` as an array, or
        as a list when its rows have different lengths (a ragged list).
    y_filtered : ndarray of shape (n_kept, ambient_dim)

    Raises
    ------
    ValueError
        On inconsistent lengths or shapes, or ``max_spread`` without ``spread``.

    See Also
    --------
    snorkel.labeling.filter_unlabeled_dataframe : the finite-label original.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> L = np.array([[[0.0], [1.0]], [[np.nan], [np.nan]], [[2.0], [np.nan]]])
    >>> y = np.array([[0.5], [np.nan], [2.0]])
    >>> X_kept, y_kept = filter_unlabeled_manifold(pd.DataFrame({"f": [1, 2, 3]}), y, L)
    >>> X_kept.index.tolist(), y_kept[:, 0].tolist()
    ([0, 2], [0.5, 2.0])
    >>> spread = np.array([0.25, np.nan, 1.0])
    >>> filter_unlabeled_manifold(np.arange(3), y, L, spread=spread, max_spread=0.5)[0]
    array([0])
    """
    try:
        L_arr = np.asarray(L, dtype=np.float64)
    except (TypeError, ValueError):  # numpy: "... inhomogeneous shape", or None
        raise ValueError(
            "L must be a numeric array; got a ragged nested sequence (points of "
            "different lengths, or None for abstains). Give a float array of shape "
            "(n_samples, n_lfs, ambient_dim) with a row of NaN where an LF abstains "
            "(not None), e.g. from ss.ManifoldPandasApplier(lfs).apply(df)."
        ) from None
    if L_arr.ndim != 3:
        raise ValueError(
            "L must be the LF outputs, shape (n_samples, n_lfs, ambient_dim) with NaN "
            f"rows for abstains; got shape {L_arr.shape}."
        )
    n = L_arr.shape[0]
    y_arr = np.asarray(y, dtype=np.float64)
    if y_arr.ndim != 2 or y_arr.shape[0] != n:
        raise ValueError(
            f"y must be the pseudolabels, shape ({n}, ambient_dim) as L has {n} rows; "
            f"got shape {y_arr.shape}."
        )
    if len(X) != n:
        raise ValueError(f"X has {len(X)} rows but L has {n}; pass the same rows.")
    keep = (~np.isnan(L_arr).all(axis=2)).any(axis=1)
    if max_spread is not None and spread is None:
        raise ValueError(
            "max_spread needs spread: pass spread from "
            "ManifoldLabelModel.predict(L, return_spread=True)."
        )
    if spread is not None:
        s = np.asarray(spread, dtype=np.float64)
        if s.shape != (n,):
            raise ValueError(f"spread must have shape ({n},); got shape {s.shape}.")
        keep &= ~np.isnan(s)
        if max_spread is not None:
            limit = check_scalar(max_spread, "max_spread", low=0.0)
            keep &= np.nan_to_num(s, nan=np.inf) <= limit
    if hasattr(X, "iloc"):
        return X.iloc[keep], y_arr[keep]
    try:
        X_arr = np.asarray(X)
    except ValueError:
        # Rows of different lengths (e.g. token lists) make no array: filter the
        # sequence itself, keeping its rows as they are.
        return list(itertools.compress(X, keep)), y_arr[keep]
    return X_arr[keep], y_arr[keep]
