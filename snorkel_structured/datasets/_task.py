"""The container every loader returns: votes, truth, label space and the task's metric."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from snorkel_structured._validation import ABSTAIN

__all__ = ["WeakSupervisionTask"]


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

        Returns
        -------
        filled : ndarray of the same shape (a new array).
        """
        if self.kind == "finite":
            pred = np.asarray(pred, dtype=np.int64)
            return np.where(pred == ABSTAIN, int(self.fallback), pred)
        pred = np.array(pred, dtype=np.float64)
        missing = np.isnan(pred).any(axis=-1)
        pred[missing] = self.fallback
        return pred

    def errors(self, pred: Any, Y: Any) -> np.ndarray:
        """Per-row task metric of ``pred`` against ``Y``, abstains scored as the fallback.

        Parameters
        ----------
        pred : array-like of shape (n_samples,) or (n_samples, ambient_dim)
        Y : array-like of the same shape

        Returns
        -------
        errors : ndarray of shape (n_samples,)
        """
        pred = self.fill_abstains(pred)
        Y = np.asarray(Y)
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
