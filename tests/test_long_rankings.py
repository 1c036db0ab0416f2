"""Tests of the long-list ranking tasks: shapes, valid votes, seeds, no label reads."""

from __future__ import annotations

import numpy as np
import pytest

from snorkel_structured import datasets as D
from snorkel_structured.datasets import long_rankings as LR
from snorkel_structured.rankings import check_orderings, check_votes
from snorkel_structured.rankings.fusion import borda, copeland, reciprocal_rank_fusion

SMALL = {"n_train": 120, "n_test": 60}
N_ITEMS = {
    "diabetes_progression_lists": 20,
    "tumour_concave_points_lists": 30,
    "country_population_lists": 25,
    "wine_flavanoid_lists": 10,
}
NAMES = list(N_ITEMS)


@pytest.fixture(scope="module")
def tasks():
    return {name: LR.LIST_TASKS[name](seed=0, **SMALL) for name in NAMES}


@pytest.fixture(scope="module")
def tables():
    return {name: LR._SPECS[name].table() for name in NAMES}


def test_registry_and_exports():
    assert set(LR.LIST_TASKS) == set(LR._SPECS) == set(NAMES)
    for name, loader in LR.LIST_TASKS.items():
        assert loader.__name__ == f"load_{name}"
        assert getattr(D, loader.__name__) is loader
        assert name not in D.TASKS  # not a WeakSupervisionTask benchmark
    assert D.RankingListTask is LR.RankingListTask


@pytest.mark.parametrize("name", NAMES)
def test_shapes_and_valid_votes(tasks, name):
    task = tasks[name]
    n = N_ITEMS[name]
    assert task.name == name and task.n_items == n
    assert task.V_train.shape == (120, task.n_lfs, n)
    assert task.V_test.shape == (60, task.n_lfs, n)
    assert task.Y_train.shape == (120, n) and task.Y_test.shape == (60, n)
    assert len(task.lf_names) == len(task.lf_top_k) == task.n_lfs >= 6
    assert len(set(task.lf_names)) == task.n_lfs
    for arr in (task.V_train, task.V_test, task.Y_train, task.Y_test):
        assert arr.dtype == np.int64
    check_votes(task.V_train, n)
    check_votes(task.V_test, n)
    check_orderings(task.Y_train, n)
    check_orderings(task.Y_test, n)
    assert "Regime:" in task.description and f"{n}" in task.description
    assert any(k is not None for k in task.lf_top_k)
    # Every LF votes somewhere on the training rows.
    assert (task.V_train >= 0).any(axis=(0, 2)).all()


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_given_seed(name):
    a = LR.LIST_TASKS[name](seed=3, **SMALL)
    b = LR.LIST_TASKS[name](seed=3, **SMALL)
    c = LR.LIST_TASKS[name](seed=4, **SMALL)
    for field in ("V_train", "V_test", "Y_train", "Y_test", "items_train"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert not np.array_equal(a.items_train, c.items_train)
    # A Generator is used as is (and advances).
    rng = np.random.default_rng(3)
    g1 = LR.LIST_TASKS[name](seed=rng, **SMALL)
    g2 = LR.LIST_TASKS[name](seed=rng, **SMALL)
    assert not np.array_equal(g1.items_train, g2.items_train)


@pytest.mark.parametrize("name", NAMES)
def test_train_and_test_item_pools_are_disjoint(tasks, name):
    task = tasks[name]
    assert not set(task.items_train.ravel()) & set(task.items_test.ravel())
    for items in (task.items_train, task.items_test):
        assert all(len(set(row)) == task.n_items for row in items)


@pytest.mark.parametrize("name", NAMES)
def test_truth_orders_by_the_truth_column(tasks, tables, name):
    task, table = tasks[name], tables[name]
    truth = table[LR._SPECS[name].truth].to_numpy(dtype=float)
    for items, Y in ((task.items_train, task.Y_train), (task.items_test, task.Y_test)):
        ordered = np.take_along_axis(truth[items], Y, axis=1)
        assert np.all(np.diff(ordered, axis=1) <= 0)


@pytest.mark.parametrize("name", NAMES)
def test_no_lf_reads_the_truth_column(tasks, tables, name):
    spec = LR._SPECS[name]
    assert spec.truth not in {lf.column for lf in spec.lfs}
    task = tasks[name]
    shuffled = tables[name].copy()
    rng = np.random.default_rng(0)
    shuffled[spec.truth] = rng.permutation(shuffled[spec.truth].to_numpy())
    other = LR._build(
        spec, 0, **SMALL, n_items=task.n_items, description="", table=shuffled
    )
    np.testing.assert_array_equal(other.V_train, task.V_train)
    np.testing.assert_array_equal(other.V_test, task.V_test)
    assert not np.array_equal(other.Y_test, task.Y_test)


def test_tumour_lfs_read_no_concavity_column():
    columns = [lf.column for lf in LR._SPECS["tumour_concave_points_lists"].lfs]
    assert not [c for c in columns if "concav" in c]


@pytest.mark.parametrize("name", NAMES)
def test_lists_follow_the_lf_columns(tasks, tables, name):
    """Lists are strictly decreasing in the LF's column; top-k LFs list exactly k."""
    task, table = tasks[name], tables[name]
    for a, lf in enumerate(LR._SPECS[name].lfs):
        values = lf.sign * table[lf.column].to_numpy(dtype=float)[task.items_train]
        V = task.V_train[:, a]
        k = (V >= 0).sum(axis=1)
        if lf.top_k is not None:
            assert set(np.unique(k)) <= {0, lf.top_k}
            assert (k == lf.top_k).any()
        for r in range(task.n_train):
            if k[r] == 0:
                continue
            listed = values[r, V[r, : k[r]]]
            assert np.all(np.diff(listed) < 0)  # strictly ordered
            rest = np.delete(values[r], V[r, : k[r]])
            rest = rest[~np.isnan(rest)]
            assert rest.size == 0 or listed[-1] > rest.max()  # above the unlisted


def test_list_votes_ties_missing_and_top_k():
    values = np.array(
        [
            [3.0, 1.0, 2.0, 0.0],  # distinct: full list
            [3.0, 1.0, 1.0, 2.0],  # tie at the 3rd place: list stops before it
            [np.nan, 1.0, 2.0, 0.0],  # missing: never listed
            [1.0, 1.0, 0.0, 2.0],  # tie at the 2nd place
        ]
    )
    np.testing.assert_array_equal(
        LR.list_votes(values),
        [[0, 2, 1, 3], [0, 3, -1, -1], [2, 1, 3, -1], [3, -1, -1, -1]],
    )
    np.testing.assert_array_equal(
        LR.list_votes(values, top_k=2),
        [[0, 2, -1, -1], [0, 3, -1, -1], [2, 1, -1, -1], [-1, -1, -1, -1]],
    )


def test_partial_lf_lists_only_items_above_its_training_quantile(tasks, tables):
    name = "diabetes_progression_lists"
    task, table = tasks[name], tables[name]
    (a,) = [i for i, lf in enumerate(LR._SPECS[name].lfs) if lf.above_quantile]
    lf = LR._SPECS[name].lfs[a]
    values = table[lf.column].to_numpy(dtype=float)
    cut = np.quantile(values[np.unique(task.items_train)], lf.above_quantile)
    listed = task.V_test[:, a] >= 0
    items = np.take_along_axis(
        task.items_test, np.where(listed, task.V_test[:, a], 0), 1
    )
    assert np.all(values[items[listed]] >= cut)
    assert listed.sum(axis=1).mean() < task.n_items / 2


@pytest.mark.parametrize("name", NAMES)
def test_errors_and_normalization(tasks, name):
    task = tasks[name]
    np.testing.assert_array_equal(task.normalized_errors(task.Y_test), 0.0)
    np.testing.assert_allclose(task.normalized_errors(task.Y_test[:, ::-1]), 1.0)
    np.testing.assert_array_equal(task.errors(task.Y_train, task.Y_train), 0.0)
    pred = borda(task.V_train)
    e = task.normalized_errors(pred, task.Y_train)
    assert e.shape == (task.n_train,) and np.all((e >= 0) & (e <= 1))
    with pytest.raises(ValueError, match="Y=task.Y_train"):
        task.normalized_errors(pred)
    with pytest.raises(ValueError, match="twice"):
        task.errors(np.zeros((task.n_test, task.n_items), dtype=int))


@pytest.mark.parametrize("name", NAMES)
def test_fusion_beats_chance_and_lfs_differ(tasks, name):
    task = tasks[name]
    for method in (borda, reciprocal_rank_fusion, copeland):
        assert task.normalized_errors(method(task.V_test)).mean() < 0.4
    summary = task.lf_summary("train")
    assert list(summary.columns) == [
        "top_k",
        "votes",
        "mean_listed",
        "coverage",
        "accuracy",
    ]
    assert summary["accuracy"].max() - summary["accuracy"].min() > 0.1
    assert (summary["accuracy"] > 0.5).all()
    assert ((summary["coverage"] > 0) & (summary["coverage"] <= 1)).all()


def test_sample_dev(tasks):
    task = tasks["wine_flavanoid_lists"]
    V_dev, Y_dev = task.sample_dev(10, seed=1)
    assert V_dev.shape == (10, task.n_lfs, task.n_items) and Y_dev.shape == (10, 10)
    again = task.sample_dev(10, seed=1)
    np.testing.assert_array_equal(again[0], V_dev)
    np.testing.assert_array_equal(again[1], Y_dev)
    # The rows are distinct training rows.
    rows = [
        int(
            np.flatnonzero(
                (task.Y_train == y).all(axis=1) & (task.V_train == v).all(axis=(1, 2))
            )[0]
        )
        for v, y in zip(V_dev, Y_dev, strict=True)
    ]
    assert len(set(rows)) == 10
    for bad in (0, task.n_train + 1):
        with pytest.raises(ValueError, match="n_dev"):
            task.sample_dev(bad)


def test_pairwise_accuracy_by_hand():
    V = np.array([[[0, 1, 2], [2, -1, -1], [-1, -1, -1]]])
    Y = np.array([[0, 1, 2]])
    acc, cov = LR.pairwise_accuracy(V, Y)
    # LF 0 orders 3 pairs right; LF 1 orders (0, 2) and (1, 2), both wrong.
    np.testing.assert_allclose(acc[:2], [1.0, 0.0])
    assert np.isnan(acc[2])
    np.testing.assert_allclose(cov, [1.0, 2 / 3, 0.0])
    with pytest.raises(ValueError, match="rows"):
        LR.pairwise_accuracy(V, np.zeros((2, 3), dtype=int) + [0, 1, 2])


def test_loader_arguments_are_validated():
    with pytest.raises(ValueError, match="n_items"):
        LR.load_wine_flavanoid_lists(n_items=1)
    with pytest.raises(ValueError, match="each needs n_items"):
        LR.load_wine_flavanoid_lists(n_items=60)
    with pytest.raises(ValueError, match="split must be"):
        LR.load_wine_flavanoid_lists(**SMALL).lf_summary("dev")


def test_top10_coverage_in_the_docstring_is_measured(tasks):
    # Measured over seeds 0-2 at the default sizes; seed 0 must be in the ranges.
    doc = " ".join(LR.load_diabetes_progression_lists.__doc__.split())
    stated = {
        "by_total_cholesterol_top10": "total cholesterol 41-44%",
        "by_bmi_top10": "BMI 57-62%",
        "by_triglycerides_top10": "triglycerides 64-67%",
    }
    assert "votes on 41-67% of rows" in doc
    task = LR.load_diabetes_progression_lists(seed=0)
    V = np.concatenate([task.V_train, task.V_test])
    for lf, text in stated.items():
        assert text in doc
        low, high = map(int, text.split()[-1].rstrip("%").split("-"))
        share = round(100 * (V[:, task.lf_names.index(lf), 0] >= 0).mean())
        assert low <= share <= high, (lf, share)
