"""Weighted Kemeny decoding: exact methods against brute force, the heuristic's gap,
the objective, validation and determinism."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from snorkel_structured.exceptions import ConvergenceWarning
from snorkel_structured.rankings.kemeny import (
    AUTO_EXACT_MAX_ITEMS,
    kemeny_objective,
    kemeny_rank,
)

EXACT = ("exact_dp", "ilp")


def brute_force(C: np.ndarray) -> tuple[float, list[tuple[int, ...]]]:
    """The best objective of one (n, n) matrix and all orderings reaching it,
    straight from the definition: sum over pairs with i placed before j of C[i, j]."""
    n = C.shape[0]
    best, argbest = -np.inf, []
    for perm in itertools.permutations(range(n)):
        value = sum(C[perm[a], perm[b]] for a in range(n) for b in range(a + 1, n))
        if value > best + 1e-9:
            best, argbest = value, [perm]
        elif abs(value - best) <= 1e-9:
            argbest.append(perm)
    return best, argbest


def mallows_votes(
    rng: np.random.Generator, truth: np.ndarray, n_votes: int, phi: float
) -> np.ndarray:
    """Votes from the Mallows model around ``truth`` (repeated insertion: the k-th
    item of the truth goes to position j <= k with probability ~ phi^(k - j))."""
    n = truth.size
    votes = np.empty((n_votes, n), dtype=np.int64)
    for v in range(n_votes):
        order: list[int] = []
        for k in range(n):
            p = phi ** np.arange(k, -1, -1.0)
            order.insert(int(rng.choice(k + 1, p=p / p.sum())), int(truth[k]))
        votes[v] = order
    return votes


def mallows_instances(
    n_rows: int, n_items: int, *, phi: float = 0.6, n_votes: int = 5, seed: int = 0
) -> np.ndarray:
    """C[r, i, j] = total weight (0.5 to 2 per vote) of row r's votes putting i
    before j."""
    rng = np.random.default_rng(seed)
    C = np.zeros((n_rows, n_items, n_items))
    for r in range(n_rows):
        votes = mallows_votes(rng, rng.permutation(n_items), n_votes, phi)
        weights = rng.uniform(0.5, 2.0, n_votes)
        for vote, w in zip(votes, weights, strict=True):
            pos = np.argsort(vote)
            C[r] += w * (pos[:, None] < pos[None, :])
    return C


def assert_orderings(orders: np.ndarray, n_rows: int, n_items: int) -> None:
    assert orders.dtype == np.int64
    assert orders.shape == (n_rows, n_items)
    np.testing.assert_array_equal(
        np.sort(orders, axis=1), np.broadcast_to(np.arange(n_items), orders.shape)
    )


# --------------------------------------------------------------------------------
# Objective


def test_objective_hand_computed_three_items():
    C = np.array([[0.0, 3, 1], [2, 0, 5], [4, 0, 0]])
    # [1, 0, 2]: C[1, 0] + C[1, 2] + C[0, 2] = 2 + 5 + 1
    assert kemeny_objective(C, [1, 0, 2]) == 8.0
    # [2, 0, 1]: C[2, 0] + C[2, 1] + C[0, 1] = 4 + 0 + 3
    assert kemeny_objective(C, [2, 0, 1]) == 7.0
    # The six orderings in a batch; the diagonal is ignored.
    perms = np.array(list(itertools.permutations(range(3))))
    Cd = C + 100 * np.eye(3)
    values = kemeny_objective(np.broadcast_to(Cd, (6, 3, 3)), perms)
    np.testing.assert_array_equal(values, [9.0, 4.0, 8.0, 11.0, 7.0, 6.0])
    assert kemeny_rank(C, "exact_dp").tolist() == [1, 2, 0]
    assert kemeny_rank(C, "ilp").tolist() == [1, 2, 0]
    assert kemeny_rank(C, "heuristic").tolist() == [1, 2, 0]


def test_objective_past_the_float_range_is_refused_not_inf():
    # Each entry is finite, but three of them sum past 1.8e308: the objective is no
    # float. A huge diagonal is ignored, as the definition says.
    C = np.full((3, 3), 1e308)
    with pytest.raises(ValueError, match="exceeds the float range"):
        kemeny_objective(C, [0, 1, 2])
    C = np.ones((3, 3)) + 1e308 * np.eye(3)
    assert kemeny_objective(C, [0, 1, 2]) == 3.0
    # Rescaled as the message says, the comparison of orderings is the same.
    C = np.array([[0.0, 3, 1], [2, 0, 5], [4, 0, 0]]) * 3e307
    with pytest.raises(ValueError, match="row 0"):
        kemeny_objective(C, [1, 0, 2])
    scaled = [kemeny_objective(C / 3e307, o) for o in ([1, 0, 2], [2, 0, 1])]
    np.testing.assert_allclose(scaled, [8.0, 7.0], rtol=1e-15)


def test_objective_matches_definition_on_random_rows(rng):
    C = rng.normal(size=(20, 6, 6))
    orders = np.argsort(rng.random((20, 6)), axis=1)
    expected = [
        sum(C[r, o[a], o[b]] for a in range(6) for b in range(a + 1, 6))
        for r, o in enumerate(orders)
    ]
    np.testing.assert_allclose(kemeny_objective(C, orders), expected, rtol=1e-12)


# --------------------------------------------------------------------------------
# Exact methods against brute force


@pytest.mark.parametrize("kind", ["uniform", "integer_ties", "signed"])
@pytest.mark.parametrize("n_items", range(1, 8))
def test_exact_methods_reach_the_brute_force_optimum(n_items, kind):
    rng = np.random.default_rng([n_items, len(kind)])
    n_rows = 4 if n_items == 7 else 6
    shape = (n_rows, n_items, n_items)
    if kind == "uniform":
        C = rng.random(shape)
    elif kind == "integer_ties":
        C = rng.integers(0, 3, shape).astype(np.float64)
    else:
        C = rng.integers(-3, 4, shape).astype(np.float64)
    refs = [brute_force(c) for c in C]
    for method in EXACT:
        orders = kemeny_rank(C, method)
        assert_orderings(orders, n_rows, n_items)
        values = kemeny_objective(C, orders)
        for r, (best, argbest) in enumerate(refs):
            assert values[r] == pytest.approx(best, abs=1e-9), (method, r)
            assert tuple(orders[r]) in argbest
            if kind == "uniform":  # a unique optimum (almost surely)
                assert len(argbest) == 1


@pytest.mark.parametrize("scale", [1e-3, 1e-7, 1e-12, 1e12])
def test_ilp_is_exact_at_any_scale_of_C(rng, scale):
    # The optimal orderings do not depend on a positive scale; HiGHS's absolute
    # tolerances (about 1e-7) must not make small weights read as ties.
    C = rng.normal(size=(30, 5, 5))
    best = kemeny_objective(C, kemeny_rank(C, "exact_dp"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        orders = kemeny_rank(C * scale, "ilp")
    np.testing.assert_allclose(kemeny_objective(C, orders), best, rtol=1e-12)


def test_exact_dp_equals_ilp_on_8_to_10_items():
    for n_items in (8, 9, 10):
        C = mallows_instances(3, n_items, phi=0.8, seed=n_items)
        C[0] = np.random.default_rng(n_items).random((n_items, n_items))
        dp = kemeny_objective(C, kemeny_rank(C, "exact_dp"))
        ilp = kemeny_objective(C, kemeny_rank(C, "ilp"))
        np.testing.assert_allclose(dp, ilp, rtol=0, atol=1e-9)


def test_exact_dp_ties_put_lower_ids_first():
    """The documented tie rule, checked against all permutations: among tied
    optima, exact_dp returns the one whose reversal is lexicographically largest
    (the highest id that ends an optimum goes last, and so on towards the front).
    When every ordering ties, that is 0, 1, ..., n - 1."""
    rng = np.random.default_rng(5)
    n_tied = n_not_smallest = 0
    for n_items in range(1, 7):
        for hi in (1, 2, 3):  # small integer weights: many exact ties
            C = rng.integers(0, hi + 1, (12, n_items, n_items)).astype(np.float64)
            orders = kemeny_rank(C, "exact_dp")
            for r in range(C.shape[0]):
                _, argbest = brute_force(C[r])
                rule = max(argbest, key=lambda perm: perm[::-1])
                assert tuple(orders[r]) == rule, (n_items, hi, r)
                n_tied += len(argbest) > 1
                n_not_smallest += rule != min(argbest)
    # The check is about ties: most instances have several optima, and the rule
    # often differs from "the lexicographically smallest optimum".
    assert n_tied > 100 and n_not_smallest > 20
    # The fuzzing report's case: the optima are (0, 2, 1), (1, 0, 2) and (2, 1, 0);
    # reversed, (1, 2, 0), (2, 0, 1) and (0, 1, 2), of which (2, 0, 1) is largest.
    C = np.array([[0, 1, 1], [2, 0, 0], [0, 1, 0]], dtype=float)
    assert sorted(brute_force(C)[1]) == [(0, 2, 1), (1, 0, 2), (2, 1, 0)]
    assert kemeny_rank(C, "exact_dp").tolist() == [1, 0, 2]
    for n_items in (1, 2, 5, 9):
        zero = np.zeros((2, n_items, n_items))
        np.testing.assert_array_equal(
            kemeny_rank(zero, "exact_dp"), np.tile(np.arange(n_items), (2, 1))
        )
        # Constant evidence: every ordering ties.
        np.testing.assert_array_equal(
            kemeny_rank(zero + 1.0, "exact_dp"), np.tile(np.arange(n_items), (2, 1))
        )
    # Items 0 and 1 tied, both before 2: [0, 1, 2] rather than [1, 0, 2].
    C = np.array([[0, 1, 5], [1, 0, 5], [0, 0, 0]], dtype=float)
    assert kemeny_rank(C, "exact_dp").tolist() == [0, 1, 2]


def test_exact_dp_ignores_the_symmetric_part(rng):
    """Adding a symmetric matrix changes every ordering's objective by the same
    amount: with integer weights the dynamic program returns the same orderings,
    ties included."""
    C = rng.integers(0, 4, (30, 8, 8)).astype(np.float64)
    S = rng.integers(-5, 6, (30, 8, 8)).astype(np.float64)
    S = S + S.transpose(0, 2, 1)
    np.testing.assert_array_equal(
        kemeny_rank(C, "exact_dp"), kemeny_rank(C + S, "exact_dp")
    )


def test_exact_dp_chunks_match_single_rows():
    C = mallows_instances(40, 11, phi=0.7, seed=3)
    batch = kemeny_rank(C, "exact_dp")
    for r in (0, 17, 39):
        np.testing.assert_array_equal(kemeny_rank(C[r], "exact_dp"), batch[r])


# --------------------------------------------------------------------------------
# Heuristic


def test_heuristic_never_beats_exact_and_is_within_half_a_percent():
    for n_items, n_rows, phi in ((9, 150, 0.7), (12, 100, 0.8), (15, 12, 0.8)):
        C = mallows_instances(n_rows, n_items, phi=phi, seed=n_items)
        exact = kemeny_objective(C, kemeny_rank(C, "exact_dp"))
        orders = kemeny_rank(C, "heuristic")
        assert_orderings(orders, n_rows, n_items)
        heur = kemeny_objective(C, orders)
        gap = (exact - heur) / exact
        assert gap.min() >= -1e-12, n_items
        assert gap.max() <= 0.005, (n_items, gap.max())
        assert gap.mean() <= 0.0005, (n_items, gap.mean())


def test_heuristic_within_half_a_percent_of_ilp_on_25_items():
    C = mallows_instances(3, 25, phi=0.8, seed=25)
    exact = kemeny_objective(C, kemeny_rank(C, "ilp"))
    heur = kemeny_objective(C, kemeny_rank(C, "heuristic"))
    gap = (exact - heur) / exact
    assert gap.min() >= -1e-12
    assert gap.max() <= 0.005


def test_heuristic_is_a_local_optimum_for_insertions():
    C = mallows_instances(6, 14, phi=0.85, seed=1)
    orders = kemeny_rank(C, "heuristic")
    values = kemeny_objective(C, orders)
    n = C.shape[1]
    for r in range(len(C)):
        moves = []
        for p in range(n):
            rest = np.delete(orders[r], p)
            for q in range(n):
                if q != p:
                    moves.append(np.insert(rest, q, orders[r, p]))
        moved = kemeny_objective(np.broadcast_to(C[r], (len(moves), n, n)), moves)
        assert moved.max() <= values[r] + 1e-9


def test_heuristic_recovers_a_consistent_ranking(rng):
    """Evidence that agrees with one ordering on every pair: it is the unique
    optimum, and every method finds it, at any size."""
    for n_items in (5, 30, 60):
        truth = rng.permutation(n_items)
        pos = np.argsort(truth)
        C = (pos[:, None] < pos[None, :]) * rng.uniform(0.5, 2.0, (n_items, n_items))
        methods = ("heuristic", "auto") + (EXACT if n_items <= 30 else ())
        for method in methods:
            if method == "exact_dp" and n_items > 20:
                continue
            np.testing.assert_array_equal(kemeny_rank(C, method), truth)


# --------------------------------------------------------------------------------
# ILP time limit


def test_ilp_time_limit_falls_back_to_the_heuristic_and_warns():
    C = np.random.default_rng(5).random((2, 30, 30))
    with pytest.warns(ConvergenceWarning, match=r"2 of 2 rows"):
        orders = kemeny_rank(C, "ilp", time_limit=1e-6)
    assert_orderings(orders, 2, 30)
    heur = kemeny_objective(C, kemeny_rank(C, "heuristic"))
    assert np.all(kemeny_objective(C, orders) >= heur - 1e-9)


# --------------------------------------------------------------------------------
# Shapes, determinism, auto


def test_two_dimensional_input_gives_one_ordering():
    C = mallows_instances(1, 7, seed=2)
    for method in ("auto", "exact_dp", "ilp", "heuristic"):
        one = kemeny_rank(C[0], method)
        assert one.shape == (7,) and one.dtype == np.int64
        np.testing.assert_array_equal(one, kemeny_rank(C, method)[0])
    value = kemeny_objective(C[0], kemeny_rank(C[0]))
    assert np.ndim(value) == 0
    assert value == kemeny_objective(C, kemeny_rank(C))[0]


def test_empty_batch_and_list_input():
    assert kemeny_rank(np.zeros((0, 4, 4))).shape == (0, 4)
    assert kemeny_objective(np.zeros((0, 4, 4)), np.zeros((0, 4), int)).shape == (0,)
    assert kemeny_rank([[0, 1], [2, 0]]).tolist() == [1, 0]
    assert kemeny_rank(np.array([[0, 1], [2, 0]], dtype=np.int32)).tolist() == [1, 0]


def test_deterministic_and_seeded():
    C = mallows_instances(20, 16, phi=0.9, seed=4)
    for method in ("exact_dp", "heuristic", "auto"):
        np.testing.assert_array_equal(kemeny_rank(C, method), kemeny_rank(C, method))
    np.testing.assert_array_equal(
        kemeny_rank(C, "heuristic", seed=3), kemeny_rank(C, "heuristic", seed=3)
    )
    np.testing.assert_array_equal(kemeny_rank(C[:3], "ilp"), kemeny_rank(C[:3], "ilp"))
    # Another seed: still valid orderings, still never better than exact.
    exact = kemeny_objective(C, kemeny_rank(C, "exact_dp"))
    other = kemeny_objective(C, kemeny_rank(C, "heuristic", seed=1))
    assert np.all(other <= exact + 1e-9)


def test_auto_is_exact_up_to_12_items_and_heuristic_above():
    C = mallows_instances(30, AUTO_EXACT_MAX_ITEMS, phi=0.9, seed=6)
    C[:, 0, 1] += 1e-3  # avoid exact ties between the methods' tie-breaking
    np.testing.assert_array_equal(kemeny_rank(C), kemeny_rank(C, "exact_dp"))
    C13 = mallows_instances(5, AUTO_EXACT_MAX_ITEMS + 1, phi=0.9, seed=7)
    np.testing.assert_array_equal(
        kemeny_rank(C13, seed=2), kemeny_rank(C13, "heuristic", seed=2)
    )


# --------------------------------------------------------------------------------
# Validation


@pytest.mark.parametrize(
    ("C", "match"),
    [
        (np.zeros(3), "square matrix"),
        (np.zeros((2, 3)), "square matrix"),
        (np.zeros((2, 3, 4)), "square matrix"),
        (np.zeros((1, 2, 3, 3)), "square matrix"),
        (np.zeros((0, 0)), "at least one item"),
        (np.array([[0.0, np.nan], [1.0, 0.0]]), r"C\[0, 1\] is not finite"),
        (np.array([[[0.0, 1.0], [np.inf, 0.0]]]), r"C\[0, 1, 0\] is not finite"),
        (np.zeros((2, 2), dtype=complex), "real numeric"),
        (np.array([["a", "b"], ["c", "d"]]), "real numeric"),
        ([[0, 1], [1]], "could not convert"),
    ],
)
def test_bad_C_raises(C, match):
    with pytest.raises(ValueError, match=match):
        kemeny_rank(C)
    with pytest.raises(ValueError, match=match):
        kemeny_objective(C, [0, 1])


def test_bad_arguments_raise():
    C = np.zeros((2, 4, 4))
    with pytest.raises(ValueError, match="method must be one of"):
        kemeny_rank(C, "greedy")
    with pytest.raises(ValueError, match="at most 20 items"):
        kemeny_rank(np.zeros((1, 21, 21)), "exact_dp")
    for bad in (0, -1.0, float("nan"), float("inf"), "1", True):
        with pytest.raises(ValueError, match="time_limit"):
            kemeny_rank(C, "ilp", time_limit=bad)
    with pytest.raises(ValueError, match="seed"):
        kemeny_rank(C, "heuristic", seed=-1)
    with pytest.raises(TypeError, match="seed"):
        kemeny_rank(C, "heuristic", seed=1.5)


def test_bad_orderings_raise():
    C = np.zeros((2, 3, 3))
    with pytest.raises(ValueError, match="rows"):
        kemeny_objective(C, [[0, 1, 2]])
    with pytest.raises(ValueError, match="twice"):
        kemeny_objective(C, [[0, 1, 2], [0, 0, 1]])
    with pytest.raises(ValueError, match="not an item id"):
        kemeny_objective(C, [[0, 1, 2], [0, 1, 3]])
    with pytest.raises(ValueError, match="slots"):
        kemeny_objective(C, [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="1-D"):
        kemeny_objective(C[0], [[0, 1, 2]])
    with pytest.raises(ValueError, match="2 dimensions"):
        kemeny_objective(C, [0, 1, 2])


def test_no_warning_on_ordinary_ilp_solves():
    C = mallows_instances(2, 9, seed=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kemeny_rank(C, "ilp")


# --- huge finite entries ---------------------------------------------------------------
# The docstring example: [1, 2, 0] is the unique optimum (11 against at most 9).
C_HAND = np.array([[0.0, 3.0, 1.0], [2.0, 0.0, 5.0], [4.0, 0.0, 0.0]])


@pytest.mark.parametrize("method", ["exact_dp", "ilp", "heuristic", "auto"])
@pytest.mark.parametrize("scale", [2.0**61, 1e25, 1e300, 1e307])
def test_huge_finite_entries_decode_as_the_rescaled_matrix(method, scale):
    # Entries up to 5e307 are finite, as the docstring allows; the sums over them had
    # overflowed (warnings, wrong or method-dependent orderings, scipy's own error
    # for "ilp"). A row is invariant to a positive scale: same optimum, no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert kemeny_rank(C_HAND * scale, method).tolist() == [1, 2, 0]
        # rows are scaled one by one: an ordinary row next to a huge one is unchanged
        C = np.stack([C_HAND * scale, C_HAND.T, -C_HAND * scale])
        got = kemeny_rank(C, method)
    np.testing.assert_array_equal(
        got, kemeny_rank(np.stack([C_HAND, C_HAND.T, -C_HAND]))
    )


@pytest.mark.parametrize("method", ["exact_dp", "ilp", "heuristic"])
def test_the_overflow_repro_returns_an_optimum(method):
    # C / 1e308 = [[0, 1, 1], [-1, 0, 1], [1, 1, 0]]: orderings (0, 1, 2), (0, 2, 1)
    # and (2, 0, 1) tie at 3, the best (the others reach 1).
    C = np.array([[0, 1e308, 1e308], [-1e308, 0, 1e308], [1e308, 1e308, 0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        order = kemeny_rank(C, method)
    assert tuple(order.tolist()) in {(0, 1, 2), (0, 2, 1), (2, 0, 1)}
    if method == "exact_dp":
        assert order.tolist() == [0, 1, 2]  # ties: lower ids first
