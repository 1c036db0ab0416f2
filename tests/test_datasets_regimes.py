"""Tests of the regime tasks of ss.datasets: shapes, seeds, no label reads, the regimes.

Each regime task is built to show one property a label model meets on real data (a
dominant LF with sparse others, clusters of LFs sharing a source, a consensus truth,
abstains on ties or missing values, 5 and 6 items, a sphere with dependent LFs);
these tests check that the property is really in the data.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import snorkel_structured as ss
from snorkel_structured import datasets as D
from snorkel_structured.datasets import _geo

RANKING = {
    "wine_flavanoid_rankings": (4, 6),  # (n_items, n_lfs)
    "tumour_concavity_rankings": (5, 7),
    "metabolic_score_rankings": (6, 5),
    "country_density_rankings": (5, 5),
    "country_area_rankings": (5, 6),
    "country_population_sparse_rankings": (4, 6),
}
SMALL = {"n_train": 300, "n_test": 100}


@pytest.fixture(scope="module")
def tasks():
    return {name: D.TASKS[name](seed=0) for name in (*RANKING, "world_city_centroids")}


def _coverage(task):
    L = task.L_test
    if task.kind == "finite":
        return (L != ss.ABSTAIN).mean(axis=0)
    return (~np.isnan(L).any(axis=-1)).mean(axis=0)


def _mean_kendall(space, a, b):
    """Mean Kendall distance over rows where both a and b are votes."""
    both = (a != ss.ABSTAIN) & (b != ss.ABSTAIN)
    return space.distance_matrix[a[both], b[both]].mean()


@pytest.mark.parametrize("name", list(RANKING))
def test_ranking_shapes_dtypes_and_space(tasks, name):
    task = tasks[name]
    n_items, n_lfs = RANKING[name]
    assert isinstance(task.space, ss.Permutations)
    assert task.space.n_items == n_items and task.space.metric == "kendall_tau"
    assert task.L_train.shape == (1500, n_lfs) and task.L_test.shape == (500, n_lfs)
    assert task.Y_train.shape == (1500,) and task.Y_test.shape == (500,)
    for array in (task.L_train, task.L_test, task.Y_train, task.Y_test):
        assert array.dtype == np.int64
    assert task.Y_test.min() >= 0 and task.Y_test.max() < len(task.space)
    assert task.L_test.min() >= ss.ABSTAIN and task.L_test.max() < len(task.space)
    assert task.normalizer == n_items * (n_items - 1) / 2
    assert task.normalized_errors(task.L_test[:, 0], task.Y_test).max() <= 1.0
    assert "Regime:" in task.description and len(task.lf_names) == n_lfs


def test_sphere_task_shapes(tasks):
    task = tasks["world_city_centroids"]
    assert isinstance(task.space, ss.Sphere) and task.space.dim == 2
    assert task.L_train.shape == (task.n_train, 5, 3) and task.n_train > 20_000
    assert task.L_test.dtype == np.float64 and task.Y_test.shape == (task.n_test, 3)
    assert "Regime:" in task.description
    # The same split and truth as load_world_cities (the same cities, the same seed).
    np.testing.assert_array_equal(task.Y_test, D.load_world_cities(seed=0).Y_test)


@pytest.mark.parametrize("name", list(RANKING))
def test_seeds_repeat_and_differ(name):
    load = D.TASKS[name]
    a, b, c = load(seed=0, **SMALL), load(seed=0, **SMALL), load(seed=1, **SMALL)
    np.testing.assert_array_equal(a.L_train, b.L_train)
    np.testing.assert_array_equal(a.Y_test, b.Y_test)
    assert not np.array_equal(a.Y_test, c.Y_test)
    rng = np.random.default_rng(0)  # a Generator is accepted and advances
    first, second = load(seed=rng, **SMALL), load(seed=rng, **SMALL)
    np.testing.assert_array_equal(first.L_test, a.L_test)
    assert not np.array_equal(second.Y_test, a.Y_test)


def test_split_groups_keeps_held_out_items_out_of_training_groups():
    train, test = D.split_groups(60, seed=3, n_train=200, n_test=50, n_items=5)
    assert train.shape == (200, 5) and test.shape == (50, 5)
    assert not set(train.ravel()) & set(test.ravel())
    assert len(set(train.ravel())) == 42  # round(0.7 * 60) training items
    assert all(len(set(row)) == 5 for row in np.vstack([train, test]))
    with pytest.raises(ValueError, match="n_items"):
        D.split_groups(5, n_items=4)


def test_column_votes_by_definition():
    # Order by the values (highest first); abstain on ties, NaN, or a gap < min_gap.
    rng = np.random.default_rng(0)
    values = rng.integers(0, 40, 40).astype(float)  # ties, and gaps of all sizes
    values[[3, 7]] = np.nan
    members = np.array([rng.choice(40, 4, replace=False) for _ in range(300)])
    space = ss.Permutations(4)
    lfs = [D.ColumnLF("ties", values), D.ColumnLF("far", values, min_gap=2.0)]
    L = D.column_votes(space, lfs, members)
    assert L.dtype == np.int64 and L.shape == (300, 2)
    assert ((L == ss.ABSTAIN).any(0) & (L != ss.ABSTAIN).any(0)).all()  # not vacuous
    for row, votes in zip(members, L, strict=True):
        v = values[row]
        gaps = [abs(x - y) for x, y in itertools.combinations(v, 2)]
        for vote, min_gap in zip(votes, (0.0, 2.0), strict=True):
            if np.isnan(v).any() or min(gaps) == 0 or min(gaps) < min_gap:
                assert vote == ss.ABSTAIN
            else:
                order = tuple(sorted(range(4), key=lambda i: -v[i]))
                assert space.item(vote) == order


# -- the LFs never read the label: change the truth's column, the votes stay -------


@pytest.mark.parametrize(
    "name, loader, column",
    [
        ("wine_flavanoid_rankings", "load_wine", "flavanoids"),
        ("tumour_concavity_rankings", "load_breast_cancer", "worst concave points"),
    ],
)
def test_table_votes_ignore_the_truth_column(monkeypatch, name, loader, column):
    import sklearn.datasets

    base = D.TASKS[name](seed=0, **SMALL)
    original = getattr(sklearn.datasets, loader)

    def shuffled(**kwargs):
        data = original(**kwargs)
        data.frame[column] = np.random.default_rng(1).permutation(
            data.frame[column].to_numpy()
        )
        return data

    monkeypatch.setattr(sklearn.datasets, loader, shuffled)
    other = D.TASKS[name](seed=0, **SMALL)
    np.testing.assert_array_equal(base.L_train, other.L_train)
    np.testing.assert_array_equal(base.L_test, other.L_test)
    assert not np.array_equal(base.Y_test, other.Y_test)


@pytest.mark.parametrize(
    "name, field",
    [
        ("country_area_rankings", "areakm2"),
        ("country_population_sparse_rankings", "population"),
    ],
)
def test_country_votes_ignore_the_truth_field(monkeypatch, name, field):
    from snorkel_structured.datasets import rankings

    base = D.TASKS[name](seed=0, **SMALL)
    countries = D.geonames_countries()
    kept = [  # the countries the tasks use; shuffling among them keeps the set
        cc
        for cc, c in countries.items()
        if c["population"] > 0 and float(c["areakm2"]) > 0
    ]
    shuffled = np.random.default_rng(1).permutation(
        [countries[cc][field] for cc in kept]
    )
    for cc, value in zip(kept, shuffled, strict=True):
        countries[cc][field] = value
    monkeypatch.setattr(rankings, "geonames_countries", lambda: countries)
    other = D.TASKS[name](seed=0, **SMALL)
    np.testing.assert_array_equal(base.L_train, other.L_train)
    np.testing.assert_array_equal(base.L_test, other.L_test)
    assert not np.array_equal(base.Y_test, other.Y_test)


def test_city_centroid_votes_ignore_held_out_locations(monkeypatch, tasks):
    base = tasks["world_city_centroids"]

    def move(frame):
        _, test = D.split_cities(frame, seed=0)
        frame.loc[test.index, "lat"] = np.clip(
            frame.loc[test.index, "lat"] + 3, -89, 89
        )
        frame.loc[test.index, "lon"] = frame.loc[test.index, "lon"] - 4.0
        return frame

    frame = move(_geo._cities().copy())
    monkeypatch.setattr(_geo, "_cities", lambda: frame)
    other = D.load_world_city_centroids(seed=0)
    np.testing.assert_array_equal(base.L_test, other.L_test)
    np.testing.assert_array_equal(base.L_train, other.L_train)
    assert not np.allclose(base.Y_test, other.Y_test)


# -- the regimes are really there ----------------------------------------------------


@pytest.mark.parametrize(
    "name", ["wine_flavanoid_rankings", "country_population_sparse_rankings"]
)
def test_dominant_lf_with_sparse_others(tasks, name):
    task = tasks[name]
    cov = _coverage(task)
    assert cov[0] > 0.85 and (cov[1:] < 0.1).all() and (cov[1:] > 0).all()
    # The dominant LF is good: well under chance (0.5 normalized Kendall distance).
    assert task.normalized_errors(task.L_test[:, 0], task.Y_test).mean() < 0.2


def test_tumour_size_cluster_agrees_with_itself_more_than_with_the_truth(tasks):
    task = tasks["tumour_concavity_rankings"]
    space, L, Y = task.space, task.L_train, task.Y_train
    size = [task.lf_names.index(n) for n in ("by_mean_radius", "by_mean_perimeter")]
    size += [task.lf_names.index(n) for n in ("by_mean_area", "by_worst_radius")]
    within = max(
        _mean_kendall(space, L[:, a], L[:, b])
        for a, b in itertools.combinations(size, 2)
    )
    to_truth = min(_mean_kendall(space, L[:, a], Y) for a in size)
    assert within < 0.5 * to_truth
    # The size LFs are worse than the compactness LFs, though they outnumber them.
    compact = task.lf_names.index("by_worst_compactness")
    assert _mean_kendall(space, L[:, compact], Y) < to_truth


def test_metabolic_truth_is_the_consensus_of_the_lf_signals(tasks):
    from sklearn.datasets import load_diabetes

    task = tasks["metabolic_score_rankings"]
    patients = load_diabetes(as_frame=True).frame
    members = D.split_groups(len(patients), seed=0, n_items=6)
    # The truth orders by the equal-weight mean of the LFs' standardized signals.
    z = np.column_stack(
        [
            sign * (patients[c] - patients[c].mean()) / patients[c].std(ddof=0)
            for _, c, sign in D.feature_rankings.METABOLIC_SIGNALS
        ]
    )
    for m, Y in zip(members, (task.Y_train, task.Y_test), strict=True):
        np.testing.assert_array_equal(task.space.from_scores(z.mean(1)[m]), Y)
        np.testing.assert_allclose(D.metabolic_score(patients), z.mean(1))
    # Each LF orders by its own signal alone (where it votes).
    for j in range(task.n_lfs):
        voted = task.L_test[:, j] != ss.ABSTAIN
        own = task.space.from_scores(z[:, j][members[1]])
        np.testing.assert_array_equal(task.L_test[voted, j], own[voted])
    assert (_coverage(task) < 0.95).all()  # ties in the group: the LFs abstain


def test_density_truth_is_the_equal_weight_composite(tasks):
    task = tasks["country_density_rankings"]
    facts = D.country_facts()
    members = D.split_groups(len(facts), seed=0, n_items=5)
    composite = np.log(facts["population"].to_numpy()) + np.log(
        1 / facts["area"].to_numpy()
    )
    np.testing.assert_array_equal(
        task.space.from_scores(composite[members[1]]), task.Y_test
    )
    # by_capital_density abstains where the capital is missing from the gazetteer.
    missing = np.isnan(facts["capital_population"].to_numpy())[members[1]].any(1)
    j = task.lf_names.index("by_capital_density")
    assert missing.any() and (task.L_test[missing, j] == ss.ABSTAIN).all()


def test_area_lfs_abstain_on_ties_and_missing_values(tasks):
    task = tasks["country_area_rankings"]
    facts = D.country_facts()
    members = D.split_groups(len(facts), seed=0, n_items=5)
    for name in task.lf_names:
        values = facts[name.removeprefix("by_")].to_numpy()[members[1]]
        s = np.sort(values, axis=1)
        cannot = (np.diff(s, axis=1) == 0).any(1) | np.isnan(values).any(1)
        np.testing.assert_array_equal(
            task.L_test[:, task.lf_names.index(name)] == ss.ABSTAIN, cannot
        )
    cov = dict(zip(task.lf_names, _coverage(task), strict=True))
    assert cov["by_neighbours"] < 0.4 and cov["by_city_spread_km"] < 0.6


def test_country_and_timezone_centroids_share_a_source(tasks):
    task = tasks["world_city_centroids"]
    country, zone = task.L_test[:, 2], task.L_test[:, 3]
    both = ~np.isnan(country).any(1) & ~np.isnan(zone).any(1)
    between = np.median(task.distance(country[both], zone[both]))
    to_truth = min(
        np.median(task.distance(x[both], task.Y_test[both])) for x in (country, zone)
    )
    assert between < 0.1 * to_truth
    # The sparse name LF votes on few cities; the admin LFs on most.
    cov = _coverage(task)
    assert cov[4] < 0.15 and cov[0] > 0.9 and cov[1] > 0.8


# The coverage figures of the docstrings are measured (seeds 0-2, default sizes, train
# and held-out rows); seed 0 must fall in each stated range (rounded to whole %).
@pytest.mark.parametrize(
    ("name", "lfs", "stated", "low", "high"),
    [
        ("country_area_rankings", ["by_city_spread_km"], "votes on 29-31%", 29, 31),
        ("country_area_rankings", ["by_neighbours"], "votes on 14-15%", 14, 15),
        ("wine_flavanoid_rankings", ["by_total_phenols"], "votes on 93-94%", 93, 94),
        (
            "wine_flavanoid_rankings",
            [
                "by_od280",
                "by_proanthocyanins",
                "by_hue",
                "by_low_nonflavanoid_phenols",
                "by_low_alcalinity",
            ],
            "each votes on 2-5% of groups",
            2,
            5,
        ),
        ("world_city_centroids", ["name_twin"], "votes on about 7%", 7, 7),
    ],
)
def test_docstring_coverage_figures_are_measured(tasks, name, lfs, stated, low, high):
    task = tasks[name]
    doc = " ".join(D.TASKS[name].__doc__.split())
    assert stated in doc
    L = np.concatenate([task.L_train, task.L_test])
    voted = L != ss.ABSTAIN if task.kind == "finite" else ~np.isnan(L).any(axis=-1)
    for lf in lfs:
        share = round(100 * voted[:, task.lf_names.index(lf)].mean())
        assert low <= share <= high, (lf, share)
