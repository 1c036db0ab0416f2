"""Declared dependencies between LFs: validation and the groups' vote weights.

A group of mutually dependent LFs (a connected component of the declared pairs) shares
its errors, so counting each member as independent evidence double counts them. The
label models give each member of a group of g LFs the weight 1/g in the likelihood and
the posterior: the group speaks with one voice (exactly right when the members copy
each other, conservative when they only share part of their errors).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from snorkel_structured import _warnings
from snorkel_structured.exceptions import IdentifiabilityWarning

__all__ = [
    "DEPENDENCE_MIN_EXCESS",
    "DEPENDENCE_MIN_RATIO",
    "check_dependencies",
    "dependency_groups",
    "dependency_weights",
    "is_auto",
]

# dependencies="auto" declares a flagged pair only when its LFs are at least this many
# times closer than independence predicts (finite: agree this many times as often;
# manifolds: d^2, 1 - cos d or cosh d - 1 this many times smaller), or when
# independence predicts nothing.
DEPENDENCE_MIN_RATIO = 2.0
# ... or (finite spaces) when their agreement has gone at least this share of the way
# from what independence predicts to always agreeing (an exact copy of an LF that is
# right half the time agrees 1 / 0.5 = 2 times as often: a ratio cannot tell it).
DEPENDENCE_MIN_EXCESS = 0.5


def is_auto(dependencies: Any) -> bool:
    """Whether ``fit``'s ``dependencies`` asks for detection ("auto"); another string
    is refused."""
    if not isinstance(dependencies, str):
        return False
    if dependencies != "auto":
        raise ValueError(
            f"dependencies must be 'auto', None or pairs of LF indices; got "
            f"{dependencies!r}."
        )
    return True


def check_dependencies(dependencies: Any, n_lfs: int) -> list[tuple[int, int]]:
    """Validated pairs (a, b), a < b, without repeats; [] for None."""
    if dependencies is None:
        return []
    pairs = []
    for item in dependencies:
        try:
            a, b = item
        except (TypeError, ValueError):
            raise ValueError(
                f"dependencies must be pairs of LF indices like [(0, 1), (2, 3)]; got "
                f"{item!r}."
            ) from None
        for v in (a, b):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise ValueError(
                    f"dependencies must hold integer LF indices; got {item!r}."
                )
            if not 0 <= int(v) < n_lfs:
                raise ValueError(
                    f"dependencies pair {item!r} names an LF outside [0, {n_lfs})."
                )
        if int(a) == int(b):
            raise ValueError(f"dependencies pair {item!r} pairs an LF with itself.")
        pairs.append((min(int(a), int(b)), max(int(a), int(b))))
    return sorted(set(pairs))


def dependency_groups(pairs: list[tuple[int, int]], n_lfs: int) -> np.ndarray:
    """Group label of each LF (connected components of the pairs), shape (n_lfs,)."""
    if not pairs:
        return np.arange(n_lfs)
    a, b = np.array(pairs).T
    graph = coo_matrix((np.ones(a.size), (a, b)), shape=(n_lfs, n_lfs))
    return connected_components(graph, directed=False)[1]


def dependency_weights(pairs: list[tuple[int, int]], n_lfs: int) -> np.ndarray | None:
    """1/g for each LF of a group of g dependent LFs; None when there are no pairs.

    Warns (``IdentifiabilityWarning``) when fewer than 3 groups remain: three
    conditionally independent sources are what identifies each one's noise.
    """
    if not pairs:
        return None
    groups = dependency_groups(pairs, n_lfs)
    sizes = np.bincount(groups)
    if sizes.size < 3:
        _warnings.warn(
            f"The dependencies leave {sizes.size} groups of independent LFs; at "
            "least 3 are needed to identify each LF's noise, so the label model "
            "gives every LF the same theta (the unweighted vote; on Discrete the "
            "data may choose one theta per class, shared by the LFs, see "
            "noise_model_; with outliers, an LF that strays from the rest is still "
            "discounted, see outlier_rate_). Add "
            "LFs that use other sources, or label a few rows (L_dev, Y_dev).",
            IdentifiabilityWarning,
            stacklevel=4,
        )
    return 1.0 / sizes[groups]
