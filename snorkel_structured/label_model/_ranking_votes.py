"""The form RankingLabelModel reads votes in: pairwise signs, with list lengths and positions."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from snorkel_structured.rankings._votes import (
    check_pairwise,
    check_votes,
    pair_index,
    vote_positions,
)

__all__ = ["PairVotes", "pair_votes"]


class PairVotes(NamedTuple):
    """Pairwise votes S (rows, LFs, pairs); list lengths k (rows, LFs) and item
    positions pos (rows, LFs, items) when the votes came as lists, else None."""

    S: np.ndarray
    k: np.ndarray | None
    pos: np.ndarray | None

    def take(self, rows: Any) -> PairVotes:
        """The votes of ``rows`` (a slice, mask or index array of rows)."""
        return PairVotes(*(None if v is None else v[rows] for v in self))


def _list_lengths(V: np.ndarray) -> np.ndarray:
    """(n_rows, n_lfs) number of items each vote lists (0 = abstain)."""
    return (V >= 0).sum(axis=2)


def pair_votes(V: Any, n_items: int, pairwise: bool, name: str) -> PairVotes:
    """The pairwise votes of ``V``, with list lengths and positions (None if pairwise)."""
    if pairwise:
        return PairVotes(check_pairwise(V, n_items), None, None)
    try:
        arr = check_votes(V, n_items)
    except ValueError as err:
        raise ValueError(
            f"{name}: {err} Votes are (n_rows, n_lfs, n_items) orderings padded "
            "with -1; pass pairwise=True for (n_rows, n_lfs, n_pairs) signed pairs."
        ) from None
    pos = vote_positions(arr)
    i, j = pair_index(n_items)
    S = np.sign(pos[..., j] - pos[..., i]).astype(np.int8)
    return PairVotes(S, _list_lengths(arr), pos)
