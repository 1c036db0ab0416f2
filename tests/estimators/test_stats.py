import numpy as np
import pytest

import snorkel_structured as ss
from snorkel_structured.synthetic import make_ranking_data


def test_counts_match_rows_and_add_across_chunks():
    data = make_ranking_data(5_000, seed=0, abstain=0.25)
    stats = ss.VoteStats.from_label_matrix(data.L, 24)
    assert stats.n_samples == 5_000 and stats.n_lfs == 3
    # every pattern's count equals the number of identical rows
    for pattern, count in zip(stats.patterns[:50], stats.counts[:50], strict=True):
        assert count == np.all(data.L == pattern, axis=1).sum()
    chunks = [ss.VoteStats.from_label_matrix(c, 24) for c in np.array_split(data.L, 7)]
    total = sum(chunks)
    np.testing.assert_array_equal(total.patterns, stats.patterns)
    np.testing.assert_array_equal(total.counts, stats.counts)
    np.testing.assert_allclose(stats.coverage(), (data.L != -1).mean(axis=0))


def test_pair_and_triple_counts():
    L = np.array([[0, 1, 2], [0, 1, -1], [2, 1, 2], [0, 1, 2]])
    stats = ss.VoteStats.from_label_matrix(L, 3)
    C = stats.pair_counts(0, 2)
    assert C[0, 2] == 2 and C[2, 2] == 1 and C.sum() == 3
    T = stats.triple_counts(0, 1, 2)
    assert T[0, 1, 2] == 2 and T[2, 1, 2] == 1 and T.sum() == 3
    np.testing.assert_array_equal(stats.vote_counts(1), [0, 4, 0])


def test_wide_label_matrices_fall_back_to_row_uniques():
    rng = np.random.default_rng(0)
    L = rng.integers(-1, 120, size=(300, 12))  # (121)^12 codes overflow int64
    L[1] = L[0]
    stats = ss.VoteStats.from_label_matrix(L, 120)
    assert stats.n_samples == 300 and stats.n_patterns == 299


def test_add_errors():
    a = ss.VoteStats.from_label_matrix(np.zeros((2, 3), int), 3)
    b = ss.VoteStats.from_label_matrix(np.zeros((2, 4), int), 3)
    with pytest.raises(ValueError, match="different problems"):
        a + b
    with pytest.raises(TypeError):
        a + 1
    with pytest.raises(ValueError, match="outside the label space"):
        ss.VoteStats.from_label_matrix(np.array([[0, 3, 1]]), 3)


@pytest.mark.parametrize(
    "n, n_labels, m",
    [
        (2_000, 2, 6),  # 729 codes: a dense count
        (2_000, 4, 10),  # 9.8M codes for 2,000 rows: sorted codes
        (300, 120, 12),  # codes overflow int64: unique rows
    ],
)
def test_patterns_and_inverse_match_a_brute_force_count(n, n_labels, m):
    from snorkel_structured.estimators._stats import _count_patterns, unique_rows

    rng = np.random.default_rng(0)
    L = rng.integers(-1, n_labels, size=(n, m))
    L[n // 2 :] = L[: n - n // 2]  # every row at least twice
    expected = sorted({tuple(row) for row in L.tolist()})
    counts = {}
    for row in L.tolist():
        counts[tuple(row)] = counts.get(tuple(row), 0) + 1
    patterns, inverse = unique_rows(L, n_labels)
    assert sorted(map(tuple, patterns.tolist())) == expected
    np.testing.assert_array_equal(patterns[inverse], L)
    patterns, c = _count_patterns(L, n_labels)
    assert {tuple(p): k for p, k in zip(patterns.tolist(), c, strict=True)} == counts
    # weighted: each row's weight summed per pattern
    weights = rng.random(n)
    sums = {}
    for row, w in zip(L.tolist(), weights, strict=True):
        sums[tuple(row)] = sums.get(tuple(row), 0.0) + w
    patterns, c = _count_patterns(L, n_labels, weights)
    got = dict(zip(map(tuple, patterns.tolist()), c, strict=True))
    assert got.keys() == sums.keys()
    np.testing.assert_allclose([got[key] for key in sums], list(sums.values()))
