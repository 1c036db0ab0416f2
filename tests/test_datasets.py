"""Tests of ss.datasets: shapes, label spaces, metrics by definition, no label leaks."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pandas as pd
import pytest

import snorkel_structured as ss
from snorkel_structured import datasets as D
from snorkel_structured.datasets import _geo


@pytest.fixture(scope="module")
def tasks():
    return {name: load(seed=0) for name, load in D.TASKS.items()}


@pytest.mark.parametrize("name", list(D.TASKS))
def test_shapes_and_labels_in_the_space(tasks, name):
    task = tasks[name]
    assert task.name == name
    assert task.n_lfs == len(task.lf_names) >= 3
    assert task.n_train > 1000 and task.n_test > 400
    assert task.Y_train.shape[0] == task.n_train and task.Y_test.shape[0] == task.n_test
    if task.kind == "finite":
        r = len(task.space)
        for L in (task.L_train, task.L_test):
            assert L.dtype.kind == "i" and L.ndim == 2
            assert L.min() >= ss.ABSTAIN and L.max() < r
        for Y in (task.Y_train, task.Y_test):
            assert Y.min() >= 0 and Y.max() < r
        if task.prior_support is not None:  # the truth lies on the stated support
            assert np.isin(task.Y_test, task.prior_support).all()
        assert 0 <= task.fallback < r
    else:
        dim = task.space.ambient_dim
        for L, Y in ((task.L_train, task.Y_train), (task.L_test, task.Y_test)):
            assert L.shape == (len(Y), task.n_lfs, dim) and Y.shape == (len(Y), dim)
            nan = np.isnan(L)
            # An abstain is a whole row of NaN, never a partly missing point.
            assert (nan.all(axis=-1) == nan.any(axis=-1)).all()
            voted = ~nan.any(axis=-1)
            assert task.space.belongs(L[voted]).all()
            assert task.space.belongs(Y).all()
        assert task.space.belongs(task.fallback[None]).all()
    # Every LF votes on a good share of rows, and no row is scored off the [0, 1] scale.
    for j in range(task.n_lfs):
        err = task.normalized_errors(task.L_test[:, j], task.Y_test)
        assert err.shape == (task.n_test,)
        assert (err >= 0).all() and (err <= 1 + 1e-9).all()


@pytest.mark.parametrize("name", ["diabetes_rankings", "city_utc_offsets"])
def test_seeds_repeat_and_differ(name):
    load = D.TASKS[name]
    a, b, c = load(seed=0), load(seed=0), load(seed=1)
    np.testing.assert_array_equal(a.L_train, b.L_train)
    np.testing.assert_array_equal(a.Y_test, b.Y_test)
    assert a.n_test != c.n_test or not np.array_equal(a.Y_test, c.Y_test)
    # A Generator is accepted and advances.
    rng = np.random.default_rng(0)
    first, second = load(seed=rng), load(seed=rng)
    np.testing.assert_array_equal(first.Y_test, a.Y_test)
    assert not np.array_equal(second.Y_test, a.Y_test)


def test_kendall_metric_by_counting_item_pairs(tasks):
    for name in ("diabetes_rankings", "country_population_rankings"):
        task = tasks[name]
        space = task.space
        orders = space.decode(np.arange(len(space)))
        i, j = np.meshgrid(np.arange(len(space)), np.arange(len(space)))
        got = task.distance(i.ravel(), j.ravel())
        for k, (a, b) in enumerate(zip(i.ravel(), j.ravel(), strict=True)):
            pos_a = {item: p for p, item in enumerate(orders[a])}
            pos_b = {item: p for p, item in enumerate(orders[b])}
            disagree = sum(
                (pos_a[x] < pos_a[y]) != (pos_b[x] < pos_b[y])
                for x, y in itertools.combinations(range(4), 2)
            )
            assert got[k] == disagree
        assert task.normalizer == got.max() == 6


def test_rankings_truth_orders_by_the_quantity():
    train, _ = D.diabetes_groups(seed=3, n_train=50, n_test=10)
    from sklearn.datasets import load_diabetes

    progression = load_diabetes().target
    for row in train.itertuples():
        order = row.order
        values = [progression[getattr(row, f"patient_{k}")] for k in order]
        assert values == sorted(values, reverse=True)


def test_great_circle_metric_is_haversine(tasks):
    task = tasks["world_cities"]
    rng = np.random.default_rng(0)
    lat1, lat2 = rng.uniform(-90, 90, (2, 200))
    lon1, lon2 = rng.uniform(-180, 180, (2, 200))
    p1, p2 = np.radians([lat1, lon1]), np.radians([lat2, lon2])
    h = (
        np.sin((p2[0] - p1[0]) / 2) ** 2
        + np.cos(p1[0]) * np.cos(p2[0]) * np.sin((p2[1] - p1[1]) / 2) ** 2
    )
    haversine_km = 2 * 6371.0 * np.arcsin(np.sqrt(h))
    got = task.distance(D.to_xyz(lat1, lon1), D.to_xyz(lat2, lon2))
    np.testing.assert_allclose(got, haversine_km, atol=1e-6)
    # The normalizer is the largest possible distance: antipodes.
    antipode = task.distance(D.to_xyz([10.0], [20.0]), D.to_xyz([-10.0], [-160.0]))
    np.testing.assert_allclose(antipode, task.normalizer)


def test_utc_metric_and_truth(tasks):
    task = tasks["city_utc_offsets"]
    np.testing.assert_allclose(
        task.distance(np.array([[5.5], [-8.0]]), np.array([[3.0], [1.0]])), [2.5, 9.0]
    )
    assert task.normalizer == 24.0
    # Offsets are the zones' January offsets: Paris +1, New York -5, Kolkata +5.5.
    np.testing.assert_allclose(
        D.utc_offsets(["Europe/Paris", "America/New_York", "Asia/Kolkata"]),
        [1.0, -5.0, 5.5],
    )
    assert np.isin(task.Y_test * 4, np.arange(-12 * 4, 15 * 4)).all()  # quarter hours


@pytest.mark.parametrize(
    "name, cities, kwargs",
    [
        ("european_regions", D.european_cities, {"root": "EU"}),
        ("world_regions", None, {"root": "World", "continents": True}),
    ],
)
def test_tree_metric_by_shortest_paths(tasks, name, cities, kwargs):
    task = tasks[name]
    space = task.space
    nodes = space.items
    if cities is None:  # rebuild the world tree from its leaves' labels
        leaves = [nodes[i] for i in task.prior_support]
        cont = D.geonames_countries()
        frame = pd.DataFrame(
            {
                "region": leaves,
                "countrycode": [r.split(".")[0] for r in leaves],
            }
        )
        frame["continent"] = frame["countrycode"].map(
            {cc: c["continentcode"] for cc, c in cont.items()}
        )
        tree = D.region_tree(frame, **kwargs)
    else:
        tree = D.region_tree(cities(), **kwargs)
    assert nx.is_tree(tree) and set(tree.nodes) == set(nodes)
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, len(space), (2, 300))
    expected = [
        nx.shortest_path_length(tree, nodes[i], nodes[j])
        for i, j in zip(a, b, strict=True)
    ]
    np.testing.assert_array_equal(task.distance(a, b), expected)
    assert task.normalizer == nx.diameter(tree)
    # Leaves are exactly the regions, and the fallback is the root: it minimizes the
    # summed distance to the leaves (checked by brute force over every node).
    assert all(tree.degree(nodes[i]) == 1 for i in task.prior_support)
    sums = [
        sum(nx.shortest_path_length(tree, n, nodes[i]) for i in task.prior_support)
        for n in (kwargs["root"], *list(tree.neighbors(kwargs["root"]))[:5])
    ]
    assert nodes[task.fallback] == kwargs["root"] and sums[0] == min(sums)


def test_fallback_scores_abstains(tasks):
    task = tasks["diabetes_rankings"]
    pred = np.full(task.n_test, ss.ABSTAIN)
    np.testing.assert_array_equal(
        task.errors(pred, task.Y_test),
        task.distance(np.full(task.n_test, task.fallback), task.Y_test),
    )
    task = tasks["world_cities"]
    pred = np.full((task.n_test, 3), np.nan)
    np.testing.assert_allclose(
        task.errors(pred, task.Y_test),
        task.distance(np.broadcast_to(task.fallback, pred.shape), task.Y_test),
    )


# -- the LFs never read the truth: change the label source, the votes stay ----------


def _patched_cities(monkeypatch, edit):
    frame = edit(_geo._cities().copy())
    monkeypatch.setattr(_geo, "_cities", lambda: frame)


def test_diabetes_votes_ignore_progression(monkeypatch):
    import sklearn.datasets

    base = D.load_diabetes_rankings(seed=0, n_train=300, n_test=100)
    original = sklearn.datasets.load_diabetes

    def shuffled(**kwargs):
        data = original(**kwargs)
        data.frame["target"] = np.random.default_rng(1).permutation(
            data.frame["target"].to_numpy()
        )
        return data

    monkeypatch.setattr(sklearn.datasets, "load_diabetes", shuffled)
    other = D.load_diabetes_rankings(seed=0, n_train=300, n_test=100)
    np.testing.assert_array_equal(base.L_train, other.L_train)
    np.testing.assert_array_equal(base.L_test, other.L_test)
    assert not np.array_equal(base.Y_test, other.Y_test)


def test_country_votes_ignore_population(monkeypatch):
    from snorkel_structured.datasets import rankings

    base = D.load_country_population_rankings(seed=0)
    countries = D.geonames_countries()
    codes = [cc for cc, c in countries.items() if c["population"] > 0]
    pops = np.random.default_rng(1).permutation(
        [countries[cc]["population"] for cc in codes]
    )
    for cc, p in zip(codes, pops, strict=True):
        countries[cc]["population"] = int(p)
    monkeypatch.setattr(rankings, "geonames_countries", lambda: countries)
    other = D.load_country_population_rankings(seed=0)
    np.testing.assert_array_equal(base.L_test, other.L_test)
    assert not np.array_equal(base.Y_test, other.Y_test)


def _test_rows(frame):
    _, test = D.split_cities(frame, seed=0)
    return test.index


def test_city_votes_ignore_test_locations(monkeypatch):
    base = D.load_world_cities(seed=0)
    capitals = set(D.capital_cities(_geo._cities()).to_numpy())

    def move(frame):
        # Move every held-out city except capitals (whose location the capitals
        # gazetteer states, as in tutorial 02) by a few degrees.
        rows = _test_rows(frame).difference(list(capitals))
        frame.loc[rows, "lat"] = np.clip(frame.loc[rows, "lat"] + 3.0, -89, 89)
        frame.loc[rows, "lon"] = frame.loc[rows, "lon"] - 4.0
        return frame

    _patched_cities(monkeypatch, move)
    other = D.load_world_cities(seed=0)
    np.testing.assert_array_equal(base.L_test, other.L_test)
    np.testing.assert_array_equal(base.L_train, other.L_train)
    assert not np.allclose(base.Y_test, other.Y_test)


def test_utc_votes_ignore_test_time_zones(monkeypatch):
    base = D.load_city_utc_offsets(seed=0)

    def reassign(frame):
        # Held-out cities get another known zone: the truth changes, nothing else.
        known = ~np.isnan(D.utc_offsets(frame["timezone"]))
        test = _test_rows(frame[known])
        frame.loc[test, "timezone"] = np.random.default_rng(2).permutation(
            frame.loc[test, "timezone"].to_numpy()
        )
        return frame

    _patched_cities(monkeypatch, reassign)
    other = D.load_city_utc_offsets(seed=0)
    np.testing.assert_array_equal(base.L_test, other.L_test, strict=True)
    assert not np.array_equal(base.Y_test, other.Y_test)


def test_region_votes_ignore_test_regions(monkeypatch):
    base = D.load_european_regions(seed=0)

    def shuffle_regions(frame):
        # Permute the admin codes of held-out European cities within each country.
        eu = frame[(frame["continent"] == "EU") & (frame["admin1code"] != "")]
        test = eu.loc[_test_rows(eu)]
        rng = np.random.default_rng(3)
        for _, idx in test.groupby("countrycode").groups.items():
            frame.loc[idx, "admin1code"] = rng.permutation(
                frame.loc[idx, "admin1code"].to_numpy()
            )
        return frame

    _patched_cities(monkeypatch, shuffle_regions)
    other = D.load_european_regions(seed=0)
    assert base.space.decode(base.L_test.ravel()) == other.space.decode(
        other.L_test.ravel()
    )
    assert base.space.decode(base.Y_test) != other.space.decode(other.Y_test)
