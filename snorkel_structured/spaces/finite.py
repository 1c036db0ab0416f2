"""Finite metric spaces: a set of items with a distance matrix.

Points of a finite space are integer indices ``0 .. r-1`` into ``space.items``;
``-1`` (ABSTAIN) stands for "no label" wherever indices are accepted.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from snorkel_structured._validation import ABSTAIN, check_distance_matrix

__all__ = ["DENSE_MAX_LABELS", "Discrete", "FiniteMetricSpace"]

# Spaces with more labels than this compute distance rows on demand (space.dist) instead
# of building the (r, r) matrix: S8 would need 13 GB.
DENSE_MAX_LABELS = 2048
# Label pairs per call of dist() when computing rows (bounds temporary arrays).
_ROW_BLOCK = 200_000


class FiniteMetricSpace:
    """A finite set of items with a (semi)metric.

    Parameters
    ----------
    items : sequence of hashable of length r
        The labels. They must be distinct.
    distances : array-like of shape (r, r)
        Pairwise distances: square, symmetric, finite, non-negative, zero diagonal,
        each 0 or within [1e-50, 1e50] (others raise ``ValueError``: the label models
        use squared distances, their variances d^4 and theta ~ 1 / d^2, which would
        overflow; the models are scale-invariant, so divide the distances by their
        largest value).
        Violations of the triangle inequality are accepted (see
        :meth:`max_triangle_violation`), since semimetrics embed just as well.

    Attributes
    ----------
    items : tuple of length r
    distance_matrix : ndarray of shape (r, r), read-only
    squared_distance_matrix : ndarray of shape (r, r), read-only

    Examples
    --------
    >>> import snorkel_structured as ss
    >>> space = ss.FiniteMetricSpace(["a", "b", "c"], [[0, 1, 2], [1, 0, 1], [2, 1, 0]])
    >>> len(space), space.index("c"), space.item(1)
    (3, 2, 'b')
    >>> space.encode(["c", None, "a"]).tolist()
    [2, -1, 0]
    >>> space.decode([2, -1])
    ['c', None]
    """

    def __init__(self, items: Sequence[Hashable], distances: Any) -> None:
        items = tuple(items)
        D = check_distance_matrix(distances, "distances")
        if len(items) != D.shape[0]:
            raise ValueError(
                f"items has {len(items)} entries but distances has shape {D.shape}; "
                "they must describe the same number of labels."
            )
        self._set_items(items)
        D.setflags(write=False)
        self.__dict__["distance_matrix"] = D

    def __getstate__(self) -> dict[str, Any]:
        # Tables computed on demand (cached properties) are left out of pickles and
        # copies: a Permutations(8) distance matrix would add 13 GB, and a space's
        # pickle (which scikit-learn hashes to check that fit leaves parameters
        # alone) then depends only on what defines the space.
        derived = {
            name
            for klass in type(self).__mro__
            for name, value in vars(klass).items()
            if isinstance(value, functools.cached_property)
        }
        if (
            type(self)._compute_distance_matrix
            is FiniteMetricSpace._compute_distance_matrix
        ):
            derived.discard("distance_matrix")  # given, not computed: it is the space
        return {k: v for k, v in self.__dict__.items() if k not in derived}

    # -- items ------------------------------------------------------------------
    def _set_items(self, items: tuple[Hashable, ...]) -> None:
        try:
            lookup = {item: i for i, item in enumerate(items)}
        except TypeError:
            raise TypeError("items must be hashable (use tuples, not lists).") from None
        if None in lookup:
            # None is the abstain of encode/decode: as an item it would be both.
            raise ValueError(
                f"items holds None at position {lookup[None]}; None means abstain "
                "(encode/decode map it to -1). Name that label otherwise."
            )
        if len(lookup) != len(items):
            seen: set[Hashable] = set()
            dup = next(x for x in items if x in seen or seen.add(x))  # type: ignore[func-returns-value]
            raise ValueError(f"items must be distinct; {dup!r} appears more than once.")
        self._items = items
        self._lookup = lookup

    @property
    def items(self) -> tuple[Hashable, ...]:
        """The labels, in index order."""
        return self._items

    def __len__(self) -> int:
        return len(self._items)

    @property
    def n_labels(self) -> int:
        """Number of labels r."""
        return len(self._items)

    def index(self, item: Hashable) -> int:
        """Index of ``item``; ``ValueError`` if it is not in the space."""
        try:
            return self._lookup[self._normalize_item(item)]
        except (KeyError, TypeError):
            raise ValueError(f"{item!r} is not an item of {self!r}.") from None

    def item(self, i: int) -> Hashable:
        """The item with index ``i``."""
        if not isinstance(i, (int, np.integer)) or not 0 <= i < len(self):
            raise ValueError(f"index must be an int in [0, {len(self)}); got {i!r}.")
        return self._items[int(i)]

    def _normalize_item(self, item: Any) -> Hashable:
        return item

    def encode(self, items: Iterable[Hashable | None]) -> np.ndarray:
        """Indices of ``items`` as an int64 array; ``None`` becomes -1 (abstain)."""
        return np.array(
            [ABSTAIN if x is None else self.index(x) for x in items], dtype=np.int64
        )

    def decode(self, indices: Any) -> list[Hashable | None]:
        """Items for an array of indices; -1 becomes ``None``."""
        idx = np.asarray(indices)
        if idx.dtype.kind not in "iu":
            raise ValueError(f"indices must be integers; got dtype {idx.dtype}.")
        flat = idx.ravel()
        bad = (flat < ABSTAIN) | (flat >= len(self))
        if bad.any():
            raise ValueError(
                f"index {int(flat[bad][0])} is outside the label space [0, {len(self)}) "
                "(-1 means abstain)."
            )
        return [None if i == ABSTAIN else self._items[i] for i in flat.tolist()]

    # -- distances --------------------------------------------------------------
    @functools.cached_property
    def distance_matrix(self) -> np.ndarray:
        """Pairwise distances, shape (r, r), read-only."""
        D = self._compute_distance_matrix()
        D.setflags(write=False)
        return D

    def _compute_distance_matrix(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    @functools.cached_property
    def squared_distance_matrix(self) -> np.ndarray:
        """Pairwise squared distances, shape (r, r), read-only."""
        S = np.square(self.distance_matrix)
        S.setflags(write=False)
        return S

    def dist(self, i: Any, j: Any) -> np.ndarray:
        """Distance between label indices ``i`` and ``j`` (broadcast)."""
        return self.distance_matrix[np.asarray(i), np.asarray(j)]

    def squared_distance_rows(self, indices: Any) -> np.ndarray:
        """Rows ``S[indices, :]`` of the squared distances, shape (len(indices), r).

        Small spaces (or ones whose matrix is already built) slice the matrix; larger
        ones compute the rows with :meth:`dist` in blocks and never build the matrix.
        """
        idx = np.asarray(indices, dtype=np.int64).ravel()
        r = len(self)
        if r <= DENSE_MAX_LABELS or "distance_matrix" in self.__dict__:
            return np.array(self.squared_distance_matrix[idx])
        out = np.empty((idx.size, r))
        step = max(1, _ROW_BLOCK // r)
        everything = np.arange(r)
        for start in range(0, idx.size, step):  # bounded memory per block of rows
            d = self.dist(idx[start : start + step, None], everything[None, :])
            out[start : start + step] = d * d
        return out

    def max_triangle_violation(self) -> float:
        """Largest ``d(i, k) - d(i, j) - d(j, k)`` over all triples (<= 0 for a metric).

        Computed one middle point at a time, so memory stays at O(r^2).
        """
        D = self.distance_matrix
        worst = -np.inf
        for j in range(len(self)):  # r passes of O(r^2) vectorized work
            worst = max(worst, float((D - D[:, j, None] - D[None, j, :]).max()))
        return worst

    def is_metric(self, atol: float = 1e-9) -> bool:
        """Whether the triangle inequality holds (up to ``atol``) and items are separated."""
        D = self.distance_matrix
        off = D[~np.eye(len(self), dtype=bool)]
        return bool((off > 0).all()) and self.max_triangle_violation() <= atol

    # -- value-object protocol --------------------------------------------------
    def _key(self) -> tuple[Any, ...]:
        return (self._items, self.distance_matrix.tobytes())

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, len(self)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_labels={len(self)})"


class Discrete(FiniteMetricSpace):
    """Plain classes ``0 .. cardinality-1`` under the 0/1 metric.

    Parameters
    ----------
    cardinality : int
        Number of classes (>= 2).

    Examples
    --------
    >>> import snorkel_structured as ss
    >>> ss.Discrete(cardinality=3).distance_matrix.tolist()
    [[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]
    """

    def __init__(self, cardinality: int) -> None:
        if (
            not isinstance(cardinality, (int, np.integer))
            or isinstance(cardinality, bool)
            or cardinality < 2
        ):
            raise ValueError(f"cardinality must be an int >= 2; got {cardinality!r}.")
        self.cardinality = int(cardinality)
        self._set_items(tuple(range(self.cardinality)))

    def _compute_distance_matrix(self) -> np.ndarray:
        return 1.0 - np.eye(self.cardinality)

    def _key(self) -> tuple[Any, ...]:
        return (self.cardinality,)

    def __repr__(self) -> str:
        return f"Discrete(cardinality={self.cardinality})"
