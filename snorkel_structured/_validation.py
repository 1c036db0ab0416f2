"""Input validation shared by every public entry point.

Each public function or ``fit`` validates its inputs once, here; private kernels trust
what they receive. Messages follow one pattern: name the argument, show the bad value
(arrays by shape and dtype, with the first offending index), say how to fix it.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from snorkel_structured import _warnings, exceptions

ABSTAIN = -1
# A label matrix with more columns than rows and more than this many columns is taken
# for a transposed one (no label model can estimate that many LFs from fewer rows).
TRANSPOSED_MIN_LFS = 50
# The largest distance a finite space accepts (and 1 / MAX_DISTANCE the smallest
# positive one): the models use d^2, its sums over labels and rows, its variance
# (d^4 <= 1e200, far below the float64 maximum 1.8e308) and theta ~ 1 / d^2.
MAX_DISTANCE = 1e50
_ENCODE_HINT = (
    "Encode items with space.encode(row) (None -> -1), e.g. "
    "np.stack([space.encode(row) for row in rows]), or apply structured LFs with "
    "Snorkel's PandasLFApplier, which returns indices."
)

__all__ = [
    "ABSTAIN",
    "MAX_DISTANCE",
    "check_distance_matrix",
    "check_is_fitted",
    "check_label_matrix",
    "check_manifold_outputs",
    "check_points",
    "check_scalar",
    "check_seed",
    "warn_silent_lfs",
]


def _shown(x: Any) -> Any:
    """A NumPy scalar as the Python number it holds, for messages (NumPy 2 writes
    ``np.float64(nan)`` for ``repr``)."""
    return x.item() if isinstance(x, np.generic) else x


def check_gold_labels(
    Y: Any,
    n_labels: int,
    name: str,
    n: int | None = None,
    *,
    allow_unknown: bool = False,
) -> np.ndarray:
    """Gold label indices in ``[0, n_labels)`` as int64; integral floats pass, as in
    Snorkel. ``n``: the rows of L they belong to. ``allow_unknown`` lets -1 mark a
    row whose label is unknown (``score``)."""
    y = np.asarray(Y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    integral = y.dtype.kind in "iu" or (
        y.dtype.kind == "f" and bool(np.all(np.isfinite(y) & (y == np.round(y))))
    )
    if y.ndim != 1 or y.size == 0 or not integral:
        raise ValueError(
            f"{name} must be a 1-D array of label indices; got shape {y.shape}, "
            f"dtype {y.dtype}."
        )
    if n is not None and y.size != n:
        raise ValueError(
            f"{name} must have one label per row of L ({n}); got {y.size}."
        )
    y = y.astype(np.int64)
    bad = ((y < 0) & ~(allow_unknown & (y == ABSTAIN))) | (y >= n_labels)
    if bad.any():
        i = int(np.argmax(bad))
        unknown = " (or -1 for an unknown label)" if allow_unknown else ""
        raise ValueError(
            f"{name} holds a label outside [0, {n_labels}){unknown}: entry {i} is "
            f"{y[i]}."
        )
    return y


def check_lf_weights(weights: Any, n_lfs: int, unlabeled: str) -> np.ndarray:
    """LF weights as a fresh (n_lfs,) float64 array: finite, non-negative, with a
    positive entry (a weight of 0 counts as abstaining, so all zero would ignore
    every LF; ``unlabeled`` says what every row then becomes)."""
    try:
        w = np.array(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"weights must be {n_lfs} finite non-negative numbers (one per LF); got "
            f"{weights!r}."
        ) from None
    if w.shape != (n_lfs,):
        raise ValueError(
            f"weights must be {n_lfs} finite non-negative numbers (one per LF); got "
            f"shape {w.shape}."
        )
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        a = int(np.argmax(bad))
        raise ValueError(
            f"weights must be finite and non-negative; weights[{a}] is {float(w[a])!r}."
        )
    if not (w > 0).any():
        raise ValueError(
            f"weights must have a positive entry; got all {n_lfs} zero, which ignores "
            f"every LF and leaves every row {unlabeled}. Pass weights=None for equal "
            "weights."
        )
    return w


def check_seed(seed: None | int | np.random.Generator) -> np.random.Generator:
    """Turn ``seed`` into a ``numpy.random.Generator``.

    ``None`` gives fresh OS entropy, an int a reproducible stream, and a Generator is
    returned as is (so it advances). Legacy ``RandomState`` objects are refused.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (
        isinstance(seed, numbers.Integral) and not isinstance(seed, bool)
    ):
        if seed is not None and int(seed) < 0:
            raise ValueError(f"seed must be a non-negative int; got {seed!r}.")
        return np.random.default_rng(seed)
    raise TypeError(
        "seed must be None, an int or a numpy.random.Generator; got "
        f"{type(seed).__name__}. Use np.random.default_rng(...) instead of RandomState."
    )


def check_scalar(
    x: Any,
    name: str,
    *,
    kind: str = "float",
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
) -> Any:
    """Check that ``x`` is a finite int or float within ``[low, high]``; return it typed."""
    if kind == "int":
        ok = isinstance(x, numbers.Integral) and not isinstance(x, bool)
        what = "an int"
    elif kind == "float":
        ok = isinstance(x, numbers.Real) and not isinstance(x, bool)
        what = "a real number"
    else:  # pragma: no cover - programming error
        raise ValueError(f"unknown kind {kind!r}")
    if not ok:
        raise TypeError(f"{name} must be {what}; got {x!r} of type {type(x).__name__}.")
    value = int(x) if kind == "int" else float(x)
    if kind == "float" and not np.isfinite(value):
        raise ValueError(f"{name} must be finite; got {x!r}.")
    bad_low = low is not None and (value < low if low_inclusive else value <= low)
    bad_high = high is not None and (value > high if high_inclusive else value >= high)
    if bad_low or bad_high:
        lo = "-inf" if low is None else repr(low)
        hi = "inf" if high is None else repr(high)
        lb = "[" if low_inclusive and low is not None else "("
        hb = "]" if high_inclusive and high is not None else ")"
        raise ValueError(f"{name} must be in the range {lb}{lo}, {hi}{hb}; got {x!r}.")
    return value


def check_distribution(p: Any, size: int, message: str) -> np.ndarray:
    """``p`` as ``size`` non-negative finite numbers with a positive sum, normalized;
    ``ValueError(message)`` otherwise (each caller names its own argument)."""
    p = np.asarray(p, dtype=np.float64)
    if p.shape != (size,) or not np.isfinite(p).all() or (p < 0).any() or p.sum() <= 0:
        raise ValueError(message)
    return p / p.sum()


def _first_index(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def check_distance_matrix(
    D: Any, name: str = "distances", *, atol: float = 1e-9, squared: bool = False
) -> np.ndarray:
    """Validate a matrix of pairwise distances and return it as a fresh float64 array.

    Requires a square, finite, non-negative, symmetric matrix with a zero diagonal,
    whose off-diagonal entries are 0 or within ``[1 / MAX_DISTANCE, MAX_DISTANCE]``
    (``MAX_DISTANCE`` is 1e50). With ``squared`` the upper bound is
    ``MAX_DISTANCE ** 2`` and there is no lower one. Violations of the triangle
    inequality are allowed (semimetrics embed too).

    Parameters
    ----------
    D : array-like of shape (r, r)
    name : str, default="distances"
        Name used in error messages.
    atol : float, default=1e-9
        Tolerance, relative to the largest entry, for asymmetry and a nonzero diagonal.
    squared : bool, default=False
        Whether ``D`` holds squared distances: the upper bound is then squared and
        small entries are accepted (the embedding and the estimators taking ``S``
        work in units of its entries).

    Notes
    -----
    The label models work with squared distances, their sums over labels and rows and
    their variances (fourth powers of distances). Up to ``MAX_DISTANCE`` these stay
    about 100 orders of magnitude below the float64 maximum (1.8e308); beyond, they
    overflow and a fit silently returns near-chance labels. Positive distances below
    ``1 / MAX_DISTANCE`` fail the same way through theta ~ 1 / d^2. The models are
    scale-invariant, so dividing the distances by their largest value changes nothing.
    """
    try:
        D = np.array(D, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric (r, r) array; {exc}") from None
    if D.ndim != 2 or D.shape[0] != D.shape[1]:
        raise ValueError(f"{name} must be a square (r, r) matrix; got shape {D.shape}.")
    if D.shape[0] == 0:
        raise ValueError(
            f"{name} must describe at least one item; got shape {D.shape}."
        )
    bad = ~np.isfinite(D)
    if bad.any():
        raise ValueError(
            f"{name} must be finite; entry {_first_index(bad)} is {_shown(D[bad][0])!r}. "
            "Disconnected items have no distance: remove them or give a finite one."
        )
    if (D < 0).any():
        idx = _first_index(D < 0)
        raise ValueError(
            f"{name} must be non-negative; entry {idx} is {_shown(D[idx])!r}."
        )
    # Models and embeddings work with squared distances, their sums and variances
    # (d^4): refuse distances whose powers would overflow (see Notes).
    limit = MAX_DISTANCE**2 if squared else MAX_DISTANCE
    if (D > limit).any():
        idx = _first_index(D > limit)
        what = "squared distances" if squared else "distances"
        raise ValueError(
            f"{name} has entry {idx} = {float(D[idx])!r}, too large to square safely: "
            f"{what} above {limit:.0e} overflow the label models' sums and variances "
            "of squared distances. Rescale the distances, e.g. divide them by their "
            "largest value (the label models are scale-invariant)."
        )
    scale = max(float(np.abs(D).max()), 1.0)
    asym = np.abs(D - D.T) > atol * scale
    if asym.any():
        i, j = _first_index(asym)
        raise ValueError(
            f"{name} must be symmetric; entry ({i}, {j}) is {_shown(D[i, j])!r} but "
            f"({j}, {i}) is {_shown(D[j, i])!r}. Symmetrize it, e.g. (D + D.T) / 2."
        )
    diag = np.abs(np.diag(D)) > atol * scale
    if diag.any():
        i = int(np.argmax(diag))
        raise ValueError(
            f"{name} must have a zero diagonal; entry ({i}, {i}) is {_shown(D[i, i])!r}."
        )
    # (squared matrices come from a space, or go to code that rescales them itself)
    tiny = (D > 0) & (D < 1.0 / MAX_DISTANCE) & (not squared)
    np.fill_diagonal(tiny, False)  # the diagonal is zero up to atol (checked above)
    if tiny.any():
        idx = _first_index(tiny)
        raise ValueError(
            f"{name} has entry {idx} = {float(D[idx])!r}, too small: positive "
            f"distances below {1.0 / MAX_DISTANCE:.0e} make the label models' theta "
            "(~ 1 / d^2) overflow. Rescale the distances, e.g. divide them by their "
            "largest value, or set that entry to 0 if the two items are the same label."
        )
    D = (D + D.T) / 2.0
    np.fill_diagonal(D, 0.0)
    return D


def check_label_matrix(
    L: Any,
    *,
    n_labels: int | None = None,
    min_lfs: int = 1,
    name: str = "L",
    n_lfs: int | None = None,
) -> np.ndarray:
    """Validate a label matrix and return it as a fresh int64 array.

    Parameters
    ----------
    L : array-like of shape (n_samples, n_lfs)
        Indices into the label space; ``-1`` (ABSTAIN) where a labeling function abstains.
    n_labels : int, optional
        Size of the label space; every vote must be in ``[0, n_labels)`` or ``-1``.
    min_lfs : int, default=1
        Least number of columns (labeling functions) accepted.
    name : str, default="L"
        Name used in error messages.
    n_lfs : int, optional
        Exact number of columns required (e.g. the number a model was fitted with).
    """
    if hasattr(L, "toarray") and hasattr(L, "nnz"):  # SciPy sparse: 0 is a label
        raise ValueError(
            f"{name} is a SciPy sparse matrix; label matrices are dense (n_samples, "
            "n_lfs) arrays with -1 where an LF abstains (a sparse zero would be a "
            "vote for label 0). Pass L.toarray() if its zeros are votes."
        )
    if hasattr(L, "to_numpy"):  # pandas DataFrame (or Series)
        # Nullable integer columns (Int64) hold pd.NA and give object arrays: as
        # floats, a missing vote is a NaN that the checks below name.
        dtypes = L.dtypes if hasattr(L, "columns") else [L.dtype]
        as_float = None
        if any(getattr(t, "na_value", None) is not None for t in dtypes):
            try:
                as_float = L.to_numpy(dtype=np.float64, na_value=np.nan)
            except (TypeError, ValueError):  # e.g. categories of strings
                pass
        L = as_float if as_float is not None else L.to_numpy()
    try:
        arr = np.asarray(L)
    except ValueError:  # numpy: "... has an inhomogeneous shape after 1 dimensions"
        raise ValueError(
            f"{name} must be a 2-D (n_samples, n_lfs) array of integer label indices "
            "(-1 = abstain); got a ragged nested sequence, e.g. items of the space "
            f"(tuples) mixed with None. {_ENCODE_HINT}"
        ) from None
    if arr.ndim != 2:
        if arr.ndim == 1:
            hint = " Reshape a single LF's votes with L.reshape(-1, 1)."
        elif arr.ndim == 3:  # rows of LF outputs that are items (tuples), not indices
            hint = (
                f" Each entry is a sequence of length {arr.shape[2]}: these look like "
                f"items of the space (e.g. rankings as tuples), not indices. "
                f"{_ENCODE_HINT}"
            )
        else:
            hint = ""
        raise ValueError(
            f"{name} must be a 2-D (n_samples, n_lfs) array; got shape {arr.shape}.{hint}"
        )
    if arr.dtype.kind not in "iuf" and arr.dtype != bool:
        raise ValueError(
            f"{name} must hold integer label indices (-1 = abstain); got dtype "
            f"{arr.dtype}. {_ENCODE_HINT}"
        )
    if n_lfs is None and arr.shape[1] > max(arr.shape[0], TRANSPOSED_MIN_LFS):
        raise ValueError(
            f"{name} has shape {arr.shape}: {arr.shape[1]} labeling functions (columns) "
            f"but only {arr.shape[0]} rows. {name} is (n_samples, n_lfs), one column "
            f"per LF; this looks transposed: pass {name}.T."
        )
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            idx = _first_index(bad)
            raise ValueError(
                f"{name} must hold integer label indices; entry {idx} is {_shown(arr[idx])!r}. "
                "Use -1, not NaN, for abstains."
            )
    out = arr.astype(np.int64, copy=True)
    if out.shape[0] == 0:
        raise ValueError(f"{name} must have at least one row; got shape {out.shape}.")
    if out.shape[1] < min_lfs:  # Snorkel: "L_train should have at least 3 ..."
        raise ValueError(
            f"{name} should have at least {min_lfs} labeling functions, i.e. at least "
            f"{min_lfs} columns; got shape {out.shape}. Add labeling functions."
        )
    if n_lfs is not None and out.shape[1] != n_lfs:
        flip = f" It looks transposed: pass {name}.T." if out.shape[0] == n_lfs else ""
        raise ValueError(
            f"{name} must have {n_lfs} columns, as the model was fitted with; got shape "
            f"{out.shape}.{flip}"
        )
    high = np.inf if n_labels is None else n_labels
    # two reductions, no (n, m) masks, on the valid matrices that nearly all are
    if out.size and (out.min() < ABSTAIN or out.max() >= high):
        bad = (out < ABSTAIN) | (out >= high)
        idx = _first_index(bad)
        rng_txt = (
            "-1 (abstain) or >= 0"
            if n_labels is None
            else f"-1 (abstain) or in [0, {n_labels})"
        )
        if (out >= high).any():  # Snorkel's phrase: "L_train has cardinality ..."
            idx = _first_index(out >= high)
            raise ValueError(
                f"{name} has cardinality {int(out.max()) + 1}, more than the "
                f"{n_labels} labels of the space: entry {idx} is {out[idx]}, a label "
                f"index outside the label space; votes must be {rng_txt}."
            )
        raise ValueError(
            f"{name} holds a label index outside the label space: entry {idx} is "
            f"{out[idx]}; votes must be {rng_txt}."
        )
    return out


def warn_silent_lfs(
    vote_counts: Any,
    *,
    n_samples: int,
    name: str = "L_train",
    lf_names: Sequence[Any] | None = None,
    stacklevel: int = 1,
) -> np.ndarray:
    """Warn (``IdentifiabilityWarning``) about labeling functions that never voted.

    An LF with zero coverage carries no information about its accuracy: whatever a
    label model fits for it is a default, not an estimate. Usually the LF is broken
    on this data (e.g. it returns None everywhere), so the message names it and asks
    to fix or remove it.

    Parameters
    ----------
    vote_counts : array-like of shape (n_lfs,)
        Number of rows on which each LF voted.
    n_samples : int
        Number of rows of the label matrix (for the message).
    name : str, default="L_train"
        Name of the label matrix in the message.
    lf_names : sequence, optional
        LF names, shown next to the indices.
    stacklevel : int, default=1
        As in ``warnings.warn``, counted from the caller of this function.

    Returns
    -------
    silent : ndarray of int64
        Indices of the LFs that never voted (empty when every LF voted).
    """
    counts = np.asarray(vote_counts, dtype=np.float64)
    silent = np.flatnonzero(counts <= 0)
    if silent.size == 0 or silent.size == counts.size:  # all silent: callers raise
        return silent.astype(np.int64)
    if lf_names is not None:
        names = list(lf_names)
        which = ", ".join(f"{int(a)} ({names[a]!r})" for a in silent)
    else:
        which = ", ".join(str(int(a)) for a in silent)
    lfs = "LF" if silent.size == 1 else "LFs"
    _warnings.warn(
        f"{lfs} {which} never voted in {name} (zero coverage: abstained on all "
        f"{n_samples} rows), so the data say nothing about "
        f"{'its' if silent.size == 1 else 'their'} accuracy: a label model can only "
        "give it default parameters, not estimated ones. Fix the LF (check that it "
        f"returns labels, not None, on this data) or remove its column from {name}.",
        exceptions.IdentifiabilityWarning,
        stacklevel=stacklevel + 1,
    )
    return silent.astype(np.int64)


def check_is_fitted(
    estimator: Any, attributes: Sequence[str] | str | None = None
) -> None:
    """Raise ``NotFittedError`` unless ``estimator`` has its fitted attributes.

    Without ``attributes``, any public attribute whose name ends in ``_`` counts.
    """
    if isinstance(attributes, str):
        attributes = [attributes]
    if attributes is not None:
        fitted = all(hasattr(estimator, a) for a in attributes)
    else:
        fitted = any(k.endswith("_") and not k.startswith("_") for k in vars(estimator))
    if not fitted:
        # looked up here: building the class imports scikit-learn (about a second)
        raise exceptions.NotFittedError(
            f"This {type(estimator).__name__} instance is not fitted yet. Call 'fit' "
            "before using this method."
        )


def check_points(
    x: Any,
    space: Any,
    *,
    name: str = "point",
    atol: float = 1e-6,
    allow_nan: bool = False,
    axis_names: Sequence[str] | None = None,
) -> np.ndarray:
    """Validate points of a manifold ``space``; return a fresh, projected float64 array.

    Parameters
    ----------
    x : array-like of shape (..., space.ambient_dim)
    space : a manifold (anything with ``ambient_dim``, ``belongs`` and ``projection``)
    name : str
        Argument name for messages.
    atol : float
        Points within ``atol`` of the manifold are projected onto it; farther ones
        raise.
    allow_nan : bool
        If True, a point whose coordinates are all NaN means "absent" and is kept.
    axis_names : sequence of str, optional
        Names of the leading axes (e.g. ``("row", "LF")``) used in messages.
    """
    try:
        arr = np.array(x, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array; {exc}") from None
    D = space.ambient_dim
    if arr.ndim < 1 or arr.shape[-1] != D:
        raise ValueError(
            f"{name} must have shape (..., {D}) for {space!r}; got shape {arr.shape}."
        )

    def where(mask: np.ndarray) -> str:
        idx = _first_index(mask)
        if axis_names is not None and len(axis_names) == len(idx):
            return ", ".join(f"{a} {i}" for a, i in zip(axis_names, idx, strict=True))
        return f"index {idx}"

    nan = np.isnan(arr)
    n_nan = nan.sum(axis=-1)
    absent = n_nan == arr.shape[-1]
    partial = (n_nan > 0) & ~absent
    if partial.any() or (absent.any() and not allow_nan):
        bad = partial if partial.any() else absent
        fix = (
            "Use a full row of NaN for an abstain."
            if allow_nan
            else "Remove NaN points."
        )
        raise ValueError(f"{name} has NaN coordinates at {where(bad)}. {fix}")
    if np.isinf(arr).any():
        raise ValueError(
            f"{name} has infinite coordinates at {where(np.isinf(arr).any(-1))}."
        )
    present = ~absent
    with np.errstate(invalid="ignore"):
        ok = space.belongs(arr, atol=atol)  # False on absent (NaN) points
        off = present & ~ok
    if off.any():
        raise ValueError(
            f"{name} has a point off {space!r} (beyond atol={atol}) at {where(off)}: "
            f"{arr[_first_index(off)]!r}. Project it with space.projection(...) or "
            "check its coordinates."
        )
    with np.errstate(invalid="ignore"):
        return space.projection(arr)  # NaN (absent) points stay NaN


def check_manifold_outputs(
    X: Any, space: Any, *, name: str = "X", atol: float = 1e-6, n_lfs: int | None = None
) -> np.ndarray:
    """Validate LF outputs of shape (n_samples, n_lfs, ambient_dim); NaN rows = abstain."""
    D = space.ambient_dim
    fix = (
        f"Give a float array of shape (n_samples, n_lfs, {D}) with a row of NaN where "
        "an LF abstains (not None), e.g. from ss.ManifoldPandasApplier(lfs).apply(df)."
    )
    try:
        arr = np.asarray(X)
    except ValueError:  # numpy: "... has an inhomogeneous shape after 2 dimensions"
        raise ValueError(
            f"{name} must be a numeric array; got a ragged nested sequence (points of "
            f"different lengths, or None for abstains). {fix}"
        ) from None
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name} must be a numeric array; got an object array of shape "
                f"{arr.shape} (None for abstains, or points as tuples). {fix}"
            ) from None
    if arr.ndim != 3 or arr.shape[-1] != D:
        raise ValueError(
            f"{name} must have shape (n_samples, n_lfs, {D}) for {space!r}; got shape "
            f"{arr.shape}. Stack each LF's outputs along axis 1."
        )
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must have at least one row; got shape {arr.shape}.")
    if n_lfs is None and arr.shape[1] > max(arr.shape[0], TRANSPOSED_MIN_LFS):
        raise ValueError(
            f"{name} has shape {arr.shape}: {arr.shape[1]} labeling functions (axis 1) "
            f"but only {arr.shape[0]} rows. {name} is (n_samples, n_lfs, {D}); this "
            f"looks transposed: pass {name}.transpose(1, 0, 2)."
        )
    if n_lfs is not None and arr.shape[1] != n_lfs:
        flip = (
            f" It looks transposed: pass {name}.transpose(1, 0, 2)."
            if arr.shape[0] == n_lfs
            else ""
        )
        raise ValueError(
            f"{name} must have {n_lfs} labeling functions (axis 1), as the model was "
            f"fitted with; got shape {arr.shape}.{flip}"
        )
    return check_points(
        arr, space, name=name, atol=atol, allow_nan=True, axis_names=("row", "LF")
    )
