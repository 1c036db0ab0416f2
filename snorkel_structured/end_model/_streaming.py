"""Chunked reading of prediction inputs: bounded memory and an optional progress bar.

A NumPy array (or ``np.memmap``) of real numbers is validated and copied one block of
rows at a time, so predicting on 10^6+ rows never holds a second copy of the features
nor an (n_rows x n_train) kernel block; other inputs (lists, DataFrames) are
validated whole first, as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from tqdm import tqdm

from snorkel_structured.end_model._kernels import check_features


def iter_feature_chunks(
    X: Any,
    *,
    n_features: int,
    estimator: Any,
    chunk_size: int,
    progress_bar: bool = False,
) -> Iterator[tuple[slice, np.ndarray]]:
    """Yield ``(rows, features)``: row slices of at most ``chunk_size`` rows and their
    validated float64 features, in order.

    Raises the same ValueErrors as :func:`check_features` (a non-finite entry is named
    by its row in the whole ``X``).
    """
    streamable = (
        isinstance(X, np.ndarray)
        and X.ndim == 2
        and X.dtype.kind in "fiu"
        and X.shape[0] > chunk_size
    )
    if not streamable:
        Xa = check_features(X, n_features=n_features, estimator=estimator)
        n = Xa.shape[0]
    else:
        # shape and feature-count errors before any work, in check_features' words
        check_features(X[:1], n_features=n_features, estimator=estimator)
        n = X.shape[0]
    with tqdm(
        total=n,
        disable=not progress_bar,
        unit="rows",
        desc=type(estimator).__name__ + ".predict",
    ) as bar:
        for start in range(0, n, chunk_size):
            rows = slice(start, min(start + chunk_size, n))
            if not streamable:
                yield rows, Xa[rows]
            else:
                block = np.asarray(X[rows], dtype=np.float64)
                bad = ~np.isfinite(block)
                if bad.any():
                    i, j = (int(v) for v in np.argwhere(bad)[0])
                    raise ValueError(
                        f"X contains NaN or inf: entry {(start + i, j)} is "
                        f"{block[i, j]!r}; features must be finite."
                    )
                yield rows, block  # read only: a view of X is fine
            bar.update(rows.stop - rows.start)
