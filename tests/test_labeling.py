"""Structured and manifold labeling functions through Snorkel's and our appliers."""

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from snorkel.labeling import LabelingFunction, LFAnalysis, PandasLFApplier
from snorkel.labeling.apply.dask import DaskLFApplier, PandasParallelLFApplier

import snorkel_structured as ss
from snorkel_structured.spaces.manifolds import Euclidean, Sphere

SPACE = ss.Permutations(n_items=3)


def _order(x, cols):
    """Ranking of the items by descending score (a label-space item)."""
    return SPACE.from_scores([x[c] for c in cols])


@ss.structured_labeling_function(space=SPACE)
def rank_by_a(x):
    return _order(x, ["a0", "a1", "a2"])


@ss.structured_labeling_function(space=SPACE, name="rank_by_b")
def rank_b(x):
    return _order(x, ["b0", "b1", "b2"]) if x["b0"] >= 0 else None


@ss.structured_labeling_function(space=SPACE)
def bad_float(x):
    return 2.5 if x.name == 7 else None


@pytest.fixture
def frame(rng):
    df = pd.DataFrame(
        rng.normal(size=(20, 6)), columns=["a0", "a1", "a2", "b0", "b1", "b2"]
    )
    df.index = np.arange(100, 120)
    return df


def _expected(df):
    a = SPACE.encode([_order(r, ["a0", "a1", "a2"]) for _, r in df.iterrows()])
    b = SPACE.encode(
        [
            _order(r, ["b0", "b1", "b2"]) if r["b0"] >= 0 else None
            for _, r in df.iterrows()
        ]
    )
    return np.stack([a, b], axis=1)


def test_decorator_yields_snorkel_lf():
    assert isinstance(rank_by_a, LabelingFunction)
    assert rank_by_a.name == "rank_by_a"
    assert rank_b.name == "rank_by_b"
    assert rank_by_a.space == SPACE


def test_pandas_applier_emits_indices(frame):
    L = PandasLFApplier([rank_by_a, rank_b]).apply(frame, progress_bar=False)
    np.testing.assert_array_equal(L, _expected(frame))
    assert (L[:, 1] == ss.ABSTAIN).any() and (L[:, 1] >= 0).any()
    # Snorkel's own analysis runs unchanged on the output.
    summary = LFAnalysis(L, [rank_by_a, rank_b]).lf_summary()
    assert summary.loc["rank_by_a", "Coverage"] == 1.0


def test_dask_appliers_match_pandas(frame):
    ddf = dd.from_pandas(frame, npartitions=3)
    L = DaskLFApplier([rank_by_a, rank_b]).apply(ddf, scheduler="synchronous")
    np.testing.assert_array_equal(L, _expected(frame))
    L2 = PandasParallelLFApplier([rank_by_a, rank_b]).apply(
        frame, n_parallel=2, scheduler="threads"
    )
    np.testing.assert_array_equal(L2, _expected(frame))


def test_out_of_space_output_names_lf_row_and_value(frame):
    frame = frame.reset_index(drop=True)
    with pytest.raises(
        ValueError, match=r"'bad_float' returned 2\.5 for row 7.*not an item"
    ):
        PandasLFApplier([bad_float]).apply(frame, progress_bar=False)
    L, meta = PandasLFApplier([bad_float]).apply(
        frame, progress_bar=False, fault_tolerant=True, return_meta=True
    )
    assert meta.faults == {"bad_float": 1}
    assert (L == ss.ABSTAIN).all()


def test_minus_one_gets_abstain_hint():
    @ss.structured_labeling_function(space=ss.Discrete(cardinality=3))
    def old_habit(x):
        return -1

    with pytest.raises(ValueError, match="Return None \\(not -1\\) to abstain"):
        old_habit(pd.Series({"a": 1}, name=0))


def test_missing_parentheses_guard():
    with pytest.raises(ValueError, match="missing parentheses"):

        @ss.structured_labeling_function
        def lf(x):
            return None

    with pytest.raises(ValueError, match="missing parentheses"):

        @ss.manifold_labeling_function
        def lf2(x):
            return None


def test_wrong_space_kind_is_a_type_error():
    with pytest.raises(TypeError, match="finite label space"):
        ss.structured_labeling_function(space=Sphere(2))
    with pytest.raises(TypeError, match="manifold label space"):
        ss.manifold_labeling_function(space=SPACE)


def test_resources_and_preprocessors():
    from snorkel.preprocess import preprocessor

    @preprocessor()
    def add_total(x):
        x["total"] = x["a"] + x["b"]
        return x

    @ss.structured_labeling_function(
        space=ss.Discrete(cardinality=2), resources={"cut": 3}, pre=[add_total]
    )
    def big(x, cut):
        return 1 if x["total"] > cut else 0

    df = pd.DataFrame({"a": [1, 2], "b": [1, 5]})
    L = PandasLFApplier([big]).apply(df, progress_bar=False)
    assert L[:, 0].tolist() == [0, 1]


# --- manifold LFs ---
SPHERE = Sphere(2)


@ss.manifold_labeling_function(space=SPHERE)
def north(x):
    return [0.0, 0.0, 1.0] if x["lat"] > 0 else None


@ss.manifold_labeling_function(space=SPHERE, name="sloppy")
def sloppy(x):
    # slightly off the sphere: projected
    return [1.0 + 1e-6, 0.0, 0.0]


@ss.manifold_labeling_function(space=SPHERE)
def off(x):
    return [2.0, 0.0, 0.0] if x["lat"] < -50 else [0.0, 1.0, 0.0]


@ss.manifold_labeling_function(space=SPHERE)
def crashes(x):
    if x["lat"] > 50:
        raise RuntimeError("boom")
    return [0.0, -1.0, 0.0]


@pytest.fixture
def cities():
    return pd.DataFrame({"lat": [60.0, -10.0, -70.0, 20.0, 55.0]}, index=list("abcde"))


def test_manifold_pandas_applier_nan_abstains_and_projection(cities):
    X = ss.ManifoldPandasApplier([north, sloppy]).apply(cities, progress_bar=False)
    assert X.shape == (5, 2, 3)
    np.testing.assert_array_equal(
        np.isnan(X[:, 0]).all(axis=1), [False, True, True, False, False]
    )
    np.testing.assert_allclose(X[:, 1], np.tile([1.0, 0.0, 0.0], (5, 1)), atol=1e-15)
    assert np.all(np.linalg.norm(X[:, 1], axis=1) == 1.0)


def test_manifold_off_space_error_names_lf_row_value(cities):
    with pytest.raises(
        ValueError,
        match=r"'off' returned \[2\.0, 0\.0, 0\.0\] for row 'c'.*off the manifold",
    ):
        ss.ManifoldPandasApplier([off]).apply(cities, progress_bar=False)


def test_manifold_shape_error():
    @ss.manifold_labeling_function(space=SPHERE)
    def latlon(x):
        return [10.0, 20.0]

    with pytest.raises(
        ValueError, match=r"'latlon'.*expected shape \(3,\), got \(2,\)"
    ):
        latlon(pd.Series({"a": 1}, name=3))


def test_manifold_fault_tolerance_counts(cities):
    applier = ss.ManifoldPandasApplier([crashes, off, north])
    with pytest.raises(RuntimeError, match="boom"):
        applier.apply(cities, progress_bar=False)
    X, meta = applier.apply(
        cities, progress_bar=False, fault_tolerant=True, return_meta=True
    )
    assert meta.faults == {"crashes": 2, "off": 1}
    assert np.isnan(X[[0, 4], 0]).all() and not np.isnan(X[[1, 2, 3], 0]).any()
    assert np.isnan(X[2, 1]).all()


def test_manifold_dask_applier_matches_pandas(cities):
    applier = ss.ManifoldPandasApplier([crashes, off, north])
    X, meta = applier.apply(
        cities, progress_bar=False, fault_tolerant=True, return_meta=True
    )
    ddf = dd.from_pandas(cities, npartitions=2)
    Xd, meta_d = ss.ManifoldDaskApplier([crashes, off, north]).apply(
        ddf, scheduler="synchronous", fault_tolerant=True, return_meta=True
    )
    np.testing.assert_array_equal(Xd, X)
    assert meta_d.faults == meta.faults
    with dask.config.set(scheduler="threads"):
        Xp = ss.ManifoldPandasParallelApplier([crashes, off, north]).apply(
            cities, n_parallel=2, scheduler="threads", fault_tolerant=True
        )
    np.testing.assert_array_equal(Xp, X)


def test_manifold_parallel_applier_keeps_the_rows_order_of_an_unsorted_index():
    # Row i of the votes is df.iloc[i], whatever the index: unsorted, or of mixed
    # types (which cannot be sorted at all).
    @ss.manifold_labeling_function(space=Euclidean(1))
    def value(x):
        return x["v"]

    for index in ([3, 1, 2, 0], [1, "a", 0, "b"]):
        df = pd.DataFrame({"v": [10.0, 20.0, 30.0, 40.0]}, index=index)
        X = ss.ManifoldPandasParallelApplier([value]).apply(
            df, n_parallel=2, scheduler="synchronous"
        )
        np.testing.assert_array_equal(X[:, 0, 0], [10.0, 20.0, 30.0, 40.0])


def test_sphere_lf_returning_the_zero_vector_is_named():
    # The zero vector has no direction: the LF and the row are named, as for any
    # point off the manifold (not the space's bare projection error).
    @ss.manifold_labeling_function(space=Sphere(2))
    def zero(x):
        return [0.0, 0.0, 0.0]

    with pytest.raises(ValueError, match="'zero' returned .* off the manifold"):
        ss.ManifoldPandasApplier([zero]).apply(
            pd.DataFrame({"v": [1.0]}), progress_bar=False
        )


def test_real_valued_lf_on_euclidean_line():
    @ss.manifold_labeling_function(space=Euclidean(1))
    def half(x):
        return x["v"] / 2 if x["v"] > 0 else None

    df = pd.DataFrame({"v": [4.0, -1.0, 3.0]})
    X = ss.ManifoldPandasApplier([half]).apply(df, progress_bar=False)
    np.testing.assert_array_equal(X[:, 0, 0], [2.0, np.nan, 1.5])


def test_manifold_applier_checks_lfs():
    @ss.manifold_labeling_function(space=Sphere(3), name="north")
    def other(x):
        return None

    with pytest.raises(ValueError, match="share one label space"):
        ss.ManifoldPandasApplier([sloppy, other])
    with pytest.raises(TypeError, match="ManifoldLabelingFunction"):
        ss.ManifoldPandasApplier([rank_by_a])
    with pytest.raises(ValueError, match="not unique"):
        ss.ManifoldPandasApplier([north, north])


@pytest.mark.parametrize("applier", [PandasLFApplier, DaskLFApplier])
def test_snorkel_appliers_refuse_manifold_lfs_with_a_pointer(applier, cities):
    # Snorkel's appliers collect integer votes: on points they failed deep inside
    # Snorkel with numpy's "truth value of an array is ambiguous" (or, fault-tolerant,
    # counted every vote as a fault). The refusal comes when the applier is built.
    with pytest.raises(TypeError, match="ManifoldPandasApplier") as info:
        applier([north, sloppy])
    assert "'north'" in str(info.value) and "integer votes" in str(info.value)
    # outside Snorkel's appliers the name reads and writes as before
    assert north.name == "north"
    X = ss.ManifoldPandasApplier([north, sloppy]).apply(cities, progress_bar=False)
    assert X.shape == (5, 2, 3)
    lf = ss.ManifoldLabelingFunction("a", lambda x: None, space=SPHERE)
    lf.name = "b"
    assert lf.name == "b"


@pytest.mark.parametrize(
    "value",
    [
        "4.0",
        b"7",
        True,
        np.bool_(False),
        np.str_("1"),
        ["1"],
        [True],
        np.array([1.0]) > 0,
    ],
    ids=[
        "str",
        "bytes",
        "bool",
        "np_bool",
        "np_str",
        "str_list",
        "bool_list",
        "bool_arr",
    ],
)
def test_manifold_lf_refuses_strings_bytes_and_bools(value):
    # numpy's float conversion would read "4.0" as 4.0, b"7" as 7.0, True as 1.0
    lf = ss.manifold_labeling_function(space=Euclidean(1), name="m")(lambda x: value)
    with pytest.raises(ValueError, match=r"'m' returned .* for row 0: not numeric"):
        lf(pd.Series({"a": 1}, name=0))


def test_manifold_lf_still_takes_numbers():
    for value, expected in [(2.5, 2.5), ([3], 3.0), (np.array([1.5]), 1.5)]:
        lf = ss.manifold_labeling_function(space=Euclidean(1))(lambda x, v=value: v)
        np.testing.assert_array_equal(lf(pd.Series({"a": 1})), [expected])


def test_structured_lf_refuses_bools_standing_for_items():
    row = pd.Series({"a": 1}, name=4)
    cases = [
        (ss.Discrete(3), True),
        (ss.Discrete(3), np.bool_(False)),
        (SPACE, (True, False, 2)),  # index() would find (1, 0, 2)
        (SPACE, [False, True, 2]),
    ]
    for space, value in cases:
        lf = ss.structured_labeling_function(space=space, name="b")(
            lambda x, v=value: v
        )
        with pytest.raises(ValueError, match=r"'b' returned .* row 4.*A bool is not"):
            lf(row)
    # ints are still items, and a space whose items are bools takes bools
    assert ss.structured_labeling_function(space=SPACE)(lambda x: (1, 0, 2))(
        row
    ) == SPACE.index((1, 0, 2))
    flags = ss.FiniteMetricSpace([False, True], [[0.0, 1.0], [1.0, 0.0]])
    assert ss.structured_labeling_function(space=flags)(lambda x: True)(row) == 1


def test_manifold_dask_applier_refuses_a_dask_series(cities):
    series = dd.from_pandas(cities, npartitions=2)["lat"]
    with pytest.raises(TypeError, match="df must be a Dask DataFrame.*to_frame"):
        ss.ManifoldDaskApplier([north]).apply(series, scheduler="synchronous")
    X = ss.ManifoldDaskApplier([north]).apply(
        series.to_frame(), scheduler="synchronous"
    )
    np.testing.assert_array_equal(
        X, ss.ManifoldPandasApplier([north]).apply(cities, progress_bar=False)
    )


def test_filter_unlabeled_manifold_ragged_inputs():
    L = np.array([[[1.0]], [[np.nan]], [[2.0]]])
    y = np.array([[1.0], [np.nan], [2.0]])
    with pytest.raises(ValueError, match="L must be a numeric array.*not None"):
        ss.filter_unlabeled_manifold([1, 2, 3], y, [[[1.0]], [None], [[2.0]]])
    # X as token lists of different lengths: the kept rows, as they are
    X = [["a", "b"], ["c"], ["d", "e", "f"]]
    X_kept, y_kept = ss.filter_unlabeled_manifold(X, y, L)
    keep = ~np.isnan(L).all(axis=(1, 2))
    assert X_kept == [row for row, k in zip(X, keep, strict=True) if k]
    np.testing.assert_array_equal(y_kept, y[keep])
