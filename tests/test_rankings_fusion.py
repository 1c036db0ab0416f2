"""Tests of the rank-fusion baselines: hand-computed cases, a brute-force reference."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from snorkel_structured.rankings import check_orderings, pair_index, pairwise_votes
from snorkel_structured.rankings.fusion import (
    borda,
    copeland,
    pairwise_majority_matrix,
    reciprocal_rank_fusion,
)

METHODS = (borda, reciprocal_rank_fusion, copeland)

# One row of 4 items: a full list, a top-2 list, an abstain.
V4 = np.array([[[3, 1, 0, 2], [1, 3, -1, -1], [-1, -1, -1, -1]]])


# --- brute-force references, one row and one LF at a time ---------------------------
# Exact rational arithmetic (the weights' binary values as fractions): a tie is a tie.


def _lists(V, r):
    return [[int(x) for x in V[r, a] if x >= 0] for a in range(V.shape[1])]


def _order(score):
    return sorted(range(len(score)), key=lambda i: (-score[i], i))


def _ref_borda(V, w):
    n = V.shape[2]
    out = []
    for r in range(V.shape[0]):
        score = [Fraction(0)] * n
        for a, lst in enumerate(_lists(V, r)):
            if not lst:
                continue
            rest = [n - 1 - p for p in range(len(lst), n)]
            share = Fraction(sum(rest), len(rest)) if rest else Fraction(0)
            pts = [share] * n
            for p, i in enumerate(lst):
                pts[i] = Fraction(n - 1 - p)
            score = [s + Fraction(w[a]) * x for s, x in zip(score, pts, strict=True)]
        out.append(_order(score))
    return np.array(out)


def _ref_rrf(V, w, k):
    n = V.shape[2]
    out = []
    for r in range(V.shape[0]):
        score = [Fraction(0)] * n
        for a, lst in enumerate(_lists(V, r)):
            pts = [Fraction(0)] * n
            for p, i in enumerate(lst):
                pts[i] = 1 / (Fraction(k) + p + 1)
            score = [s + Fraction(w[a]) * x for s, x in zip(score, pts, strict=True)]
        out.append(_order(score))
    return np.array(out)


def _before(lst, i, j):
    """Whether a top-k list puts i before j."""
    if i in lst:
        return j not in lst or lst.index(i) < lst.index(j)
    return False


def _ref_majority(V, w):
    n_rows, _, n = V.shape
    C = np.full((n_rows, n, n), Fraction(0), dtype=object)
    for r in range(n_rows):
        for a, lst in enumerate(_lists(V, r)):
            for i in range(n):
                for j in range(n):
                    if i != j and _before(lst, i, j):
                        C[r, i, j] += Fraction(w[a])
    return C


def _ref_copeland(V, w):
    C = _ref_majority(V, w)
    n = V.shape[2]
    out = []
    for r in range(V.shape[0]):
        score = [Fraction(0)] * n
        for i in range(n):
            for j in range(n):
                if i != j:
                    if C[r, i, j] > C[r, j, i]:
                        score[i] += 1
                    elif C[r, i, j] == C[r, j, i]:
                        score[i] += Fraction(1, 2)
        out.append(_order(score))
    return np.array(out)


def _random_votes(rng, n_rows, n_lfs, n_items):
    V = np.full((n_rows, n_lfs, n_items), -1, dtype=np.int64)
    for r in range(n_rows):
        for a in range(n_lfs):
            k = rng.choice(
                [0, 1, 2, n_items - 1, n_items, rng.integers(0, n_items + 1)]
            )
            V[r, a, :k] = rng.permutation(n_items)[:k]
    return V


# --- hand-computed cases -------------------------------------------------------------


def test_borda_hand_computed_top_k_and_abstain():
    # LF 0: 3:3, 1:2, 0:1, 2:0; LF 1 (top-2): 1:3, 3:2, and items 0, 2 share the
    # points of positions 2, 3: (1 + 0) / 2 = 0.5; LF 2 abstains.
    # Totals 0: 1.5, 1: 5, 2: 0.5, 3: 5 (1 and 3 tie: lower id first).
    np.testing.assert_array_equal(borda(V4), [[1, 3, 0, 2]])
    # Weights (3, 1, 0): 0: 3.5, 1: 9, 2: 0.5, 3: 11.
    np.testing.assert_array_equal(borda(V4, weights=[3, 1, 0]), [[3, 1, 0, 2]])
    # A full list and a top-1 list over 3 items: 0: 2 + 0.5, 1: 1 + 0.5, 2: 0 + 2.
    np.testing.assert_array_equal(borda([[[0, 1, 2], [2, -1, -1]]]), [[0, 2, 1]])


def test_borda_top_n_minus_1_equals_full_list():
    # A list of n - 1 items orders every pair: the unlisted item gets 0 points.
    full = np.array([[[2, 0, 3, 1], [1, 2, 0, 3]]])
    top3 = full.copy()
    top3[0, 0, 3] = -1
    np.testing.assert_array_equal(borda(full), borda(top3))


def test_rrf_hand_computed():
    # k = 60: item 3 gets 1/61 + 1/62, item 1 1/62 + 1/61 (a tie: lower id first),
    # item 0 1/63, item 2 1/64.
    np.testing.assert_array_equal(reciprocal_rank_fusion(V4), [[1, 3, 0, 2]])
    # k = 0: item 0 gets 1/2, items 1 and 2 get 1 each (tie), from (1, 0) and (2,).
    np.testing.assert_array_equal(
        reciprocal_rank_fusion([[[1, 0, -1], [2, -1, -1]]], k=0), [[1, 2, 0]]
    )
    # Weight 2 on the second LF: item 2 gets 2 and wins.
    np.testing.assert_array_equal(
        reciprocal_rank_fusion([[[1, 0, -1], [2, -1, -1]]], k=0, weights=[1, 2]),
        [[2, 1, 0]],
    )


def test_pairwise_majority_matrix_hand_computed():
    C = pairwise_majority_matrix(V4)
    expected = np.zeros((4, 4))
    # LF 0: 3 > 1 > 0 > 2; LF 1: 1 > 3 > {0, 2} (0 and 2 unordered); LF 2 abstains.
    for i, j in [(3, 1), (3, 0), (3, 2), (1, 0), (1, 2), (0, 2)]:
        expected[i, j] += 1
    for i, j in [(1, 3), (1, 0), (1, 2), (3, 0), (3, 2)]:
        expected[i, j] += 1
    np.testing.assert_array_equal(C[0], expected)
    assert C.shape == (1, 4, 4) and C.dtype == np.float64
    Cw = pairwise_majority_matrix(V4, weights=[0.5, 2.0, 7.0])
    assert Cw[0, 1, 3] == 2.0 and Cw[0, 3, 1] == 0.5 and Cw[0, 0, 2] == 0.5


def test_copeland_hand_computed():
    # (1, 3) tie 1-1; 1 and 3 beat 0 and 2; 0 beats 2 (LF 1 leaves them unordered).
    np.testing.assert_array_equal(copeland(V4), [[1, 3, 0, 2]])
    # Weights (3, 1, 0): 3 beats 1.
    np.testing.assert_array_equal(copeland(V4, weights=[3, 1, 0]), [[3, 1, 0, 2]])
    np.testing.assert_array_equal(
        copeland([[[0, 1, 2], [2, -1, -1], [2, 0, 1]]]), [[2, 0, 1]]
    )


def test_borda_and_copeland_disagree_on_a_condorcet_winner():
    # Two voters 0 > 1 > 2 > 3 and one 1 > 2 > 3 > 0: item 0 wins every pairwise
    # majority (Copeland), but Borda gives 1 seven points and 0 six.
    V = np.array([[[0, 1, 2, 3], [0, 1, 2, 3], [1, 2, 3, 0]]])
    np.testing.assert_array_equal(copeland(V), [[0, 1, 2, 3]])
    np.testing.assert_array_equal(borda(V), [[1, 0, 2, 3]])
    # RRF with k = 0: 0: 2.25, 1: 2, 2: 7/6, 3: 5/6.
    np.testing.assert_array_equal(reciprocal_rank_fusion(V, k=0), [[0, 1, 2, 3]])


@pytest.mark.parametrize("method", METHODS)
def test_all_abstain_gives_id_order(method):
    V = np.full((2, 3, 5), -1)
    V[1, 0, :2] = [4, 2]
    out = method(V)
    assert out.dtype == np.int64 and out.shape == (2, 5)
    np.testing.assert_array_equal(out[0], np.arange(5))
    np.testing.assert_array_equal(out[1], [4, 2, 0, 1, 3])


@pytest.mark.parametrize("method", METHODS)
def test_a_single_full_list_is_returned(method):
    rng = np.random.default_rng(3)
    Y = np.array([rng.permutation(7) for _ in range(5)])
    np.testing.assert_array_equal(method(Y[:, None, :]), Y)


def test_float_rounding_ties_are_ties():
    # Weights 0.1, 0.2 against 0.3 tie exactly only in exact arithmetic.
    V = np.array([[[1, 0], [1, 0], [0, 1]]])
    w = [0.1, 0.2, 0.3]
    for method in METHODS:
        np.testing.assert_array_equal(method(V, weights=w), [[0, 1]])


# --- brute-force equality ------------------------------------------------------------


@pytest.mark.parametrize("n_items", [2, 3, 4, 6])
@pytest.mark.parametrize("weighting", ["none", "integer", "float"])
def test_matches_brute_force_reference(n_items, weighting):
    rng = np.random.default_rng(100 * n_items + len(weighting))
    n_lfs = 4
    V = _random_votes(rng, 60, n_lfs, n_items)
    if weighting == "none":
        weights, w = None, np.ones(n_lfs)
    elif weighting == "integer":
        w = rng.integers(0, 4, n_lfs).astype(float)
        weights = w.astype(int)
    else:
        w = rng.uniform(0.05, 3.0, n_lfs)
        weights = w
    np.testing.assert_array_equal(borda(V, weights), _ref_borda(V, w))
    for k in (60, 0, 2.5):
        np.testing.assert_array_equal(
            reciprocal_rank_fusion(V, k=k, weights=weights), _ref_rrf(V, w, k)
        )
    np.testing.assert_allclose(
        pairwise_majority_matrix(V, weights),
        _ref_majority(V, w).astype(float),
        rtol=1e-12,
    )
    np.testing.assert_array_equal(copeland(V, weights), _ref_copeland(V, w))


@pytest.mark.parametrize("method", METHODS)
def test_outputs_are_orderings(method):
    V = _random_votes(np.random.default_rng(7), 40, 3, 12)
    out = method(V)
    assert out.shape == (40, 12) and out.dtype == np.int64
    check_orderings(out, 12)


def test_majority_matrix_matches_pairwise_votes():
    rng = np.random.default_rng(11)
    V = _random_votes(rng, 30, 5, 6)
    w = rng.uniform(0.1, 2.0, 5)
    C = pairwise_majority_matrix(V, w)
    S = pairwise_votes(V).astype(float)
    i, j = pair_index(6)
    np.testing.assert_allclose(C[:, i, j] - C[:, j, i], np.einsum("rap,a->rp", S, w))
    np.testing.assert_allclose(
        C[:, i, j] + C[:, j, i], np.einsum("rap,a->rp", np.abs(S), w)
    )
    assert np.all(C[:, np.arange(6), np.arange(6)] == 0)


@pytest.mark.parametrize("method", METHODS)
def test_integer_weights_duplicate_lfs(method):
    rng = np.random.default_rng(5)
    V = _random_votes(rng, 50, 3, 5)
    doubled = np.concatenate([V, V[:, :1]], axis=1)  # LF 0 twice
    np.testing.assert_array_equal(method(V, weights=[2, 1, 1]), method(doubled))
    # Weight 0 drops an LF; a common factor changes nothing.
    np.testing.assert_array_equal(method(V, weights=[0, 1, 1]), method(V[:, 1:]))
    np.testing.assert_array_equal(method(V, weights=[4.0, 4.0, 4.0]), method(V))


def test_chunked_majority_matrix_matches_one_block(monkeypatch):
    from snorkel_structured.rankings import fusion

    V = _random_votes(np.random.default_rng(2), 25, 3, 5)
    whole = fusion.pairwise_majority_matrix(V)
    ranks = fusion.copeland(V)
    monkeypatch.setattr(fusion, "_BLOCK_ELEMENTS", 60)  # 2 rows per block
    np.testing.assert_array_equal(fusion.pairwise_majority_matrix(V), whole)
    np.testing.assert_array_equal(fusion.copeland(V), ranks)


# --- validation ----------------------------------------------------------------------


@pytest.mark.parametrize("method", [*METHODS, pairwise_majority_matrix])
def test_invalid_votes_raise(method):
    with pytest.raises(ValueError, match="twice"):
        method([[[0, 0, 1]]])
    with pytest.raises(ValueError, match="after a -1"):
        method([[[0, -1, 1]]])
    with pytest.raises(ValueError, match="not an item id"):
        method([[[0, 3, 1]]])
    with pytest.raises(ValueError, match="dimensions"):
        method([[0, 1, 2]])


@pytest.mark.parametrize("method", [*METHODS, pairwise_majority_matrix])
def test_invalid_weights_raise(method):
    V = V4
    with pytest.raises(ValueError, match=r"3 finite non-negative .* shape \(2,\)"):
        method(V, weights=[1.0, 1.0])
    with pytest.raises(ValueError, match=r"non-negative; weights\[1\] is -0.5"):
        method(V, weights=[1.0, -0.5, 1.0])
    with pytest.raises(ValueError, match=r"finite and non-negative; weights\[1\]"):
        method(V, weights=[1.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="3 finite non-negative numbers"):
        method(V, weights=["a", "b", "c"])


def test_invalid_rrf_k_raises():
    with pytest.raises(ValueError, match="k must be in the range"):
        reciprocal_rank_fusion(V4, k=-1)
    with pytest.raises(ValueError, match="finite"):
        reciprocal_rank_fusion(V4, k=np.inf)
    with pytest.raises(TypeError, match="k must be a real number"):
        reciprocal_rank_fusion(V4, k="60")


@pytest.mark.parametrize("method", [*METHODS, pairwise_majority_matrix])
def test_all_zero_or_overflowing_weights_raise(method):
    with pytest.raises(ValueError, match=r"got all 3 zero.* in id order"):
        method(V4, weights=[0, 0, 0])
    # finite, but sum(w) * (n_items - 1) overflows: Borda had returned a NaN-driven
    # order and the pairwise counts inf
    with pytest.raises(ValueError, match=r"weights are too large .* Rescale them"):
        method(V4, weights=[1e308, 1e308, 1.0])


@pytest.mark.parametrize("method", [*METHODS, pairwise_majority_matrix])
def test_zero_weight_equals_removing_the_lf(method):
    # A weight-0 LF counts as an abstain: the same as blanking its votes.
    V = np.array([[[3, 1, 0, 2], [1, 3, -1, -1], [2, 0, 1, 3]], [[0, 1, 2, 3]] * 3])
    blanked = V.copy()
    blanked[:, 0] = -1
    np.testing.assert_array_equal(
        method(V, weights=[0.0, 1.0, 2.0]), method(blanked, weights=[1.0, 1.0, 2.0])
    )


@pytest.mark.parametrize("method", METHODS)
def test_large_finite_weights_give_the_unscaled_orderings(method):
    # sum(w) * (n_items - 1) = 9e300 stays representable: a common scale changes
    # no ordering.
    w = np.array([1.0, 2.0, 0.0])
    np.testing.assert_array_equal(method(V4, weights=w * 1e300), method(V4, weights=w))


# --- item ids that a cast to int64 would wrap or that a ragged input hides ----------


@pytest.mark.parametrize(
    "big", [2**64 - 1, 2**63, np.float64(2.0**63), np.float64(1e19), -1e19]
)
def test_ids_beyond_int64_are_rejected_not_wrapped(big):
    # uint64 2**64 - 1 used to wrap to -1 (read as padding) and 2**63 to a negative
    # id; floats of 2**63 and beyond wrap alike. Every caller of the check sees it.
    dtype = np.uint64 if isinstance(big, int) else np.float64
    V = np.array([[[0, big, big]]], dtype=dtype)
    value = str(int(np.array(big, dtype=dtype)))
    msg = rf"V\[0, 0, 1\] = {value} is not an item id in 0\.\.2 nor -1 \(padding\)"
    for call in (pairwise_votes, borda, reciprocal_rank_fusion, copeland):
        with pytest.raises(ValueError, match=msg):
            call(V)
    Y = np.array([[0, 1, big]], dtype=dtype)
    with pytest.raises(
        ValueError, match=rf"Y\[0, 2\] = {value} is not an item id in 0\.\.2\."
    ):
        check_orderings(Y)


def test_unsigned_and_integral_float_ids_in_range_are_unchanged():
    V = np.array([[[2, 0, 1], [1, -1, -1]], [[0, 1, 2], [-1, -1, -1]]])
    ref = pairwise_votes(V)
    full = np.array([[[2, 0, 1], [1, 2, 0]]])
    np.testing.assert_array_equal(
        pairwise_votes(full.astype(np.uint64)), pairwise_votes(full)
    )
    np.testing.assert_array_equal(pairwise_votes(V.astype(np.float64)), ref)
    for method in METHODS:
        np.testing.assert_array_equal(method(V.astype(np.float64)), method(V))
        np.testing.assert_array_equal(method(full.astype(np.uint64)), method(full))
    np.testing.assert_array_equal(
        check_orderings(np.array([[2, 0, 1]], np.uint64)), [[2, 0, 1]]
    )


def test_unpadded_top_k_lists_get_the_padding_message():
    from snorkel_structured.labeling import RankingLFAnalysis

    ragged = [[[0, 1, 2], [2, 1]], [[1, 0, 2], [0]]]
    msg = "ragged .* pad top-k lists with -1"
    for call in (pairwise_votes, borda, pairwise_majority_matrix, RankingLFAnalysis):
        with pytest.raises(ValueError, match=msg):
            call(ragged)
    with pytest.raises(ValueError, match="ragged .* must list all n_items items"):
        check_orderings([[0, 1, 2], [2, 1]])
    # Padded, the same votes are accepted.
    padded = [[[0, 1, 2], [2, 1, -1]], [[1, 0, 2], [0, -1, -1]]]
    assert pairwise_votes(padded).shape == (2, 2, 3)
