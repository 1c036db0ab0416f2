"""StructuredLFAnalysis against hand-computed values."""

import itertools
import types
import warnings

import numpy as np
import pandas as pd
import pytest
from snorkel.labeling import LFAnalysis

import snorkel_structured as ss
from snorkel_structured.exceptions import IdentifiabilityWarning
from snorkel_structured.labeling import analysis as analysis_module
from snorkel_structured.spaces.manifolds import Euclidean, Sphere

# Permutations(3) in lexicographic order: 0=(0,1,2) 1=(0,2,1) 2=(1,0,2) 3=(1,2,0)
# 4=(2,0,1) 5=(2,1,0); Kendall distances d(0,1)=1, d(0,5)=3, d(1,5)=2, d(0,2)=1.
SPACE = ss.Permutations(n_items=3)
L = np.array(
    [
        [0, 0, 5],
        [0, 1, -1],
        [-1, -1, 2],
        [-1, -1, -1],
    ]
)


def lf_named(name):
    return types.SimpleNamespace(name=name)


@pytest.fixture
def analysis():
    return ss.StructuredLFAnalysis(
        L, [lf_named("a"), lf_named("b"), lf_named("c")], space=SPACE
    )


def test_counts_match_snorkel(analysis):
    snorkel = LFAnalysis(L)
    np.testing.assert_allclose(analysis.lf_coverages(), snorkel.lf_coverages())
    np.testing.assert_allclose(analysis.lf_overlaps(), snorkel.lf_overlaps())
    np.testing.assert_allclose(analysis.lf_conflicts(), snorkel.lf_conflicts())
    assert analysis.label_coverage() == pytest.approx(0.75)
    assert analysis.label_overlap() == pytest.approx(0.5)
    assert analysis.label_conflict() == pytest.approx(0.5)


def test_pairwise_distances_by_hand(analysis):
    D = analysis.lf_distances()
    assert list(D.index) == ["a", "b", "c"]
    # a,b co-vote on rows 0 (d=0) and 1 (d(0,1)=1): mean 0.5; a,c row 0: d(0,5)=3;
    # b,c row 0: d(0,5)=3.
    np.testing.assert_allclose(D.to_numpy(), [[0, 0.5, 3], [0.5, 0, 3], [3, 3, 0]])
    np.testing.assert_allclose(
        analysis.lf_distances(squared=True).loc["a", "b"], (0**2 + 1**2) / 2
    )
    # a: (0 + 3 + 1) / 3; b: (0 + 3 + 1) / 3; c: (3 + 3) / 2
    np.testing.assert_allclose(analysis.lf_mean_distances(), [4 / 3, 4 / 3, 3.0])


def test_summary_with_gold_and_model(analysis):
    Y = np.array([0, 1, 2, -1])
    model = types.SimpleNamespace(
        expected_sq_dist_=np.array([0.1, 0.2, 3.0]),
        get_weights=lambda: np.array([0.9, 0.8, 0.1]),
    )
    s = analysis.lf_summary(Y=Y, label_model=model)
    assert isinstance(s, pd.DataFrame) and list(s.index) == ["a", "b", "c"]
    # a votes 0,0 on rows 0,1 (gold 0,1): one hit, distances 0 and 1.
    np.testing.assert_allclose(s["Emp. Acc."], [0.5, 1.0, 0.5])
    np.testing.assert_allclose(s["Emp. mean dist."], [0.5, 0.0, 1.5])
    np.testing.assert_allclose(s["Emp. E[d^2]"], [0.5, 0.0, 4.5])
    np.testing.assert_allclose(s["Est. E[d^2]"], [0.1, 0.2, 3.0])
    np.testing.assert_allclose(s["Learned Weight"], [0.9, 0.8, 0.1])
    np.testing.assert_allclose(s["Mean dist."], [4 / 3, 4 / 3, 3.0])


def test_errors(analysis):
    with pytest.raises(ValueError, match="lfs has 2 labeling functions but L has 3"):
        ss.StructuredLFAnalysis(L, [lf_named("a"), lf_named("b")], space=SPACE)
    with pytest.raises(ValueError, match="outside the label space"):
        ss.StructuredLFAnalysis(np.array([[6, 0]]), space=SPACE)
    with pytest.raises(ValueError, match="must be fitted"):
        analysis.lf_summary(label_model=object())
    bad = types.SimpleNamespace(expected_sq_dist_=np.ones(2), weights_=np.ones(2))
    with pytest.raises(
        ValueError, match="fitted with 2 labeling functions but L has 3"
    ):
        analysis.lf_summary(label_model=bad)


def test_manifold_line_by_hand():
    nan = np.nan
    X = np.array([[1.0, 2.0, nan], [0.0, nan, 4.0], [nan, nan, nan]])[..., None]
    a = ss.StructuredLFAnalysis(X, space=Euclidean(1))
    np.testing.assert_allclose(a.lf_coverages(), [2 / 3, 1 / 3, 1 / 3])
    np.testing.assert_allclose(a.lf_conflicts(), [2 / 3, 1 / 3, 1 / 3])
    D = a.lf_distances()
    assert D.iloc[0, 1] == 1.0 and D.iloc[0, 2] == 4.0 and np.isnan(D.iloc[1, 2])
    np.testing.assert_allclose(a.lf_mean_distances(), [2.5, 1.0, 4.0])
    model = types.SimpleNamespace(
        expected_sq_dist_=np.ones(3), weights_=np.array([0.5, 0.3, 0.2])
    )
    s = a.lf_summary(Y=np.array([1.0, 1.0, 0.0]), label_model=model)
    np.testing.assert_allclose(s["Emp. mean dist."], [0.5, 1.0, 3.0])
    np.testing.assert_allclose(s["Learned Weight"], [0.5, 0.3, 0.2])
    assert "Emp. Acc." not in s


def test_manifold_sphere_distances_and_partial_nan_error():
    north, east = [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]
    X = np.array([[north, east], [north, north]])
    a = ss.StructuredLFAnalysis(X, space=Sphere(2))
    assert a.lf_distances().iloc[0, 1] == pytest.approx(np.pi / 4)
    np.testing.assert_allclose(a.lf_conflicts(), [0.5, 0.5])
    X[0, 0, 1] = np.nan
    with pytest.raises(ValueError, match=r"L\[0, 0\] is partly NaN"):
        ss.StructuredLFAnalysis(X, space=Sphere(2))


def test_lf_dependencies_names_and_pairs_for_fit():
    import snorkel_structured as ss
    from snorkel_structured.synthetic import make_label_matrix

    space = ss.Discrete(2)
    d = make_label_matrix(
        10_000,
        space=space,
        theta=[1.0, 1.4, 0.8, 1.2, 1.6],
        prior=[0.4, 0.6],
        abstain=0.1,
        seed=0,
    )
    L = d.L.copy()
    mask = np.random.default_rng(1).random(len(L)) < 0.5
    L[mask, 4] = L[mask, 0]
    analysis = ss.StructuredLFAnalysis(L, space=space)
    res = analysis.lf_dependencies()
    assert len(res) == 10 and set(res["lf_a"]) <= set(analysis.lf_names)
    assert res.loc[res["dependent"], ["lf_a", "lf_b"]].values.tolist() == [
        ["lf_0", "lf_4"]
    ]
    assert analysis.dependent_lf_pairs() == [(0, 4)]
    with pytest.raises(ValueError, match="at least 4"):
        ss.StructuredLFAnalysis(L[:, :3], space=space).lf_dependencies()


def test_lf_dependencies_score_test_against_a_label_model():
    # method="model" reads a label model, which the model-free core never imports;
    # the analysis layer routes it to the label-model layer.
    import warnings

    import snorkel_structured as ss
    from snorkel_structured.label_model._dependency_score import (
        model_dependency_test,
    )
    from snorkel_structured.synthetic import make_label_matrix

    space = ss.Discrete(3)
    d = make_label_matrix(
        3000,
        space=space,
        theta=[1.0, 1.4, 0.8, 1.2, 1.6],
        prior=[0.3, 0.3, 0.4],
        abstain=0.1,
        seed=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = ss.StructuredLabelModel(space, seed=0, shrinkage=0.0).fit(d.L)
    analysis = ss.StructuredLFAnalysis(d.L, space=space)
    res = analysis.lf_dependencies(lm, method="model", seed=0)
    direct = model_dependency_test(d.L, lm, lf_names=analysis.lf_names)
    pd.testing.assert_frame_equal(res, direct)
    assert set(res["lf_a"]) <= set(analysis.lf_names)
    with pytest.raises(ValueError, match="takes no options"):
        analysis.lf_dependencies(lm, method="model", n_boot=100)


# -- LF names as strings -------------------------------------------------------------
def test_lfs_given_as_names_index_the_summary(analysis):
    # lfs are used only for their names: plain strings give the same analysis as
    # labeling functions with those names (they used to raise AttributeError).
    by_name = ss.StructuredLFAnalysis(L, ["a", "b", "c"], space=SPACE)
    assert by_name.lf_names == ["a", "b", "c"]
    pd.testing.assert_frame_equal(by_name.lf_summary(), analysis.lf_summary())
    mixed = ss.StructuredLFAnalysis(L, [lf_named("a"), "b", np.str_("c")], space=SPACE)
    assert list(mixed.lf_distances().index) == ["a", "b", "c"]


def test_lfs_that_are_neither_functions_nor_names_raise():
    with pytest.raises(TypeError, match=r"lfs\[1\] is 3 of type int; lfs must hold"):
        ss.StructuredLFAnalysis(L, ["a", 3, "c"], space=SPACE)
    # a single string would otherwise be read as one name per character
    with pytest.raises(TypeError, match=r"got the string 'abc'\. Pass \['abc'\]"):
        ss.StructuredLFAnalysis(L, "abc", space=SPACE)


# -- a label model over another space ------------------------------------------------
def test_summary_refuses_a_label_model_fitted_on_another_space(analysis):
    model = types.SimpleNamespace(
        space=ss.Discrete(3),
        expected_sq_dist_=np.array([0.1, 0.2, 3.0]),
        get_weights=lambda: np.array([0.9, 0.8, 0.1]),
    )
    with pytest.raises(
        ValueError,
        match=r"fitted on Discrete\(cardinality=3\), but this analysis is over "
        r"Permutations\(n_items=3",
    ):
        analysis.lf_summary(label_model=model)
    # an equal space (another object) is the same space
    model.space = ss.Permutations(n_items=3)
    s = analysis.lf_summary(label_model=model)
    np.testing.assert_allclose(s["Learned Weight"], [0.9, 0.8, 0.1])


def test_summary_refuses_a_fitted_model_over_permutations_for_discrete_votes():
    import warnings

    from snorkel_structured.synthetic import make_label_matrix

    D = ss.Discrete(3)
    d = make_label_matrix(
        300, space=D, theta=[1.0, 0.5, 0.2], prior=[0.5, 0.3, 0.2], seed=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other = ss.StructuredLabelModel(ss.Permutations(3), seed=0).fit(
            d.L, progress_bar=False
        )
    with pytest.raises(ValueError, match=r"fitted on Permutations.*over Discrete"):
        ss.StructuredLFAnalysis(d.L, space=D).lf_summary(label_model=other)


# -- manifold votes must lie on the manifold -----------------------------------------
def _hyperbolic_votes():
    # On the hyperboloid -x0^2 + x1^2 + x2^2 = -1: the origin o = (1, 0, 0) and
    # p = (cosh 1, sinh 1, 0), at geodesic distance 1 from o.
    o = [1.0, 0.0, 0.0]
    p = [np.cosh(1.0), np.sinh(1.0), 0.0]
    return np.array([[o, p], [o, o]])


def test_manifold_votes_on_the_manifold_by_hand():
    a = ss.StructuredLFAnalysis(_hyperbolic_votes(), space=ss.Hyperbolic(2))
    # LFs 0 and 1 co-vote twice, at distances 1 and 0
    assert a.lf_distances().iloc[0, 1] == pytest.approx(0.5)


@pytest.mark.parametrize(
    "transform",
    [lambda X: 3 * X, lambda X: X * np.array([-1.0, 1.0, 1.0])],  # scaled; lower sheet
    ids=["scaled", "lower_sheet"],
)
def test_manifold_votes_off_the_manifold_raise_as_in_the_label_model(transform):
    H = ss.Hyperbolic(2)
    X = transform(_hyperbolic_votes())
    with pytest.raises(ValueError, match=r"off Hyperbolic\(dim=2\)") as model:
        ss.ManifoldLabelModel(H).fit(np.concatenate([X] * 3, axis=1))
    with pytest.raises(ValueError, match=r"L has a point off Hyperbolic\(dim=2\)"):
        ss.StructuredLFAnalysis(X, space=H)
    assert "at row 0, LF 0" in str(model.value)


def test_manifold_votes_within_atol_are_analysed_as_given():
    north, east = np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0])
    X = np.array([[north * (1 + 1e-4), east]])
    with pytest.raises(ValueError, match=r"off Sphere\(dim=2\) \(beyond atol=1e-06\)"):
        ss.StructuredLFAnalysis(X, space=Sphere(2))
    a = ss.StructuredLFAnalysis(X, space=Sphere(2), atol=1e-3)
    np.testing.assert_array_equal(a.L, X)  # not projected
    assert a.lf_distances().iloc[0, 1] == pytest.approx(np.pi / 2)


def _kendall(p, q):
    """Discordant item pairs of two orderings (best first), by brute force."""
    pos_p = {item: k for k, item in enumerate(p)}
    pos_q = {item: k for k, item in enumerate(q)}
    return sum(
        (pos_p[a] - pos_p[b]) * (pos_q[a] - pos_q[b]) < 0
        for a, b in itertools.combinations(p, 2)
    )


def test_large_finite_space_is_analysed_without_its_distance_matrix(monkeypatch):
    # Permutations(7) has 5040 labels, above DENSE_MAX_LABELS: the analysis must use
    # space.dist (Permutations(8) needs 12 GiB for the matrix). Small pair blocks
    # exercise the blocked loop.
    monkeypatch.setattr(analysis_module, "_PAIR_BLOCK", 7)
    space = ss.Permutations(n_items=7)
    rng = np.random.default_rng(3)
    L7 = rng.integers(0, len(space), size=(12, 3))
    L7[rng.random(L7.shape) < 0.3] = -1
    Y7 = rng.integers(0, len(space), size=12)
    Y7[[2, 5]] = -1
    a = ss.StructuredLFAnalysis(L7, space=space)
    D = a.lf_distances()
    D2 = a.lf_distances(squared=True)
    mean = a.lf_mean_distances()
    s = a.lf_summary(Y=Y7)
    assert "distance_matrix" not in space.__dict__

    def d(i, j):
        return _kendall(space.item(int(i)), space.item(int(j)))

    m = L7.shape[1]
    for x, y in itertools.product(range(m), range(m)):
        both = [
            d(p, q)
            for p, q in zip(L7[:, x], L7[:, y], strict=True)
            if p >= 0 and q >= 0
        ]
        want = np.mean(both) if both else np.nan
        np.testing.assert_allclose(D.iloc[x, y], want)
        want2 = np.mean(np.square(both)) if both else np.nan
        np.testing.assert_allclose(D2.iloc[x, y], want2)
    for x in range(m):
        pooled = [
            d(L7[r, x], L7[r, y])
            for r in range(len(L7))
            for y in range(m)
            if y != x and L7[r, x] >= 0 and L7[r, y] >= 0
        ]
        np.testing.assert_allclose(mean[x], np.mean(pooled) if pooled else np.nan)
        gold = [d(v, g) for v, g in zip(L7[:, x], Y7, strict=True) if v >= 0 and g >= 0]
        np.testing.assert_allclose(s["Emp. mean dist."].iloc[x], np.mean(gold))
        np.testing.assert_allclose(s["Emp. E[d^2]"].iloc[x], np.mean(np.square(gold)))
        hits = [v == g for v, g in zip(L7[:, x], Y7, strict=True) if v >= 0 and g >= 0]
        np.testing.assert_allclose(s["Emp. Acc."].iloc[x], np.mean(hits))


def test_manifold_gold_labels_are_checked_as_the_votes():
    north, east = [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]
    nan3 = [np.nan] * 3
    a = ss.StructuredLFAnalysis(
        np.array([[north, east], [east, nan3]]), space=Sphere(2)
    )
    with pytest.raises(ValueError, match=r"Y\[0\] is not finite"):
        a.lf_summary(Y=[[np.inf, 0.0, 0.0], east])
    with pytest.raises(ValueError, match=r"Y\[1\] is partly NaN.*whole row of NaN"):
        a.lf_summary(Y=[north, [1.0, 0.0, np.nan]])
    with pytest.raises(ValueError, match=r"Y has a point off Sphere\(dim=2\).*row 0"):
        a.lf_summary(Y=[[0.0, 0.0, 5.0], east])
    with pytest.raises(ValueError, match="Y must be a numeric array"):
        a.lf_summary(Y=[north, None])
    with pytest.raises(ValueError, match=r"Y\[0\] is not finite"):
        ss.StructuredLFAnalysis(
            np.array([[1.0, 2.0], [np.nan, 3.0]]), space=Euclidean(1)
        ).lf_summary(Y=[np.inf, 1.0])
    # a whole row of NaN is an unknown gold label: only row 1 counts, by hand
    s = a.lf_summary(Y=[nan3, north])
    np.testing.assert_allclose(s["Emp. mean dist."], [np.pi / 2, np.nan])
    np.testing.assert_allclose(s["Emp. E[d^2]"], [np.pi**2 / 4, np.nan])


@pytest.mark.parametrize(
    "L_bad",
    [
        [[[0.0, 0.0, 1.0], None]],  # None for an abstain
        [[[0.0, 0.0, 1.0], [1.0, 0.0]]],  # ragged points
    ],
    ids=["none_abstain", "ragged"],
)
def test_manifold_votes_of_ragged_lists_get_the_label_model_message(L_bad):
    with pytest.raises(ValueError, match="ragged nested sequence.*not None"):
        ss.StructuredLFAnalysis(L_bad, space=Sphere(2))


def test_every_lf_silent_warns():
    with pytest.warns(IdentifiabilityWarning, match="No LF voted in L: all 2 LFs"):
        a = ss.StructuredLFAnalysis(np.full((3, 2), -1), space=SPACE)
    np.testing.assert_array_equal(a.lf_coverages(), [0.0, 0.0])
    with pytest.warns(IdentifiabilityWarning, match="No LF voted in L"):
        ss.StructuredLFAnalysis(np.full((2, 2, 1), np.nan), space=Euclidean(1))
    # one silent LF keeps the per-LF warning only
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ss.StructuredLFAnalysis(np.array([[-1, 0], [-1, 1]]), space=SPACE)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and messages[0].startswith("LF 0 never voted")
