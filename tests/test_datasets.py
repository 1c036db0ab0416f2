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
from snorkel_structured.datasets._task import WeakSupervisionTask, finite_distance


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


# -- errors() checks its inputs: labels in range, points on the space ----------------


def _toy_task(space, fallback, kind="finite"):
    """A 2-row task on ``space``: only errors() and its checks are used."""
    return WeakSupervisionTask(
        name="toy",
        kind=kind,
        space=space,
        L_train=np.zeros((2, 1)),
        L_test=np.zeros((2, 1)),
        Y_train=np.zeros(2),
        Y_test=np.zeros(2),
        lf_names=("lf",),
        metric="toy",
        distance=finite_distance(space) if kind == "finite" else space.dist,
        normalizer=2.0,
        fallback=fallback,
    )


def test_finite_errors_by_hand():
    task = _toy_task(ss.Discrete(3), fallback=2)  # 0/1 distance
    # -1 is scored as the fallback 2; whole-number floats are label indices.
    np.testing.assert_array_equal(
        task.errors([0, -1, 2.0, 1], [0, 0, 2, 2.0]), [0.0, 1.0, 0.0, 1.0]
    )
    np.testing.assert_array_equal(task.normalized_errors([0, -1.0], [1, 2]), [0.5, 0.0])


@pytest.mark.parametrize(
    ("pred", "Y", "message"),
    [
        # was scored as label 1 (negative indexing)
        ([0, -2], [0, 1], r"pred has -2 at row 1, which is out of range"),
        # was a bare IndexError
        ([3, 0], [0, 1], r"pred has 3 at row 0, which is out of range"),
        # was truncated to 1
        ([0, 1.7], [0, 1], r"pred has 1.7 at row 1, which is not a whole number"),
        ([np.nan, 0], [0, 1], r"pred has nan at row 0, which is not a whole"),
        # a truth of -1 was not filled and was scored against label 2
        ([0, 1], [0, -1], r"Y has -1 at row 1, which is out of range.*cannot abstain"),
        ([0, 1], [0, 0.5], r"Y has 0.5 at row 1, which is not a whole number"),
        (["a", "b"], [0, 1], r"pred must hold label indices .* got dtype <U1"),
    ],
)
def test_finite_errors_refuse_what_is_not_a_label(pred, Y, message):
    task = _toy_task(ss.Discrete(3), fallback=2)
    with pytest.raises(ValueError, match=message) as info:
        task.errors(pred, Y)
    assert "[0, 3)" in str(info.value)
    with pytest.raises(ValueError, match=message):
        task.normalized_errors(pred, Y)


def test_sphere_errors_by_hand():
    task = _toy_task(ss.Sphere(2), fallback=np.array([0.0, 0.0, 1.0]), kind="manifold")
    pred = [[1.0, 0.0, 0.0], [np.nan] * 3, [1.0 + 1e-7, 0.0, 0.0]]  # within 1e-6
    Y = [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    np.testing.assert_allclose(task.errors(pred, Y), [np.pi / 2, 0.0, 0.0], atol=1e-6)


@pytest.mark.parametrize(
    ("pred", "message"),
    [
        ([[5.0, 0.0, 0.0]], r"pred has \[5.0, 0.0, 0.0\] at row 0, which is off Sph"),
        ([[0.0, 0.0, 0.0]], r"pred has \[0.0, 0.0, 0.0\] at row 0, which is off Sph"),
        ([[1.00001, 0.0, 0.0]], "which is off Sphere"),  # beyond atol=1e-6
        ([[np.inf, 0.0, 0.0]], r"pred has \[inf, 0.0, 0.0\] at row 0, which is not fi"),
        ([[1.0, 0.0]], r"pred must have shape \(n_samples, 3\)"),
    ],
)
def test_sphere_errors_refuse_points_off_the_sphere(pred, message):
    # 5 x a unit vector used to score 0.374 instead of 0, the zero vector 0.5.
    task = _toy_task(ss.Sphere(2), fallback=np.array([0.0, 0.0, 1.0]), kind="manifold")
    with pytest.raises(ValueError, match=message):
        task.errors(pred, [[1.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match=message):
        task.normalized_errors(pred, [[1.0, 0.0, 0.0]])


def test_sphere_errors_name_the_projection_and_check_the_truth():
    task = _toy_task(ss.Sphere(2), fallback=np.array([0.0, 0.0, 1.0]), kind="manifold")
    with pytest.raises(ValueError, match=r"task\.space\.projection\(pred\)"):
        task.errors([[1.0, 1.0, 0.0]], [[1.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match=r"Y has \[2.0, 0.0, 0.0\] at row 0"):
        task.errors([[1.0, 0.0, 0.0]], [[2.0, 0.0, 0.0]])


def test_euclidean_errors_refuse_infinite_predictions():
    # inf used to come back as an infinite error.
    task = _toy_task(ss.Euclidean(1), fallback=np.array([1.0]), kind="manifold")
    np.testing.assert_array_equal(
        task.errors([[3.0], [np.nan]], [[1.0], [-1.0]]), [2.0, 2.0]
    )
    with pytest.raises(ValueError, match=r"pred has \[-inf\] at row 1, which is not"):
        task.errors([[3.0], [-np.inf]], [[1.0], [-1.0]])


def test_loaded_tasks_check_errors_inputs(tasks):
    wine = tasks["wine_flavanoid_rankings"]
    with pytest.raises(ValueError, match=r"pred has 24 at row 0.*\[0, 24\)"):
        wine.errors(np.full(wine.n_test, 24), wine.Y_test)
    cities = tasks["world_cities"]
    np.testing.assert_array_equal(cities.errors(cities.Y_test, cities.Y_test), 0.0)
    with pytest.raises(ValueError, match="off Sphere"):
        cities.errors(5 * cities.Y_test, cities.Y_test)


# -- the small ranking loaders and split helpers validate their sizes ---------------


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        # was "arrays used as indices must be of integer (or boolean) type"
        (
            lambda: D.load_diabetes_rankings(n_train=0),
            ValueError,
            r"n_train must be in the range \[1, inf\); got 0",
        ),
        # was a task with 0 test rows (and a NaN min_gap)
        (
            lambda: D.load_wine_flavanoid_rankings(n_test=0),
            ValueError,
            r"n_test must be in the range \[1, inf\); got 0",
        ),
        # was "negative dimensions are not allowed"
        (
            lambda: D.load_tumour_concavity_rankings(n_train=-1),
            ValueError,
            r"n_train must be in the range \[1, inf\); got -1",
        ),
        # was "'float' object cannot be interpreted as an integer"
        (
            lambda: D.load_wine_flavanoid_rankings(n_train=2.5),
            TypeError,
            "n_train must be an int; got 2.5",
        ),
        (
            lambda: D.load_metabolic_score_rankings(n_items=1),
            ValueError,
            r"n_items must be in the range \[2, inf\); got 1",
        ),
        # was "a cannot be empty unless no samples are taken"
        (
            lambda: D.diabetes_groups(n_train_patients=500),
            ValueError,
            r"n_train_patients must be in the range \[4, 438\]; got 500",
        ),
        (
            lambda: D.diabetes_groups(n_test=0),
            ValueError,
            r"n_test must be in the range \[1, inf\); got 0",
        ),
        # was "cannot convert float NaN to integer"
        (
            lambda: D.split_groups(100, train_fraction=float("nan")),
            ValueError,
            "train_fraction must be finite; got nan",
        ),
        (
            lambda: D.split_groups(100, train_fraction=1.0),
            ValueError,
            r"train_fraction must be in the range \(0.0, 1.0\); got 1.0",
        ),
        (
            lambda: D.split_groups(100, n_items=4.0),
            TypeError,
            "n_items must be an int",
        ),
        (
            lambda: D.country_groups(train_fraction=0),
            ValueError,
            r"train_fraction must be in the range \(0.0, 1.0\); got 0",
        ),
        # was an empty test split
        (
            lambda: D.split_cities(pd.DataFrame({"a": range(10)}), train_fraction=2),
            ValueError,
            r"train_fraction must be in the range \(0.0, 1.0\); got 2",
        ),
    ],
)
def test_loader_sizes_are_validated(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_smallest_valid_sizes_still_work():
    train, test = D.split_groups(10, 0, n_train=1, n_test=2, n_items=2)
    assert train.shape == (1, 2) and test.shape == (2, 2)
    train, test = D.diabetes_groups(0, n_train=1, n_test=1, n_items=2)
    assert len(train) == len(test) == 1
    frame = pd.DataFrame({"a": range(1000)})
    train, test = D.split_cities(frame, seed=0, train_fraction=0.5)
    assert len(train) + len(test) == 1000 and 400 < len(train) < 600
