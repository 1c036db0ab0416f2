"""Rankings of any number of items: votes, the Mallows model, fusion and decoding.

Unlike :class:`~snorkel_structured.Permutations`, nothing here enumerates S_n:
votes are stored as orderings padded with -1 (top-k lists) or as signed item
pairs, and the model's likelihood factorizes over item pairs.

- :mod:`._votes` (names below): the vote format and Kendall's tau;
- :mod:`.mallows`: the top-k Mallows model (moments, normalizer, sampler);
- :mod:`.estimate`: each LF's theta from unlabeled votes (triplets, Monte Carlo EM);
- :mod:`.dependencies`: LFs that share a source;
- :mod:`.fusion`: Borda, reciprocal rank fusion, Copeland;
- :mod:`.kemeny`: weighted Kemeny decoding (exact DP, integer program, heuristic).

The label model is :class:`~snorkel_structured.RankingLabelModel`.
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
from snorkel_structured.rankings.fusion import (
    borda,
    copeland,
    pairwise_majority_matrix,
    reciprocal_rank_fusion,
)
from snorkel_structured.rankings.kemeny import kemeny_objective, kemeny_rank
from snorkel_structured.rankings.mallows import sample_mallows

__all__ = [
    "borda",
    "check_orderings",
    "check_pairwise",
    "check_votes",
    "copeland",
    "kemeny_objective",
    "kemeny_rank",
    "kendall_tau_distance",
    "n_pairs",
    "pair_index",
    "pairwise_majority_matrix",
    "pairwise_votes",
    "reciprocal_rank_fusion",
    "sample_mallows",
    "vote_positions",
]
