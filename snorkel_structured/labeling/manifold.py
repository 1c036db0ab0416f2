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

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from snorkel.labeling.apply.core import ApplierMetadata

from snorkel_structured._validation import check_scalar
from snorkel_structured.labeling._appliers import (
    ArrayLabelingFunction,
    ArrayLFApplier,
    pandas_to_dask,
    with_meta,
)
from snorkel_structured.labeling._common import SpaceLFDecorator, fill_doc

__all__ = [
    "ApplierMetadata",
    "ManifoldDaskApplier",
    "ManifoldLabelingFunction",
    "ManifoldPandasApplier",
    "ManifoldPandasParallelApplier",
    "manifold_labeling_function",
]


# Scalars that numpy turns into floats but that are no coordinates; np.str_ and
# np.bytes_ subclass str and bytes.
_NON_NUMERIC = (str, bytes, bool, np.bool_)


def _non_numeric(value: Any) -> bool:
    """Whether an LF output is, or holds, a string, bytes or a bool.

    Checks the value itself, a list or tuple's entries (a point has a handful) and
    an array's dtype, without converting anything.
    """
    if isinstance(value, _NON_NUMERIC):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "USb" or (
            value.dtype == object
            and any(isinstance(v, _NON_NUMERIC) for v in value.ravel())
        )
    if isinstance(value, (list, tuple)):
        return any(isinstance(v, _NON_NUMERIC) for v in value)
    return False


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


@fill_doc()
class ManifoldLabelingFunction(ArrayLabelingFunction):
    """A labeling function that votes a point of a manifold (or abstains with ``None``).

    Calling it runs the preprocessors, then ``f``, then checks the output: it must have
    ``space.ambient_dim`` finite coordinates and lie on the manifold up to ``atol``
    (relative to its norm). Points within the tolerance are projected onto the
    manifold; points further away raise an error naming the LF, the row and the value.

    Parameters
    ----------
    %(lf_name)s
    f : callable
        ``f(x, **resources)`` returning an array-like of shape ``(ambient_dim,)``, a
        float (only when ``ambient_dim == 1``), or ``None`` to abstain.
    space : manifold
        The label space, e.g. ``Sphere(2)``.
    %(lf_resources_pre)s
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
        On calling, when the output is not numeric (including strings, bytes and
        bools, which numpy would convert), has the wrong shape, is not finite, or is
        off the manifold by more than ``atol``.

    See Also
    --------
    manifold_labeling_function : the decorator that builds these.
    ManifoldPandasApplier, ManifoldDaskApplier : apply a list of them to a DataFrame.
    """

    _apply_with = (
        "manifold LFs with ss.ManifoldPandasApplier(lfs).apply(df) (or "
        "ManifoldDaskApplier), which returns an (n_samples, n_lfs, ambient_dim) array "
        "for ManifoldLabelModel"
    )

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
        super().__init__(name, f, resources, pre)
        self.space = space
        self.atol = check_scalar(atol, "atol", low=0.0)

    def _votes(self) -> str:
        return f"points of {self.space!r}"

    def _repr_detail(self) -> str:
        return f"Space: {self.space!r}"

    def _error(self, x: Any, value: Any, problem: str) -> ValueError:
        return self._output_error(
            x,
            value,
            problem,
            f"Return a point of {self.space!r} (an array of {self._ambient_dim} "
            "coordinates) or None to abstain.",
        )

    def _vote(self, x: Any, width: int | None = None) -> np.ndarray | None:
        """Run the LF on ``x`` and check its point (``width``, the applier's
        ambient_dim, is already fixed by the space)."""
        value = self._run(x)
        if value is None:
            return None
        # float64 conversion would parse "4.0" and b"7" and read True as 1.0: a
        # vote the LF did not mean as a coordinate, so these are refused first.
        if _non_numeric(value):
            raise self._error(
                x, value, "not numeric (strings, bytes and bools are not coordinates)"
            )
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
        try:
            with np.errstate(invalid="ignore", divide="ignore"):
                projected = np.asarray(self.space.projection(point), dtype=np.float64)
        except ValueError as exc:  # e.g. the zero vector, which has no direction
            raise self._error(
                x, value, f"the point is off the manifold ({exc})"
            ) from None
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

    def __call__(self, x: Any) -> np.ndarray | None:
        """Label data point ``x``.

        Returns
        -------
        point : ndarray of shape (ambient_dim,) or None
            The (projected) point, or ``None`` when the LF abstains.
        """
        return self._vote(x)


@fill_doc(lf="ManifoldLabelingFunction", decorator="manifold_labeling_function")
class manifold_labeling_function(SpaceLFDecorator):
    """Decorator turning a function that returns points into a manifold LF.

    The manifold counterpart of ``snorkel.labeling.labeling_function``.

    Parameters
    ----------
    space : manifold
        The label space, e.g. ``Sphere(2)`` or ``Euclidean(1)``.
    %(decorator_options)s
    atol : float, default=1e-4
        Tolerance for projecting nearly-on-manifold outputs (see
        :class:`ManifoldLabelingFunction`).

    %(decorator_returns)s

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


class _BaseManifoldApplier(ArrayLFApplier[ManifoldLabelingFunction]):
    """Checks and stores a list of manifold LFs that share one label space."""

    _family = "Manifold"
    _lf_type = ManifoldLabelingFunction
    _lf_decorator = "@manifold_labeling_function(space=...)"
    _lf_tip = " Apply finite-space LFs with Snorkel's PandasLFApplier."
    _dtype = np.float64
    _fill_value = np.nan

    def _check_lfs(self, lfs: list[ManifoldLabelingFunction]) -> None:
        space = lfs[0].space
        for lf in lfs[1:]:
            if lf.space != space:
                raise ValueError(
                    f"All labeling functions must share one label space; "
                    f"{lfs[0].name!r} "
                    f"uses {space!r} but {lf.name!r} uses {lf.space!r}."
                )
        self.space = space
        self._ambient_dim = int(space.ambient_dim)

    def _resolve_width(self, width: int | None) -> int:
        return self._ambient_dim


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

    @fill_doc(vote="point")
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
        %(pandas_df)s
        progress_bar : bool, default=True
            Show a tqdm progress bar.
        %(pandas_faults)s

        Returns
        -------
        X : ndarray of shape (n_samples, n_lfs, ambient_dim)
            The LFs' points; NaN rows where an LF abstains (or faulted).
        %(pandas_meta)s
        """
        X, faults = self._label_pandas(df, None, fault_tolerant, progress_bar)
        return with_meta(X, faults, return_meta)


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

    @fill_doc()
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
        %(dask_df)s
        %(dask_options)s

        Returns
        -------
        X : ndarray of shape (n_samples, n_lfs, ambient_dim)
            NaN rows where an LF abstains.
        %(dask_meta)s
        """
        X, faults = self._label_dask(df, None, scheduler, fault_tolerant)
        return with_meta(X, faults, return_meta)


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
        return super().apply(
            pandas_to_dask(df, n_parallel),
            scheduler=scheduler,
            fault_tolerant=fault_tolerant,
            return_meta=return_meta,
        )
