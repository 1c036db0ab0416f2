"""StructuredLFAnalysis against hand-computed values."""

import types

import numpy as np
import pandas as pd
import pytest
from snorkel.labeling import LFAnalysis

import snorkel_structured as ss
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
