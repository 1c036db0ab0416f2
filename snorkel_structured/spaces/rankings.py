"""Rankings of any number of items, as a label space that is never enumerated."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from snorkel_structured._validation import check_seed
from snorkel_structured.rankings._votes import (
    check_orderings,
    kendall_tau_distance,
    n_pairs,
)

__all__ = ["Rankings"]


class Rankings:
    """Full orderings of ``n_items`` items under Kendall's tau, for any ``n_items``.

    A label is an ordering (best first) of the item ids ``0..n_items-1``, held as
    an int array of shape (n_items,); batches are (n_rows, n_items). Unlike
    :class:`~snorkel_structured.Permutations`, which lists all ``n_items!`` labels
    (up to 8 items), nothing here enumerates the space: the models over it work on
    item pairs (see :class:`~snorkel_structured.RankingLabelModel`).

    Parameters
    ----------
    n_items : int
        At least 2.
    """

    metric = "kendall_tau"

    def __init__(self, n_items: int) -> None:
        if (
            not isinstance(n_items, numbers.Integral)
            or isinstance(n_items, bool)
            or n_items < 2
        ):
            raise ValueError(f"n_items must be an int >= 2; got {n_items!r}.")
        self.n_items = int(n_items)

    @property
    def n_pairs(self) -> int:
        """Number of item pairs, ``n_items (n_items - 1) / 2``."""
        return n_pairs(self.n_items)

    def belongs(self, Y: Any) -> np.ndarray:
        """Whether each row of ``Y`` (n_rows, n_items) is an ordering of the items."""
        Y = np.atleast_2d(np.asarray(Y))
        if Y.ndim != 2 or Y.shape[1] != self.n_items:
            return np.zeros(Y.shape[0] if Y.ndim else 1, dtype=bool)
        return np.all(np.sort(Y, axis=1) == np.arange(self.n_items), axis=1)

    def dist(self, a: Any, b: Any) -> np.ndarray:
        """Kendall's tau distance (number of discordant pairs) between orderings."""
        a2 = check_orderings(np.atleast_2d(a), self.n_items, name="a")
        b2 = check_orderings(np.atleast_2d(b), self.n_items, name="b")
        a2, b2 = np.broadcast_arrays(a2, b2)
        d = kendall_tau_distance(a2, b2, normalize=False)
        return d[0] if np.ndim(a) == 1 and np.ndim(b) == 1 else d

    def random_point(self, n_samples: int = 1, seed: Any = None) -> np.ndarray:
        """Uniformly random orderings, shape (n_samples, n_items)."""
        rng = check_seed(seed)
        return np.argsort(rng.random((n_samples, self.n_items)), axis=1)

    def __len__(self) -> int:
        raise TypeError(
            f"Rankings({self.n_items}) has n_items! labels and is never enumerated; "
            "use Permutations(n_items) (n_items <= 8) for a finite label space."
        )

    def __eq__(self, other: object) -> bool:
        return type(other) is Rankings and other.n_items == self.n_items

    def __hash__(self) -> int:
        return hash(("Rankings", self.n_items))

    def __repr__(self) -> str:
        return f"Rankings(n_items={self.n_items})"
