"""The container every loader returns: votes, truth, label space and the task's metric."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from snorkel_structured._validation import ABSTAIN, check_scalar

__all__ = ["WeakSupervisionTask", "check_train_fraction"]

# How far from a manifold task's space a prediction may lie (the default atol of the
# spaces' ``belongs`` and of the library's point checks, e.g. ``check_points``).
BELONGS_ATOL = 1e-6


def check_train_fraction(train_fraction: Any) -> float:
    """``train_fraction`` of a split as a float in the open interval (0, 1)."""
    return check_scalar(
        train_fraction,
        "train_fraction",
        low=0.0,
        high=1.0,
        low_inclusive=False,
        high_inclusive=False,
    )


@dataclass(frozen=True, eq=False)
class WeakSupervisionTask:
    """A weak-supervision task on real data: LF votes, held-out truth and a metric.

    Parameters
    ----------
    name : str
        Short identifier (the loader's name without ``load_``).
    kind : {"finite", "manifold"}
        ``"finite"``: labels are indices into a finite metric space and ``L_*`` are
        int matrices (-1 = abstain). ``"manifold"``: labels are points in the
        space's ambient coordinates and ``L_*`` are float arrays with a row of NaN
        for an abstain.
    space : FiniteMetricSpace, Euclidean or Sphere
        The label space.
    L_train, L_test : ndarray of shape (n_samples, n_lfs) or (n_samples, n_lfs, ambient_dim)
        LF outputs on the training and the held-out rows.
    Y_train, Y_test : ndarray of shape (n_samples,) or (n_samples, ambient_dim)
        True labels: for evaluation (and for a small labeled dev set drawn from the
        training rows) only. No LF reads them.
    lf_names : tuple of str
        One name per LF (column of ``L_*``).
    metric : str
        What :meth:`distance` measures, with its unit.
    distance : callable
        ``distance(pred, Y) -> ndarray of shape (n_samples,)``, the task metric per
        row (lower is better) for predictions without abstains.
    normalizer : float
        The scale that maps the metric into [0, 1] (the space's diameter, or a
        stated scale for Euclidean targets); :meth:`normalized_errors` divides by it.
    fallback : int or ndarray of shape (ambient_dim,)
        The answer scored for a row a method abstains on (a label index, or a
        point), chosen without any truth: for finite spaces the label minimizing the
        summed distance to all candidate labels (``prior_support`` or the whole
        space), for manifolds the unweighted Frechet mean of every training vote.
    prior_support : ndarray of int, optional
        Labels the truth can take, when known from the task's design (e.g. the
        leaves of a tree); None when not applicable.
    description : str
        One paragraph: the rows, the label, the LFs and their sources.

    Notes
    -----
    Every method of a benchmark is scored by the same rule: a row where the
    method abstains (-1, or NaN) gets :attr:`fallback`, so abstaining costs the
    metric of a know-nothing answer; rows are never dropped.
    """

    name: str
    kind: str
    space: Any
    L_train: np.ndarray
    L_test: np.ndarray
    Y_train: np.ndarray
    Y_test: np.ndarray
    lf_names: tuple[str, ...]
    metric: str
    distance: Callable[[Any, Any], np.ndarray]
    normalizer: float
    fallback: Any
    prior_support: np.ndarray | None = None
    description: str = field(default="", repr=False)

    @property
    def n_lfs(self) -> int:
        """Number of labeling functions."""
        return int(self.L_train.shape[1])

    @property
    def n_train(self) -> int:
        """Number of training rows."""
        return int(self.L_train.shape[0])

    @property
    def n_test(self) -> int:
        """Number of held-out rows."""
        return int(self.L_test.shape[0])

    def fill_abstains(self, pred: Any) -> np.ndarray:
        """``pred`` with abstains (-1 or NaN rows) replaced by :attr:`fallback`.

        Parameters
        ----------
        pred : array-like of shape (n_samples,) or (n_samples, ambient_dim)
            Finite tasks: label indices, whole numbers in ``[-1, len(space))``.
            Manifold tasks: points of :attr:`space` (e.g. unit vectors on a
            sphere), or a row of NaN for an abstain.

        Returns
        -------
        filled : ndarray of the same shape (a new array).

        Raises
        ------
        ValueError
            If an entry of ``pred`` is not a label index or -1 (finite tasks), or
            is not a finite point of :attr:`space` once abstains are filled
            (manifold tasks).
        """
        if self.kind == "finite":
            pred = self._label_indices(pred, "pred", allow_abstain=True)
            return np.where(pred == ABSTAIN, int(self.fallback), pred)
        pred = np.array(pred, dtype=np.float64)
        self._check_point_shape(pred, "pred")
        missing = np.isnan(pred).any(axis=-1)
        pred[missing] = self.fallback
        self._check_points(pred, "pred")
        return pred

    def _label_indices(self, x: Any, name: str, *, allow_abstain: bool) -> np.ndarray:
        """``x`` as int64 label indices of the finite space, or a ValueError."""
        r = len(self.space)
        low = ABSTAIN if allow_abstain else 0
        allowed = (
            f"label indices in [0, {r}) of task.space, or -1 to abstain"
            if allow_abstain
            else f"label indices in [0, {r}) of task.space (the truth cannot abstain)"
        )
        arr = np.asarray(x)
        if arr.dtype.kind not in "iuf":
            raise ValueError(
                f"{name} must hold {allowed}; got dtype {arr.dtype}. Encode labels "
                "with task.space.encode(...)."
            )
        if arr.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                bad = ~np.isfinite(arr) | (arr != np.round(arr))
            if bad.any():
                raise ValueError(
                    f"{name} has {_entry(arr, bad)}, which is not a whole number; "
                    f"{name} must hold {allowed}."
                )
        bad = (arr < low) | (arr >= r)
        if bad.any():
            raise ValueError(
                f"{name} has {_entry(arr, bad)}, which is out of range; {name} must "
                f"hold {allowed}."
            )
        return arr.astype(np.int64)

    def _check_point_shape(self, x: np.ndarray, name: str) -> None:
        dim = self.space.ambient_dim
        if x.ndim < 1 or x.shape[-1] != dim:
            raise ValueError(
                f"{name} must have shape (n_samples, {dim}) for {self.space!r}; got "
                f"shape {x.shape}."
            )

    def _check_points(self, x: np.ndarray, name: str) -> None:
        """A ValueError if a point of ``x`` is not finite or off :attr:`space`."""
        with np.errstate(invalid="ignore", over="ignore"):
            finite = np.isfinite(x).all(axis=-1)
            if not finite.all():
                hint = (
                    "a row of NaN is an abstain"
                    if name == "pred"
                    else "the truth cannot abstain"
                )
                raise ValueError(
                    f"{name} has {_entry(x, ~finite)}, which is not finite; give "
                    f"finite points of {self.space!r} ({hint})."
                )
            on = self.space.belongs(x, atol=BELONGS_ATOL)
        if not np.all(on):
            raise ValueError(
                f"{name} has {_entry(x, ~on)}, which is off {self.space!r} (beyond "
                f"atol={BELONGS_ATOL}); project it with task.space.projection({name})."
            )

    def errors(self, pred: Any, Y: Any) -> np.ndarray:
        """Per-row task metric of ``pred`` against ``Y``, abstains scored as the fallback.

        Parameters
        ----------
        pred : array-like of shape (n_samples,) or (n_samples, ambient_dim)
            See :meth:`fill_abstains`.
        Y : array-like of the same shape
            The truth: label indices in ``[0, len(space))`` (finite tasks) or points
            of :attr:`space` (manifold tasks).

        Returns
        -------
        errors : ndarray of shape (n_samples,)

        Raises
        ------
        ValueError
            If ``pred`` or ``Y`` holds an entry that is not a label (or -1 in
            ``pred``) of a finite task, or not a finite point of the space of a
            manifold task, or if their shapes differ.
        """
        pred = self.fill_abstains(pred)
        if self.kind == "finite":
            Y = self._label_indices(Y, "Y", allow_abstain=False)
        else:
            Y = np.asarray(Y)
            if pred.shape == Y.shape:
                self._check_points(np.asarray(Y, dtype=np.float64), "Y")
        if pred.shape != Y.shape:
            raise ValueError(
                f"pred must have the shape of Y, {Y.shape}; got {pred.shape}."
            )
        return np.asarray(self.distance(pred, Y), dtype=np.float64)

    def normalized_errors(self, pred: Any, Y: Any) -> np.ndarray:
        """:meth:`errors` divided by :attr:`normalizer` (values in [0, 1])."""
        return self.errors(pred, Y) / self.normalizer

    def __repr__(self) -> str:
        return (
            f"WeakSupervisionTask(name={self.name!r}, kind={self.kind!r}, "
            f"space={self.space!r}, n_train={self.n_train}, n_test={self.n_test}, "
            f"lf_names={self.lf_names!r}, metric={self.metric!r})"
        )


def _entry(x: np.ndarray, bad: np.ndarray) -> str:
    """The first flagged entry of ``x``, as "<value> at row i" for messages."""
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    value = x[where]
    shown = value.item() if np.ndim(value) == 0 else value.tolist()
    at = f"row {where[0]}" if len(where) == 1 else f"index {where}"
    return f"{shown!r} at {at}"


def finite_fallback(space: Any, support: np.ndarray | None) -> int:
    """The label minimizing the summed distance to ``support`` (default all labels)."""
    D = space.distance_matrix
    cols = np.arange(len(space)) if support is None else np.asarray(support)
    return int(np.argmin(D[:, cols].sum(axis=1)))


def manifold_fallback(space: Any, L_train: np.ndarray) -> np.ndarray:
    """Unweighted Frechet mean of every training vote (NaN rows are skipped)."""
    points = L_train.reshape(1, -1, L_train.shape[-1])
    return space.frechet_mean(points)[0]


def finite_distance(space: Any) -> Callable[[Any, Any], np.ndarray]:
    """Per-row distance ``D[pred, Y]`` of a finite metric space."""
    D = space.distance_matrix

    def distance(pred: Any, Y: Any) -> np.ndarray:
        return D[np.asarray(pred, dtype=np.int64), np.asarray(Y, dtype=np.int64)]

    return distance
