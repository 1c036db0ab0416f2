"""What the manifold and ranking labeling functions and their appliers share.

Snorkel's ``LabelingFunction`` and LF appliers collect one integer per vote. Manifold
LFs (a vote is a point) and ranking LFs (a vote is an ordering of a row's items)
follow their call pattern (preprocessors, resources, fault tolerance,
``ApplierMetadata``) in classes of their own, built on the bases here:

- :class:`ArrayLabelingFunction`: name (refused to Snorkel's appliers), preprocessors,
  resources, repr; a subclass checks one output in ``_vote(x, width)`` and returns a
  1-D array of at most ``width`` values, or ``None`` to abstain;
- :class:`ArrayLFApplier`: checks the LF list, and runs it over a pandas frame (row
  loop, fault tolerance, progress bar) or a Dask frame (one task per partition) into
  an array of shape ``(n_rows, n_lfs, width)``; a subclass names its LF class, the
  array's dtype and fill value (what an abstain leaves), and how ``width`` is found.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
import pandas as pd
from snorkel.labeling.apply.core import ApplierMetadata
from snorkel.utils.data_operators import check_unique_names
from tqdm import tqdm

from snorkel_structured._validation import check_scalar
from snorkel_structured.labeling._common import describe_row, short_repr

__all__ = [
    "ArrayLFApplier",
    "ArrayLabelingFunction",
    "label_rows",
    "pandas_to_dask",
    "with_meta",
]

_LF = TypeVar("_LF", bound="ArrayLabelingFunction")

# Modules of Snorkel's LF appliers (snorkel.labeling.apply.core, .pandas, .dask, ...).
_SNORKEL_APPLIERS = "snorkel.labeling.apply"


class ArrayLabelingFunction:
    """A labeling function whose vote is an array, which Snorkel's appliers cannot hold.

    Subclasses set ``_apply_with`` (how to apply them instead, for the refusal message)
    and define ``_votes`` (what a vote is), ``_repr_detail`` and ``_vote``.
    """

    _apply_with: ClassVar[str]

    def __init__(
        self,
        name: str,
        f: Callable[..., Any],
        resources: Mapping[str, Any] | None = None,
        pre: Sequence[Any] | None = None,
    ) -> None:
        self._name = name
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
            ``DaskLFApplier``, ...), which collect one integer per vote and would fail
            later inside Snorkel (numpy's "truth value of an array is ambiguous").
        """
        # Snorkel's BaseLFApplier.__init__ reads every LF's name first: refusing here
        # names the problem at construction, before a fault-tolerant apply could
        # swallow the failures as faults (one frame lookup, no traceback walk).
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller.startswith(_SNORKEL_APPLIERS):
            raise TypeError(
                f"Labeling function {self._name!r} votes {self._votes()}, but "
                "Snorkel's LF appliers (PandasLFApplier, LFApplier, DaskLFApplier, ...) "
                f"only handle integer votes. Apply {self._apply_with}."
            )
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value

    def _votes(self) -> str:  # pragma: no cover - abstract
        """What a vote is, e.g. ``"points of Sphere(dim=2)"``."""
        raise NotImplementedError

    def _repr_detail(self) -> str:  # pragma: no cover - abstract
        """The LF's label-space part of its repr, e.g. ``"Space: Sphere(dim=2)"``."""
        raise NotImplementedError

    def _vote(self, x: Any, width: int | None) -> np.ndarray | None:  # pragma: no cover
        """Run the LF on ``x`` and check its output: a 1-D array or ``None``."""
        raise NotImplementedError

    def _preprocess_data_point(self, x: Any) -> Any:
        for preprocessor in self._pre:
            x = preprocessor(x)
            if x is None:
                raise ValueError(
                    f"Preprocessor {preprocessor!r} of labeling function {self.name!r} "
                    "returned None; preprocessors must return the data point."
                )
        return x

    def _run(self, x: Any) -> Any:
        """The unchecked output of ``f`` on the preprocessed ``x``."""
        return self._f(self._preprocess_data_point(x), **self._resources)

    def _output_error(
        self, x: Any, value: Any, problem: str, expected: str
    ) -> ValueError:
        """The error for an invalid output ``value`` on ``x``; ``expected`` says what to
        return instead."""
        return ValueError(
            f"Labeling function {self.name!r} returned {short_repr(value)} for "
            f"{describe_row(x)}: {problem}. {expected}"
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__} {self.name}, {self._repr_detail()}, "
            f"Preprocessors: {self._pre}"
        )


def label_rows(
    df: pd.DataFrame,
    lfs: Sequence[ArrayLabelingFunction],
    width: int,
    fill_value: Any,
    dtype: Any,
    fault_tolerant: bool,
    progress_bar: bool = False,
) -> tuple[np.ndarray, dict[str, int]]:
    """Run ``lfs`` over a pandas frame: (n, m, width) votes and fault counts.

    A vote fills the start of its ``out[i, j]``; the rest (all of it when the LF
    abstains or faults) keeps ``fill_value``.
    """
    out = np.full((len(df), len(lfs), width), fill_value, dtype=dtype)
    faults: dict[str, int] = {}
    rows = tqdm(df.iterrows(), total=len(df), disable=not progress_bar)
    for i, (_, x) in enumerate(rows):
        for j, lf in enumerate(lfs):
            if fault_tolerant:
                try:
                    vote = lf._vote(x, width)
                except Exception:  # noqa: BLE001 - Snorkel's fault-tolerance semantics
                    faults[lf.name] = faults.get(lf.name, 0) + 1
                    continue
            else:
                vote = lf._vote(x, width)
            if vote is not None:
                out[i, j, : vote.size] = vote
    return out, faults


def with_meta(
    out: np.ndarray, faults: dict[str, int], return_meta: bool
) -> np.ndarray | tuple[np.ndarray, ApplierMetadata]:
    """``out``, with Snorkel's ``ApplierMetadata`` of ``faults`` if ``return_meta``."""
    if return_meta:
        return out, ApplierMetadata(faults)
    return out


def pandas_to_dask(df: pd.DataFrame, n_parallel: Any) -> Any:
    """Split a pandas frame into ``n_parallel`` (at least 2) Dask partitions, its rows
    in their order (Dask's default sorts them by the index, and the votes would then
    follow the sorted index, not ``df``'s rows)."""
    from dask import dataframe as dd

    n_parallel = check_scalar(n_parallel, "n_parallel", kind="int", low=2)
    return dd.from_pandas(df, npartitions=n_parallel, sort=False)


class ArrayLFApplier(Generic[_LF]):
    """Checks and stores a list of array-voting LFs; labels pandas and Dask frames.

    Subclasses set the class attributes below, may check more in ``_check_lfs`` (that
    the LFs agree on a label space), and say in ``_resolve_width`` how long a vote is.
    """

    # "Manifold" names ManifoldPandasApplier and ManifoldDaskApplier in messages.
    _family: ClassVar[str]
    # The LF class (_LF, checked at run time), how to build one (for the error on
    # anything else, e.g. "@ranking_labeling_function()") and what to add to it.
    _lf_type: ClassVar[type[ArrayLabelingFunction]]
    _lf_decorator: ClassVar[str]
    _lf_tip: ClassVar[str] = ""
    # The vote array's dtype, and what an abstain (or a fault) leaves in it.
    _dtype: ClassVar[Any]
    _fill_value: ClassVar[Any]

    def __init__(self, lfs: Sequence[_LF]) -> None:
        lfs = list(lfs)
        if not lfs:
            raise ValueError("lfs must hold at least one labeling function; got [].")
        for lf in lfs:
            if not isinstance(lf, self._lf_type):
                raise TypeError(
                    f"lfs must be {self._lf_type.__name__} objects (use "
                    f"{self._lf_decorator}); got {lf!r}.{self._lf_tip}"
                )
        names = [lf.name for lf in lfs]
        check_unique_names(names)
        self._check_lfs(lfs)
        self._lfs = lfs
        self._lf_names = names

    def _check_lfs(self, lfs: list[_LF]) -> None:
        """Check (and record) what the LFs must agree on; nothing by default."""

    def _resolve_width(self, width: int | None) -> int:  # pragma: no cover - abstract
        """The length of a vote, from ``apply``'s argument (or the LFs)."""
        raise NotImplementedError

    def _label_pandas(
        self,
        df: pd.DataFrame,
        width: int | None,
        fault_tolerant: bool,
        progress_bar: bool,
    ) -> tuple[np.ndarray, dict[str, int]]:
        """Label a pandas frame row by row: the vote array and fault counts."""
        if not isinstance(df, pd.DataFrame):
            raise TypeError(
                f"df must be a pandas DataFrame; got {type(df).__name__}. Use "
                f"{self._family}DaskApplier for Dask DataFrames."
            )
        return label_rows(
            df,
            self._lfs,
            self._resolve_width(width),
            self._fill_value,
            self._dtype,
            fault_tolerant,
            progress_bar,
        )

    def _label_dask(
        self, df: Any, width: int | None, scheduler: Any, fault_tolerant: bool
    ) -> tuple[np.ndarray, dict[str, int]]:
        """Label a Dask frame, a task per partition: the vote array and fault counts.

        Votes and fault counts are gathered and concatenated in partition order, so
        the counts are exact under any scheduler.
        """
        import dask
        from dask import dataframe as dd

        # Not duck-typed on to_delayed: a Dask Series or Array has it too (and a Series
        # has columns), but its partitions have no rows for the LFs, which would fail
        # inside a task with "'Series' object has no attribute 'iterrows'".
        if not isinstance(df, dd.DataFrame):
            raise TypeError(
                f"df must be a Dask DataFrame; got {type(df).__name__}. Use "
                f"{self._family}PandasApplier for pandas DataFrames; turn a Dask "
                "Series into a DataFrame with series.to_frame(), a Dask Array with "
                "dask.dataframe.from_dask_array(array, columns=[...])."
            )
        width = self._resolve_width(width)
        tasks = [
            dask.delayed(label_rows)(
                part, self._lfs, width, self._fill_value, self._dtype, fault_tolerant
            )
            for part in df.to_delayed()
        ]
        results = dask.compute(*tasks, scheduler=scheduler)
        if results:
            out = np.concatenate([r[0] for r in results], axis=0)
        else:  # pragma: no cover - a Dask frame always has a partition
            out = np.full(
                (0, len(self._lfs), width), self._fill_value, dtype=self._dtype
            )
        faults: dict[str, int] = {}
        for _, part_faults in results:
            for name, count in part_faults.items():
                faults[name] = faults.get(name, 0) + count
        return out, faults

    def __repr__(self) -> str:
        return f"{type(self).__name__}, LFs: {self._lf_names}"
