"""Rankings of any number of items: votes, the Mallows model and Kemeny decoding.

Unlike :class:`~snorkel_structured.Permutations`, nothing here enumerates S_n:
votes are stored as orderings padded with -1 (top-k lists) or as signed item
pairs, and the model's likelihood factorizes over item pairs.
"""

from snorkel_structured.rankings._votes import (
    check_orderings,
    check_pairwise,
    check_votes,
    kendall_tau_distance,
    n_pairs,
    pair_index,
    pairwise_votes,
    vote_positions,
)

__all__ = [
    "check_orderings",
    "check_pairwise",
    "check_votes",
    "kendall_tau_distance",
    "n_pairs",
    "pair_index",
    "pairwise_votes",
    "vote_positions",
]
