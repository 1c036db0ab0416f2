"""Labeling functions whose votes are points on a manifold, and their appliers.

A manifold LF returns a point of a label space such as ``Euclidean(dim)`` (regression),
``Sphere(dim)`` or ``Hyperbolic(dim)``: an array-like of length ``space.ambient_dim``
(or a plain float for ``Euclidean(1)``), or ``None`` to abstain. Appliers run a list of
such LFs over a pandas or Dask DataFrame and return an array of shape
``(n_samples, n_lfs, ambient_dim)`` with rows of NaN where an LF abstains: the input
``ManifoldLabelModel.fit`` expects.

Snorkel's integer ``LabelingFunction`` cannot carry a point, so these are separate
classes that follow the same call pattern (preprocessors, resources, fault tolerance,
``ApplierMetadata``). The space is duck-typed: it needs ``ambient_dim``,
``belongs(point, atol)`` and ``projection(point)``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from snorkel.labeling.apply.core import ApplierMetadata
from snorkel.utils.data_operators import check_unique_names
from tqdm import tqdm

from snorkel_structured._validation import check_scalar
from snorkel_structured.labeling._common import (
    SpaceLFDecorator,
    describe_row,
    short_repr,
)

__all__ = [
    "ApplierMetadata",
    "ManifoldDaskApplier",
    "ManifoldLabelingFunction",
    "ManifoldPandasApplier",
    "ManifoldPandasParallelApplier",
    "manifold_labeling_function",
]


# Modules of Snorkel's LF appliers (snorkel.labeling.apply.core, .pandas, .dask, ...).
_SNORKEL_APPLIERS = "snorkel.labeling.apply"


def _check_manifold_space(space: Any) -> int:
    missing = [
        a for a in ("ambient_dim", "belongs", "projection") if not hasattr(space, a)
    ]
    if missing:
        raise TypeError(
            "space must be a manifold label space (Euclidean, Sphere, Hyperbolic, ...) "
            f"with ambient_dim, belongs and projection; {type(space).__name__} lacks "
            f"{', '.join(missing)}. For finite spaces use structured_labeling_function."
        )
    return int(space.ambient_dim)


class ManifoldLabelingFunction:
    """A labeling function that votes a point of a manifold (or abstains with ``None``).

    Calling it runs the preprocessors, then ``f``, then checks the output: it must have
    ``space.ambient_dim`` finite coordinates and lie on the manifold up to ``atol``
    (relative to its norm). Points within the tolerance are projected onto the
    manifold; points further away raise an error naming the LF, the row and the value.

    Parameters
    ----------
    name : str
        Name of the LF (unique within an applier).
    f : callable
        ``f(x, **resources)`` returning an array-like of shape ``(ambient_dim,)``, a
        float (only when ``ambient_dim == 1``), or ``None`` to abstain.
    space : manifold
        The label space, e.g. ``Sphere(2)``.
    resources : mapping, optional
        Keyword arguments passed to ``f``.
    pre : list of snorkel preprocessors, optional
        Run on each data point before ``f``.
    atol : float, default=1e-4
        Largest accepted distance (in ambient coordinates, relative to
        ``max(1, |point|)``) between the output and its projection onto the manifold.

    Attributes
    ----------
    name : str
    space : manifold
    atol : float

    Raises
    ------
    ValueError
        On calling, when the output has the wrong shape, is not finite, or is off the
        manifold by more than ``atol``.

    See Also
    --------
    manifold_labeling_function : the decorator that builds these.
    ManifoldPandasApplier, ManifoldDaskApplier : apply a list of them to a DataFrame.
    """

    def __init__(
        self,
        name: str,
        f: Callable[..., Any],
        *,
        space: Any,
        resources: Mapping[str, Any] | None = None,
        pre: Sequence[Any] | None = None,
        atol: float = 1e-4,
    ) -> None:
        self._ambient_dim = _check_manifold_space(space)
        self._name = name
        self.space = space
        self.atol = check_scalar(atol, "atol", low=0.0)
        self._f = f
        self._resources = dict(resources or {})
        self._pre = list(pre or [])

    @property
    def name(self) -> str:
        """Name of the LF.

        Raises
        ------
        TypeError
            When read by Snorkel's LF appliers (``PandasLFApplier``, ``LFApplier``,
            ``DaskLFApplier``, ...), which collect integer votes and would fail later
            inside Snorkel with numpy's "truth value of an array is ambiguous".
        """
        # Snorkel's BaseLFApplier.__init__ reads every LF's name first: refusing here
        # names the problem at construction, before a fault-tolerant apply could
        # swallow the failures as faults (one frame lookup, no traceback walk).
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller.startswith(_SNORKEL_APPLIERS):
            raise TypeError(
                f"Labeling function {self._name!r} votes points of {self.space!r}, but "
                "Snorkel's LF appliers (PandasLFApplier, LFApplier, DaskLFApplier, ...) "
                "only handle integer votes. Apply manifold LFs with "
                "ss.ManifoldPandasApplier(lfs).apply(df) (or ManifoldDaskApplier), "
                "which returns an (n_samples, n_lfs, ambient_dim) array for "
                "ManifoldLabelModel."
            )
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value

    def _preprocess_data_point(self, x: Any) -> Any:
        for preprocessor in self._pre:
            x = preprocessor(x)
            if x is None:
                raise ValueError(
                    f"Preprocessor {preprocessor!r} of labeling function {self.name!r} "
                    "returned None; preprocessors must return the data point."
                )
        return x

    def _error(self, x: Any, value: Any, problem: str) -> ValueError:
        return ValueError(
            f"Labeling function {self.name!r} returned {short_repr(value)} for "
            f"{describe_row(x)}: {problem}. Return a point of {self.space!r} (an "
            f"array of {self._ambient_dim} coordinates) or None to abstain."
        )

    def __call__(self, x: Any) -> np.ndarray | None:
        """Label data point ``x``.

        Returns
        -------
        point : ndarray of shape (ambient_dim,) or None
            The (projected) point, or ``None`` when the LF abstains.
        """
        value = self._f(self._preprocess_data_point(x), **self._resources)
        if value is None:
            return None
        try:
            point = np.array(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise self._error(x, value, "not numeric") from None
        if point.ndim == 0 and self._ambient_dim == 1:
            point = point.reshape(1)
        if point.shape != (self._ambient_dim,):
            raise self._error(
                x, value, f"expected shape ({self._ambient_dim},), got {point.shape}"
            )
        if not np.isfinite(point).all():
            raise self._error(
                x, value, "coordinates must be finite (use None to abstain)"
            )
        with np.errstate(invalid="ignore", divide="ignore"):
            projected = np.asarray(self.space.projection(point), dtype=np.float64)
        gap = float(np.linalg.norm(projected - point))
        if not np.isfinite(gap) or gap > self.atol * max(
            1.0, float(np.linalg.norm(point))
        ):
            raise self._error(
                x,
                value,
                f"the point is off the manifold (distance {gap:.3g} to its projection "
                f"exceeds atol={self.atol:g})",
            )
        return projected

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__} {self.name}, Space: {self.space!r}, "
            f"Preprocessors: {self._pre}"
        )


class manifold_labeling_function(SpaceLFDecorator):
    """Decorator turning a function that returns points into a manifold LF.

    The manifold counterpart of ``snorkel.labeling.labeling_function``.

    Parameters
    ----------
    space : manifold
        The label space, e.g. ``Sphere(2)`` or ``Euclidean(1)``.
    name : str, optional
        Name of the LF; defaults to the function's name.
    resources : mapping, optional
        Keyword arguments passed to the function on every call.
    pre : list of snorkel preprocessors, optional
        Run on each data point before the function.
    atol : float, default=1e-4
        Tolerance for projecting nearly-on-manifold outputs (see
        :class:`ManifoldLabelingFunction`).

    Returns
    -------
    decorator : callable
        Applied to a function, returns a :class:`ManifoldLabelingFunction`.

    Raises
    ------
    ValueError
        When used without parentheses (``@manifold_labeling_function``).

    See Also
    --------
    structured_labeling_function : the same for finite label spaces.

    Examples
    --------
    >>> import pandas as pd
    >>> import snorkel_structured as ss
    >>> @ss.manifold_labeling_function(space=ss.Euclidean(1))
    ... def half_dose(x):
    ...     return x["dose"] / 2 if x["dose"] > 0 else None
    >>> df = pd.DataFrame({"dose": [4.0, 0.0]})
    >>> ss.ManifoldPandasApplier([half_dose]).apply(df, progress_bar=False)[:, 0, 0]
    array([ 2., nan])
    """

    decorator_name = "manifold_labeling_function"
    space_attribute = "projection"
    example_space = "ss.Sphere(2)"

    def __init__(
        self,
        space: Any = None,
        name: str | None = None,
        resources: Mapping[str, Any] | None = None,
        pre: Sequence[Any] | None = None,
        atol: float = 1e-4,
    ) -> None:
        super().__init__(space, name, resources, pre)
        self.atol = atol

    def _check_space(self, space: Any) -> None:
        _check_manifold_space(space)

    def _make_lf(self, **kwargs: Any) -> ManifoldLabelingFunction:
        return ManifoldLabelingFunction(atol=self.atol, **kwargs)


def _apply_to_frame(
    df: pd.DataFrame,
    lfs: Sequence[ManifoldLabelingFunction],
    ambient_dim: int,
    fault_tolerant: bool,
    progress_bar: bool = False,
) -> tuple[np.ndarray, dict[str, int]]:
    """Run ``lfs`` over a pandas frame: (n, m, ambient_dim) points and fault counts."""
    out = np.full((len(df), len(lfs), ambient_dim), np.nan)
    faults: dict[str, int] = {}
    rows = tqdm(df.iterrows(), total=len(df), disable=not progress_bar)
    for i, (_, x) in enumerate(rows):
        for j, lf in enumerate(lfs):
            if fault_tolerant:
                try:
                    point = lf(x)
                except Exception:  # noqa: BLE001 - Snorkel's fault-tolerance semantics
                    faults[lf.name] = faults.get(lf.name, 0) + 1
                    continue
            else:
                point = lf(x)
            if point is not None:
                out[i, j] = point
    return out, faults


class _BaseManifoldApplier:
    """Checks and stores a list of manifold LFs that share one label space."""

    def __init__(self, lfs: Sequence[ManifoldLabelingFunction]) -> None:
        lfs = list(lfs)
        if not lfs:
            raise ValueError("lfs must hold at least one labeling function; got [].")
        for lf in lfs:
            if not isinstance(lf, ManifoldLabelingFunction):
                raise TypeError(
                    "lfs must be ManifoldLabelingFunction objects (use "
                    f"@manifold_labeling_function(space=...)); got {lf!r}. Apply "
                    "finite-space LFs with Snorkel's PandasLFApplier."
                )
        names = [lf.name for lf in lfs]
        check_unique_names(names)
        space = lfs[0].space
        for lf in lfs[1:]:
            if lf.space != space:
                raise ValueError(
                    f"All labeling functions must share one label space; "
                    f"{lfs[0].name!r} "
                    f"uses {space!r} but {lf.name!r} uses {lf.space!r}."
                )
        self._lfs = lfs
        self._lf_names = names
        self.space = space
        self._ambient_dim = int(space.ambient_dim)

    def __repr__(self) -> str:
        return f"{type(self).__name__}, LFs: {self._lf_names}"


class ManifoldPandasApplier(_BaseManifoldApplier):
    """Apply manifold labeling functions to a pandas DataFrame, row by row.

    Parameters
    ----------
    lfs : list of ManifoldLabelingFunction
        LFs sharing one label space, with unique names.

    See Also
    --------
    ManifoldDaskApplier : the same over a Dask DataFrame.
    snorkel.labeling.PandasLFApplier : the finite-label counterpart.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import snorkel_structured as ss
    >>> sphere = ss.Sphere(2)
    >>> @ss.manifold_labeling_function(space=sphere)
    ... def north_pole(x):
    ...     return [0.0, 0.0, 1.0] if x["lat"] > 60 else None
    >>> df = pd.DataFrame({"lat": [80.0, 10.0]})
    >>> ss.ManifoldPandasApplier([north_pole]).apply(df, progress_bar=False).shape
    (2, 1, 3)
    """

    def apply(
        self,
        df: pd.DataFrame,
        progress_bar: bool = True,
        fault_tolerant: bool = False,
        return_meta: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, ApplierMetadata]:
        """Label the rows of ``df``.

        Parameters
        ----------
        df : pandas.DataFrame
            One data point per row; each LF receives the row as a ``Series``.
        progress_bar : bool, default=True
            Show a tqdm progress bar.
        fault_tolerant : bool, default=False
            Record an abstain (and count a fault for the LF) when an LF raises or
            returns an invalid point, instead of raising.
        return_meta : bool, default=False
            Also return Snorkel's ``ApplierMetadata`` with per-LF fault counts.

        Returns
        -------
        X : ndarray of shape (n_samples, n_lfs, ambient_dim)
            The LFs' points; NaN rows where an LF abstains (or faulted).
        meta : ApplierMetadata
            Only when ``return_meta=True``: ``meta.faults`` maps LF name to count.
        """
        if not isinstance(df, pd.DataFrame):
            raise TypeError(
                f"df must be a pandas DataFrame; got {type(df).__name__}. Use "
                "ManifoldDaskApplier for Dask DataFrames."
            )
        X, faults = _apply_to_frame(
            df, self._lfs, self._ambient_dim, fault_tolerant, progress_bar
        )
        if return_meta:
            return X, ApplierMetadata(faults)
        return X


class ManifoldDaskApplier(_BaseManifoldApplier):
    """Apply manifold labeling functions to a Dask DataFrame, partition by partition.

    Each partition is labeled by an independent task; results and fault counts are
    gathered and concatenated in partition order, so fault counts are exact under any
    scheduler (threads, processes, or a ``distributed.Client``).

    Parameters
    ----------
    lfs : list of ManifoldLabelingFunction
        LFs sharing one label space, with unique names.

    See Also
    --------
    ManifoldPandasApplier : the single-process pandas version.
    ManifoldPandasParallelApplier : split a pandas DataFrame and use Dask.
    """

    def apply(
        self,
        df: Any,
        scheduler: Any = "processes",
        fault_tolerant: bool = False,
        return_meta: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, ApplierMetadata]:
        """Label the rows of a Dask DataFrame.

        Parameters
        ----------
        df : dask.dataframe.DataFrame
            One data point per row.
        scheduler : str or distributed.Client, default="processes"
            Passed to ``dask.compute`` (``"synchronous"``, ``"threads"``,
            ``"processes"`` or a ``Client``).
        fault_tolerant : bool, default=False
            Abstain and count a fault instead of raising when an LF fails.
        return_meta : bool, default=False
            Also return ``ApplierMetadata`` with per-LF fault counts.

        Returns
        -------
        X : ndarray of shape (n_samples, n_lfs, ambient_dim)
            NaN rows where an LF abstains.
        meta : ApplierMetadata
            Only when ``return_meta=True``.
        """
        import dask

        if not hasattr(df, "to_delayed"):
            raise TypeError(
                f"df must be a Dask DataFrame; got {type(df).__name__}. Use "
                "ManifoldPandasApplier for pandas DataFrames."
            )
        tasks = [
            dask.delayed(_apply_to_frame)(
                part, self._lfs, self._ambient_dim, fault_tolerant
            )
            for part in df.to_delayed()
        ]
        results = dask.compute(*tasks, scheduler=scheduler)
        if results:
            X = np.concatenate([r[0] for r in results], axis=0)
        else:  # pragma: no cover - a Dask frame always has a partition
            X = np.full((0, len(self._lfs), self._ambient_dim), np.nan)
        faults: dict[str, int] = {}
        for _, part_faults in results:
            for name, count in part_faults.items():
                faults[name] = faults.get(name, 0) + count
        if return_meta:
            return X, ApplierMetadata(faults)
        return X


class ManifoldPandasParallelApplier(ManifoldDaskApplier):
    """Apply manifold LFs to a pandas DataFrame in parallel by splitting it with Dask.

    See Also
    --------
    ManifoldDaskApplier
    """

    def apply(  # type: ignore[override]
        self,
        df: pd.DataFrame,
        n_parallel: int = 2,
        scheduler: Any = "processes",
        fault_tolerant: bool = False,
        return_meta: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, ApplierMetadata]:
        """Label ``df`` in ``n_parallel`` Dask partitions (see ManifoldDaskApplier)."""
        from dask import dataframe as dd

        n_parallel = check_scalar(n_parallel, "n_parallel", kind="int", low=2)
        ddf = dd.from_pandas(df, npartitions=n_parallel)
        return super().apply(
            ddf,
            scheduler=scheduler,
            fault_tolerant=fault_tolerant,
            return_meta=return_meta,
        )
