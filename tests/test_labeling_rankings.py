"""Ranking labeling functions, their appliers and RankingLFAnalysis."""

import itertools

import numpy as np
import pandas as pd
import pytest
from snorkel.labeling import PandasLFApplier

from snorkel_structured.exceptions import IdentifiabilityWarning
from snorkel_structured.labeling import (
    RankingDaskApplier,
    RankingLabelingFunction,
    RankingLFAnalysis,
    RankingPandasApplier,
    RankingPandasParallelApplier,
    ranking_labeling_function,
)
from snorkel_structured.rankings import pairwise_votes

N_ITEMS = 4


@ranking_labeling_function(n_items=N_ITEMS)
def full(x):
    return list(x["order"])


@ranking_labeling_function(name="top2")
def top_two(x):
    return x["top"]  # a list of 2, or [] to abstain


@ranking_labeling_function()
def fav(x):
    return [x["fav"]] if x["fav"] >= 0 else None


LFS = [full, top_two, fav]


@pytest.fixture
def frame():
    return pd.DataFrame(
        {
            "order": [[0, 1, 2, 3], [3, 2, 1, 0], [1, 0, 3, 2]],
            "top": [[1, 0], (2, 3), []],
            "fav": [3, -1, 0],
        },
        index=[10, 11, 12],
    )


# V by hand: a row per data point, a vote per LF, padded with -1.
V_HAND = np.array(
    [
        [[0, 1, 2, 3], [1, 0, -1, -1], [3, -1, -1, -1]],
        [[3, 2, 1, 0], [2, 3, -1, -1], [-1, -1, -1, -1]],
        [[1, 0, 3, 2], [-1, -1, -1, -1], [0, -1, -1, -1]],
    ]
)
# Pairs (0,1) (0,2) (0,3) (1,2) (1,3) (2,3): +1 first item before second.
S_HAND = np.array(
    [
        [[1, 1, 1, 1, 1, 1], [-1, 1, 1, 1, 1, 0], [0, 0, -1, 0, -1, -1]],
        [[-1, -1, -1, -1, -1, -1], [0, -1, -1, -1, -1, 1], [0, 0, 0, 0, 0, 0]],
        [[-1, 1, 1, 1, 1, -1], [0, 0, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0]],
    ]
)
Y_HAND = np.array([[0, 1, 2, 3], [3, 2, 1, 0], [0, 1, 2, 3]])


def test_decorator_and_lf_call():
    assert isinstance(full, RankingLabelingFunction)
    assert (full.name, full.n_items) == ("full", N_ITEMS)
    assert (top_two.name, top_two.n_items) == ("top2", None)
    row = pd.Series({"order": (2, 0, 1, 3)}, name=5)
    out = full(row)
    assert out.dtype == np.int64 and out.tolist() == [2, 0, 1, 3]
    assert fav(pd.Series({"fav": -1})) is None
    assert top_two(pd.Series({"top": np.array([], dtype=float)})) is None
    assert top_two(pd.Series({"top": np.array([3, 1], dtype=np.uint8)})).tolist() == [
        3,
        1,
    ]
    with pytest.raises(ValueError, match="missing parentheses"):

        @ranking_labeling_function
        def oops(x):
            return None


def test_resources_and_preprocessors():
    def add_order(x):
        return pd.Series({**x.to_dict(), "order": [1, 0, 2]}, name=x.name)

    @ranking_labeling_function(pre=[add_order], resources={"k": 2}, n_items=3)
    def top_k(x, k):
        return x["order"][:k]

    assert top_k(pd.Series({"a": 1})).tolist() == [1, 0]


def test_pandas_applier_by_hand(frame):
    V = RankingPandasApplier(LFS).apply(frame)
    assert V.dtype == np.int64
    np.testing.assert_array_equal(V, V_HAND)
    np.testing.assert_array_equal(pairwise_votes(V), S_HAND)
    S = RankingPandasApplier(LFS).apply(frame, pairwise=True)
    assert S.dtype == np.int8
    np.testing.assert_array_equal(S, S_HAND)
    # n_items given to apply when no LF declares it
    V2 = RankingPandasApplier([top_two, fav]).apply(frame, n_items=N_ITEMS)
    np.testing.assert_array_equal(V2, V_HAND[:, 1:])
    assert RankingPandasApplier(LFS).n_items == N_ITEMS


def test_analysis_by_hand(frame):
    a = RankingLFAnalysis(V_HAND, LFS)
    # ordered instances: full 18 of 18, top2 5 + 5, fav 3 + 3
    np.testing.assert_allclose(a.pair_coverage(), [1.0, 10 / 18, 6 / 18])
    # full is alone on (0,1) of row 1 and (1,2) (1,3) (2,3) of row 2
    np.testing.assert_allclose(a.pair_overlaps(), [14 / 18, 1.0, 1.0])
    # full: row 0 (0,1) (0,3) (1,3) (2,3), row 1 (2,3), row 2 (0,1);
    # top2: row 0 (0,1) (0,3) (1,3), row 1 (2,3); fav: row 0 (0,3) (1,3) (2,3),
    # row 2 (0,1)
    np.testing.assert_allclose(a.pair_conflicts(), [6 / 18, 4 / 10, 4 / 6])
    np.testing.assert_allclose(a.lf_coverages(), [1.0, 2 / 3, 2 / 3])
    np.testing.assert_allclose(a.mean_list_lengths(), [4.0, 2.0, 1.0])
    # full: 6 + 6 + 4 correct; top2: 4 + 4 of 5 + 5; fav: 0 of 3, 3 of 3
    np.testing.assert_allclose(a.pair_accuracy(Y_HAND), [16 / 18, 0.8, 0.5])

    summary = a.lf_summary(Y_HAND)
    assert list(summary.index) == ["full", "top2", "fav"]
    assert list(summary.columns) == [
        "j",
        "Mean list length",
        "Coverage",
        "Pair coverage",
        "Pair overlaps",
        "Pair conflicts",
        "Pairs correct",
        "Pairs incorrect",
        "Pair accuracy",
    ]
    np.testing.assert_array_equal(summary["Pairs correct"], [16, 8, 3])
    np.testing.assert_array_equal(summary["Pairs incorrect"], [2, 2, 3])
    np.testing.assert_allclose(summary["Pair accuracy"], [16 / 18, 0.8, 0.5])
    np.testing.assert_allclose(summary["Pair conflicts"], [1 / 3, 0.4, 2 / 3])
    plain = a.lf_summary()
    assert "Pair accuracy" not in plain.columns
    pd.testing.assert_frame_equal(plain, summary[plain.columns])
    # without LFs: default names; the applier's output goes straight in
    V = RankingPandasApplier(LFS).apply(frame)
    assert list(RankingLFAnalysis(V).lf_summary().index) == ["lf_0", "lf_1", "lf_2"]


def test_silent_lf_warns_and_gives_nan():
    V = V_HAND.copy()
    V[:, 2] = -1
    with pytest.warns(IdentifiabilityWarning, match="'fav'"):
        a = RankingLFAnalysis(V, LFS)
    s = a.lf_summary(Y_HAND)
    assert s.loc["fav", "Coverage"] == 0 and s.loc["fav", "Pair coverage"] == 0
    for col in ["Mean list length", "Pair overlaps", "Pair conflicts", "Pair accuracy"]:
        assert np.isnan(s.loc["fav", col])
    assert s.loc["fav", "Pairs correct"] == 0 and s.loc["fav", "Pairs incorrect"] == 0


def _random_votes(rng, n_rows, n_lfs, n_items):
    V = np.full((n_rows, n_lfs, n_items), -1, dtype=np.int64)
    for r, a in itertools.product(range(n_rows), range(n_lfs)):
        k = rng.choice([0, 1, 2, n_items - 1, n_items])
        V[r, a, :k] = rng.permutation(n_items)[:k]
    return V


def _order(vote, i, j):
    """+1 if the vote puts i before j, -1 if j before i, 0 if it leaves them unordered."""
    listed = [int(v) for v in vote if v >= 0]
    if i in listed and j in listed:
        return 1 if listed.index(i) < listed.index(j) else -1
    if i in listed:
        return 1
    if j in listed:
        return -1
    return 0


def _brute_force(V, Y):
    """Every statistic from its definition, one (row, LF, pair) at a time."""
    n_rows, m, n_items = V.shape
    pairs = list(itertools.combinations(range(n_items), 2))
    order = _order

    ordered = np.zeros(m)
    overlap = np.zeros(m)
    conflict = np.zeros(m)
    correct = np.zeros(m)
    for r in range(n_rows):
        for i, j in pairs:
            s = [order(V[r, a], i, j) for a in range(m)]
            truth = order(Y[r], i, j)
            for a in range(m):
                if s[a] == 0:
                    continue
                others = [s[b] for b in range(m) if b != a]
                ordered[a] += 1
                overlap[a] += any(o != 0 for o in others)
                conflict[a] += any(o == -s[a] for o in others)
                correct[a] += s[a] == truth
    lengths = (V >= 0).sum(axis=2)
    voted = lengths > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "Mean list length": lengths.sum(axis=0) / voted.sum(axis=0),
            "Coverage": voted.mean(axis=0),
            "Pair coverage": ordered / (n_rows * len(pairs)),
            "Pair overlaps": overlap / ordered,
            "Pair conflicts": conflict / ordered,
            "Pairs correct": correct,
            "Pairs incorrect": ordered - correct,
            "Pair accuracy": correct / ordered,
        }


def test_pair_agreement_matches_its_definition():
    # The mean of s_a s_b over the (row, pair) instances both LFs order, by loops.
    rng = np.random.default_rng(3)
    V = _random_votes(rng, 25, 4, 6)
    V[:, 3] = -1  # an LF that never votes: no common pair, NaN
    agree, both = np.zeros((4, 4)), np.zeros((4, 4))
    for r in range(V.shape[0]):
        for i, j in itertools.combinations(range(6), 2):
            s = [_order(V[r, a], i, j) for a in range(4)]
            for a, b in itertools.product(range(4), repeat=2):
                if s[a] and s[b]:
                    agree[a, b] += s[a] * s[b]
                    both[a, b] += 1
    with np.errstate(invalid="ignore"):
        expected = np.where(both > 0, agree / both, np.nan)
    for chunk in (None, 1, 4):
        with pytest.warns(IdentifiabilityWarning):
            got = RankingLFAnalysis(V, chunk_size=chunk).pair_agreement()
        assert list(got.index) == list(got.columns) == ["lf_0", "lf_1", "lf_2", "lf_3"]
        np.testing.assert_allclose(got.to_numpy(), expected, rtol=1e-12)
    # the silent LF shares no pair with any LF, itself included
    assert np.isnan(got.to_numpy()[3]).all() and np.allclose(np.diag(got)[:3], 1)


@pytest.mark.parametrize("seed", [0, 1])
def test_analysis_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n_rows, n_lfs, n_items = 30, 4, 6
    V = _random_votes(rng, n_rows, n_lfs, n_items)
    Y = np.stack([rng.permutation(n_items) for _ in range(n_rows)])
    expected = _brute_force(V, Y)
    summaries = [
        RankingLFAnalysis(V, chunk_size=c).lf_summary(Y) for c in (None, 1, 7, 100)
    ]
    for summary in summaries:
        for col, values in expected.items():
            np.testing.assert_allclose(summary[col], values, err_msg=col)
    a = RankingLFAnalysis(V, chunk_size=7)
    np.testing.assert_allclose(a.pair_conflicts(), expected["Pair conflicts"])
    np.testing.assert_allclose(a.pair_overlaps(), expected["Pair overlaps"])
    np.testing.assert_allclose(a.pair_coverage(), expected["Pair coverage"])
    np.testing.assert_allclose(a.pair_accuracy(Y), expected["Pair accuracy"])


def test_float64_path_for_huge_chunks(monkeypatch):
    # float32 sums are exact up to 2**24 instances per LF and chunk; past that the
    # pairwise form is float64 (lower the bound to take that path on small data)
    import snorkel_structured.labeling.ranking_analysis as module

    rng = np.random.default_rng(2)
    V = _random_votes(rng, 12, 3, 5)
    Y = np.stack([rng.permutation(5) for _ in range(12)])
    expected = RankingLFAnalysis(V).lf_summary(Y)
    monkeypatch.setattr(module, "_EXACT_FLOAT32", 4)
    pd.testing.assert_frame_equal(RankingLFAnalysis(V).lf_summary(Y), expected)


def test_default_chunks_bound_memory():
    V = np.full((2000, 5, 50), -1, dtype=np.int64)
    V[:, :, 0] = 0
    a = RankingLFAnalysis(V)
    assert 1 <= a.chunk_size * 5 * 1225 <= 1 << 22
    np.testing.assert_allclose(a.pair_coverage(), 49 / 1225)
    np.testing.assert_allclose(a.pair_conflicts(), 0.0)


def _returning(value, **kwargs):
    return RankingLabelingFunction("bad", lambda x: value, **kwargs)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([0, 4], r"item id 4 is out of range \(n_items = 4\)"),
        ([1, -1], r"item id -1 is negative \(do not pad with -1\)"),
        ([2, 0, 2], "item 2 is listed twice"),
        (np.array([1, 1]), "item 1 is listed twice"),
        (3, "expected a list of item ids, got a int"),
        ("01", "expected a list of item ids, got a str"),
        ({0, 1}, "expected a list of item ids, got a set \\(a set has no order\\)"),
        ({0: 1}, "expected a list of item ids, got a dict"),
        (iter([0, 1]), "expected a list of item ids"),
        ([0.0, 1.0], "item ids must be integers, got 0.0"),
        ([0, True], "item ids must be integers, got True"),
        ([[0, 1]], r"item ids must be integers, got \[0, 1\]"),
        (np.array([0.0, 1.0]), "item ids must be integers, got dtype float64"),
        (np.array([[0, 1]]), r"expected a flat list, got shape \(1, 2\)"),
    ],
)
def test_lf_output_errors_name_lf_and_row(value, message):
    lf = _returning(value, n_items=4)
    row = pd.Series({"a": 1}, name=11)
    with pytest.raises(ValueError, match=r"'bad' returned .* for row 11: " + message):
        lf(row)
    frame = pd.DataFrame({"a": [1, 2]}, index=[7, 8])
    with pytest.raises(ValueError, match=r"'bad' returned .* for row 7: " + message):
        RankingPandasApplier([lf]).apply(frame)


def test_range_checked_against_applier_n_items():
    lf = _returning([0, 5])
    assert lf(pd.Series({"a": 1})).tolist() == [0, 5]  # no n_items: no upper bound
    frame = pd.DataFrame({"a": [1]})
    with pytest.raises(ValueError, match=r"for row 0: item id 5 is out of range"):
        RankingPandasApplier([lf]).apply(frame, n_items=5)
    assert RankingPandasApplier([lf]).apply(frame, n_items=6).tolist() == [
        [[0, 5, -1, -1, -1, -1]]
    ]


def test_n_items_errors(frame):
    with pytest.raises(ValueError, match=r"n_items=5 does not match .* n_items=4"):
        RankingPandasApplier(LFS).apply(frame, n_items=5)
    with pytest.raises(ValueError, match="n_items is unknown"):
        RankingPandasApplier([top_two, fav]).apply(frame)
    other = _returning(None, n_items=5)
    with pytest.raises(
        ValueError, match=r"'full' has n_items=4 but 'bad' has n_items=5"
    ):
        RankingPandasApplier([full, other])
    with pytest.raises(ValueError, match=r"n_items must be in the range \[2"):
        ranking_labeling_function(n_items=1)
    with pytest.raises(TypeError, match="n_items must be an int"):
        RankingPandasApplier([fav]).apply(frame, n_items=4.0)


def test_applier_checks_lfs_and_input(frame):
    with pytest.raises(ValueError, match="at least one"):
        RankingPandasApplier([])
    with pytest.raises(TypeError, match="RankingLabelingFunction"):
        RankingPandasApplier([lambda x: [0]])
    with pytest.raises(ValueError, match="not unique"):
        RankingPandasApplier([fav, fav])
    with pytest.raises(TypeError, match="pandas DataFrame"):
        RankingPandasApplier(LFS).apply(frame.to_numpy())
    # Snorkel's appliers refuse ranking LFs at construction, with a pointer
    with pytest.raises(TypeError, match="RankingPandasApplier") as info:
        PandasLFApplier(LFS)
    assert "'full'" in str(info.value)
    assert full.name == "full"


@ranking_labeling_function(n_items=3)
def crashes(x):
    if x["v"] > 1:
        raise RuntimeError("boom")
    return [2, 1, 0]


@ranking_labeling_function()
def invalid(x):
    return [0, 0] if x["v"] == 0 else [x["v"]]


@pytest.fixture
def values():
    return pd.DataFrame({"v": [0, 1, 2, 3, 1]}, index=list("abcde"))


def test_fault_tolerance_counts(values):
    applier = RankingPandasApplier([crashes, invalid])
    with pytest.raises(RuntimeError, match="boom"):
        RankingPandasApplier([crashes]).apply(values)
    with pytest.raises(ValueError, match="'invalid' returned .* for row 'a'"):
        applier.apply(values)
    V, meta = applier.apply(values, fault_tolerant=True, return_meta=True)
    # crashes faults on v = 2, 3; invalid on v = 0 (repeat) and v = 3 (out of range)
    assert meta.faults == {"crashes": 2, "invalid": 2}
    np.testing.assert_array_equal(
        V[:, 0], [[2, 1, 0], [2, 1, 0], [-1, -1, -1], [-1, -1, -1], [2, 1, 0]]
    )
    np.testing.assert_array_equal(V[:, 1, 0], [-1, 1, 2, -1, 1])


def test_analysis_input_errors():
    with pytest.raises(ValueError, match="lfs has 2 labeling functions but V has 3"):
        RankingLFAnalysis(V_HAND, LFS[:2])
    with pytest.raises(ValueError, match=r"'full' ranks n_items=4 items but V has 5"):
        RankingLFAnalysis(
            np.pad(V_HAND, ((0, 0), (0, 0), (0, 1)), constant_values=-1), LFS
        )
    with pytest.raises(ValueError, match="lists item 1 twice"):
        RankingLFAnalysis([[[1, 1, -1]]])
    with pytest.raises(ValueError, match="no rows"):
        RankingLFAnalysis(np.zeros((0, 2, 3), dtype=int))
    a = RankingLFAnalysis(V_HAND)
    with pytest.raises(ValueError, match="Y must have 3 rows"):
        a.pair_accuracy(Y_HAND[:2])
    with pytest.raises(ValueError, match="not an item id"):
        a.lf_summary(np.array([[0, 1, 2, -1]] * 3))  # gold must be full orderings
    with pytest.raises(ValueError, match="twice"):
        a.lf_summary(np.array([[0, 1, 1, 2]] * 3))


@ranking_labeling_function(n_items=5)
def stored(x):
    return [int(x[f"v{i}"]) for i in range(5) if x[f"v{i}"] >= 0]


def test_parallel_applier_keeps_the_rows_order_of_an_unsorted_index():
    pytest.importorskip("dask")
    # Row i of the votes is df.iloc[i], whatever the index (Dask's from_pandas sorts
    # by it unless told not to).
    V = np.array([[4, 0, -1, -1, -1], [1, -1, -1, -1, -1], [2, 3, 0, -1, -1]])
    V = np.concatenate([V, V[::-1]])
    df = pd.DataFrame(V, columns=[f"v{i}" for i in range(5)], index=[5, 3, 4, 0, 2, 1])
    Vp = RankingPandasParallelApplier([stored]).apply(
        df, n_parallel=2, scheduler="synchronous"
    )
    np.testing.assert_array_equal(Vp[:, 0], V)


def test_dask_appliers_match_pandas(values):
    pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(3)
    V = _random_votes(rng, 9, 1, 5)[:, 0]
    # one int column per slot: Dask may turn object columns (lists) into strings
    df = pd.DataFrame(V, columns=[f"v{i}" for i in range(5)])
    expected = RankingPandasApplier([stored]).apply(df)
    np.testing.assert_array_equal(expected[:, 0], V)
    ddf = dd.from_pandas(df, npartitions=3)
    Vd = RankingDaskApplier([stored]).apply(ddf, scheduler="synchronous")
    np.testing.assert_array_equal(Vd, expected)
    Sd = RankingDaskApplier([stored]).apply(ddf, scheduler="threads", pairwise=True)
    np.testing.assert_array_equal(Sd, pairwise_votes(expected))
    Vp = RankingPandasParallelApplier([stored]).apply(
        df, n_parallel=2, scheduler="threads"
    )
    np.testing.assert_array_equal(Vp, expected)
    # faults add up across partitions
    pandas_out = RankingPandasApplier([crashes, invalid]).apply(
        values, fault_tolerant=True, return_meta=True
    )
    dask_out = RankingDaskApplier([crashes, invalid]).apply(
        dd.from_pandas(values, npartitions=2),
        scheduler="synchronous",
        fault_tolerant=True,
        return_meta=True,
    )
    np.testing.assert_array_equal(dask_out[0], pandas_out[0])
    assert dask_out[1].faults == pandas_out[1].faults
    with pytest.raises(TypeError, match="Dask DataFrame"):
        RankingDaskApplier([stored]).apply(df)


def test_ranking_analysis_takes_lf_names_as_strings():
    # Names alone label the summary, as with LF objects (Snorkel's LFAnalysis reads
    # only lf.name); a bare string is refused rather than split into letters
    V = np.array([[[0, 1, 2], [2, 1, 0]], [[1, 0, 2], [1, 2, -1]]])
    by_name = RankingLFAnalysis(V, ["price", "rating"])
    assert list(by_name.lf_summary().index) == ["price", "rating"]
    with pytest.raises(TypeError, match="a list of labeling functions"):
        RankingLFAnalysis(V, "price")


def test_dask_applier_refuses_a_dask_series_or_array(values):
    dd = pytest.importorskip("dask.dataframe")
    da = pytest.importorskip("dask.array")
    # both have to_delayed, but their partitions have no rows of columns for the LFs
    series = dd.from_pandas(values, npartitions=2)["v"]
    for df in (series, da.from_array(values.to_numpy(), chunks=2)):
        with pytest.raises(TypeError, match="df must be a Dask DataFrame.*to_frame"):
            RankingDaskApplier([crashes]).apply(df, scheduler="synchronous")
    # the Series as a one-column frame labels like the pandas applier
    V = RankingDaskApplier([invalid]).apply(
        series.to_frame(), scheduler="synchronous", fault_tolerant=True, n_items=4
    )
    expected = RankingPandasApplier([invalid]).apply(
        values, fault_tolerant=True, n_items=4
    )
    np.testing.assert_array_equal(V, expected)


def test_every_lf_silent_warns():
    with pytest.warns(IdentifiabilityWarning, match="No LF voted in V: all 2 LFs"):
        a = RankingLFAnalysis(np.full((2, 2, 3), -1))
    np.testing.assert_array_equal(a.pair_coverage(), [0.0, 0.0])
    # one silent LF keeps the per-LF warning only
    V = V_HAND.copy()
    V[:, 2] = -1
    with pytest.warns(IdentifiabilityWarning) as caught:
        RankingLFAnalysis(V, LFS)
    assert [str(w.message)[:9] for w in caught] == ["LF 2 ('fa"]
