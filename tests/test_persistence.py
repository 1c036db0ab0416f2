"""save/load of the four estimators: exact round trips, a safe format, clear refusals."""

import copy
import gc
import io
import json
import pickle
import re
import warnings

import networkx as nx
import numpy as np
import pytest

import snorkel_structured as ss
import snorkel_structured._version as version_module
from snorkel_structured.exceptions import NotFittedError
from snorkel_structured.synthetic_manifold import make_manifold_data


# -- fitted models on small synthetic data (module scope: fitted once) ------------------
@pytest.fixture(scope="module")
def ranks():
    return ss.synthetic.make_ranking_data(1500, seed=0)


@pytest.fixture(scope="module")
def structured_lm(ranks):
    return ss.StructuredLabelModel(ranks.space, estimator="mle", seed=0).fit(ranks.L)


@pytest.fixture(scope="module")
def hyper():
    return make_manifold_data(
        1000, space=ss.Hyperbolic(2), noise_scale=[0.1, 0.3, 0.6], seed=1
    )


@pytest.fixture(scope="module")
def manifold_lm(hyper):
    # robust=True stores an OutlierBackground and per-LF outlier rates as well
    return ss.ManifoldLabelModel(ss.Hyperbolic(2), robust=True, seed=0).fit(hyper.X)


def _ranking_features(ranks, seed=2):
    """Features keyed to the true label: its one-hot code plus noise."""
    rng = np.random.default_rng(seed)
    onehot = np.eye(len(ranks.space))[ranks.Y][:, np.unique(ranks.Y)]
    return onehot + 0.3 * rng.normal(size=onehot.shape)


@pytest.fixture(scope="module")
def structured_end(ranks, structured_lm):
    X = _ranking_features(ranks)[:300]
    weights = structured_lm.loss_weights(ranks.L[:300], seed=0)
    return ss.KernelStructuredPredictor(ranks.space, gamma=1.0).fit(X, weights), X


@pytest.fixture(scope="module")
def manifold_end(hyper, manifold_lm):
    rng = np.random.default_rng(3)
    X = hyper.Y[:100] + 0.1 * rng.normal(size=hyper.Y[:100].shape)
    model = ss.KernelManifoldRegressor(ss.Hyperbolic(2)).fit(
        X, hyper.X[:100], manifold_lm
    )
    return model, X


# -- exact round trips ---------------------------------------------------------------------
@pytest.mark.parametrize("estimator", ["mle", "tensor"])
def test_structured_label_model_round_trip_is_exact(
    ranks, structured_lm, estimator, tmp_path
):
    lm = structured_lm
    if estimator != "mle":
        lm = ss.StructuredLabelModel(ranks.space, estimator=estimator, seed=0)
        lm.fit(ranks.L)
    path = tmp_path / "lm.model"
    lm.save(path)
    fresh = ss.StructuredLabelModel(ranks.space, estimator="uws", seed=7)
    assert fresh.load(path) is fresh
    # parameters come from the file, as in Snorkel
    assert fresh.get_params()["estimator"] == estimator and fresh.seed == 0
    np.testing.assert_array_equal(fresh.predict(ranks.L), lm.predict(ranks.L))
    np.testing.assert_array_equal(
        fresh.predict_proba(ranks.L), lm.predict_proba(ranks.L)
    )
    np.testing.assert_array_equal(fresh.get_weights(), lm.get_weights())
    np.testing.assert_array_equal(fresh.theta_, lm.theta_)
    np.testing.assert_array_equal(fresh.stats_.counts, lm.stats_.counts)
    assert fresh.noise_model_ == lm.noise_model_
    # the loaded model keeps learning like the saved one (statistics are additive)
    np.testing.assert_array_equal(
        fresh.partial_fit(ranks.L[:100]).theta_,
        copy.deepcopy(lm).partial_fit(ranks.L[:100]).theta_,
    )


def test_manifold_label_model_round_trip_is_exact(hyper, manifold_lm, tmp_path):
    path = tmp_path / "mm.model"
    manifold_lm.save(path)
    fresh = ss.ManifoldLabelModel(ss.Hyperbolic(2)).load(path)
    assert fresh.robust is True and fresh.noise_model_ == manifold_lm.noise_model_
    np.testing.assert_array_equal(fresh.predict(hyper.X), manifold_lm.predict(hyper.X))
    np.testing.assert_array_equal(fresh.weights_, manifold_lm.weights_)
    np.testing.assert_array_equal(fresh.noise_scale_, manifold_lm.noise_scale_)
    np.testing.assert_array_equal(
        fresh.responsibilities(hyper.X[:200]),
        manifold_lm.responsibilities(hyper.X[:200]),
    )
    assert fresh.noise_ == manifold_lm.noise_


def test_a_generator_seed_is_saved_with_its_state(hyper, tmp_path):
    model = ss.ManifoldLabelModel(
        ss.Hyperbolic(2), seed=np.random.default_rng(5), robust="auto"
    )
    model.fit(hyper.X[:800])
    model.save(tmp_path / "gen.model")
    fresh = ss.ManifoldLabelModel(ss.Hyperbolic(2)).load(tmp_path / "gen.model")
    # both generators are in the same state: the next draws agree
    np.testing.assert_array_equal(fresh.seed.random(5), model.seed.random(5))


def test_kernel_structured_predictor_round_trip_is_exact(structured_end, tmp_path):
    model, X = structured_end
    model.save(tmp_path / "end.model")
    fresh = ss.KernelStructuredPredictor(model.space).load(tmp_path / "end.model")
    assert fresh.gamma == 1.0
    np.testing.assert_array_equal(fresh.predict(X), model.predict(X))
    np.testing.assert_array_equal(
        fresh.decision_function(X), model.decision_function(X)
    )
    np.testing.assert_array_equal(fresh.dual_coef_, model.dual_coef_)


def test_kernel_manifold_regressor_round_trip_is_exact(manifold_end, tmp_path):
    model, X = manifold_end
    model.save(tmp_path / "end.model")
    fresh = ss.KernelManifoldRegressor(model.space).load(tmp_path / "end.model")
    np.testing.assert_array_equal(fresh.predict(X[:5]), model.predict(X[:5]))
    np.testing.assert_array_equal(fresh.beta_, model.beta_)


def _finite_spaces():
    tree = nx.Graph([("root", "a"), ("root", "b"), ("a", "a1"), ("a", "a2")])
    items = [("x", 0), ("x", 1), ("y", 0), ("y", 1)]
    D = np.array([[0, 1, 2, 3], [1, 0, 1, 2], [2, 1, 0, 1], [3, 2, 1, 0]], float)
    return [
        ss.Discrete(cardinality=3),
        ss.GraphSpace(tree),
        ss.FiniteMetricSpace(items, D),
        ss.Permutations(3, metric="cayley"),
    ]


@pytest.mark.parametrize("space", _finite_spaces(), ids=repr)
def test_every_finite_space_round_trips(space, tmp_path):
    r = len(space)
    data = ss.synthetic.make_label_matrix(
        600, space=space, theta=[1.5, 1.0, 0.8], prior=np.full(r, 1 / r), seed=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = ss.StructuredLabelModel(space, seed=0, prior_support="all").fit(data.L)
    lm.save(tmp_path / "lm.model")
    # a space equal to the saved one (here: built anew) is accepted
    rebuilt = copy.deepcopy(space)
    fresh = ss.StructuredLabelModel(rebuilt).load(tmp_path / "lm.model")
    np.testing.assert_array_equal(fresh.predict_proba(data.L), lm.predict_proba(data.L))
    assert fresh.space is rebuilt


def test_product_manifold_regressor_round_trips(tmp_path):
    space = ss.ProductManifold([ss.Sphere(2), ss.Euclidean(1)])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    Y = np.c_[ss.Sphere(2).projection(np.c_[X[:, :2], np.ones(60)]), X[:, 2:]]
    model = ss.KernelManifoldRegressor(space).fit(X, Y)
    model.save(tmp_path / "prod.model")
    fresh = ss.KernelManifoldRegressor(space).load(tmp_path / "prod.model")
    np.testing.assert_array_equal(fresh.predict(X[:10]), model.predict(X[:10]))


def test_unfitted_models_round_trip_as_unfitted(ranks, tmp_path):
    models = [
        ss.StructuredLabelModel(ranks.space, estimator="tensor", n_components=2),
        ss.ManifoldLabelModel(ss.Sphere(2), noise="riemannian_gaussian", seed=4),
        ss.KernelStructuredPredictor(ranks.space, kernel="linear", nu=0.5),
        ss.KernelManifoldRegressor(ss.Euclidean(2), gamma=2.0, max_iter=7),
    ]
    for i, model in enumerate(models):
        path = tmp_path / f"unfitted{i}.model"
        model.save(path)
        fresh = type(model)(model.space).load(path)
        assert fresh.get_params() == model.get_params()
        with pytest.raises(NotFittedError):
            fresh.predict(np.zeros((2, 3), dtype=np.int64))


def test_loading_an_unfitted_file_clears_a_fitted_model(ranks, structured_lm, tmp_path):
    ss.StructuredLabelModel(ranks.space).save(tmp_path / "empty.model")
    model = copy.deepcopy(structured_lm).load(tmp_path / "empty.model")
    assert not hasattr(model, "theta_")


# -- the format runs no code from the file -------------------------------------------------
class _Evil:
    """Unpickling this creates a file (what a malicious model file could do)."""

    def __init__(self, target):
        self.target = str(target)

    def __reduce__(self):
        return (open, (self.target, "w"))


def test_a_malicious_pickle_is_not_run(ranks, tmp_path):
    target = tmp_path / "created_by_the_file"
    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps(_Evil(target)))
    with pytest.raises(ValueError, match=r"pickle.*trust=True"):
        ss.StructuredLabelModel(ranks.space).load(path)
    assert not target.exists()


def test_pickled_arrays_inside_an_archive_are_not_run(structured_lm, tmp_path):
    target = tmp_path / "created_by_the_array"
    path = tmp_path / "evil.model"
    structured_lm.save(path)
    header, arrays = _read(path)
    key = header["state"]["theta_"]["key"]
    arrays[key] = np.array([_Evil(target)], dtype=object)  # stored with pickle
    _write(path, header, arrays)
    with pytest.raises(ValueError, match=re.escape(str(path))):
        ss.StructuredLabelModel(structured_lm.space).load(path)
    assert not target.exists()


def test_class_names_in_the_header_are_not_imported(structured_lm, tmp_path):
    path = tmp_path / "names.model"
    structured_lm.save(path)
    header, arrays = _read(path)
    header["state"]["stats_"]["class"] = "os.system"
    _write(path, header, arrays)
    with pytest.raises(ValueError, match=r"stats_ names class 'os.system'"):
        ss.StructuredLabelModel(structured_lm.space).load(path)


_OLD_POSTERIOR = "snorkel_structured.label_model._posterior._SupportPosterior"


def test_files_naming_the_posterior_at_its_old_place_still_load(
    ranks, structured_lm, tmp_path
):
    # The posterior table moved from label_model/ down to estimators/; archives and
    # pickles written before name it at its old place.
    path = tmp_path / "old_place.model"
    structured_lm.save(path)
    header, arrays = _read(path)
    now = header["state"]["_posterior"]["class"]
    assert now != _OLD_POSTERIOR
    header["state"]["_posterior"]["class"] = _OLD_POSTERIOR
    _write(path, header, arrays)
    fresh = ss.StructuredLabelModel(ranks.space).load(path)
    np.testing.assert_array_equal(
        fresh.predict_proba(ranks.L), structured_lm.predict_proba(ranks.L)
    )
    # protocol 2 names classes as text lines "module\nname\n"
    (module, name), (old_module, old_name) = (
        c.rsplit(".", 1) for c in (now, _OLD_POSTERIOR)
    )
    raw = pickle.dumps(structured_lm, protocol=2)
    assert f"{module}\n{name}\n".encode() in raw
    raw = raw.replace(
        f"{module}\n{name}\n".encode(), f"{old_module}\n{old_name}\n".encode()
    )
    np.testing.assert_array_equal(
        pickle.loads(raw).predict_proba(ranks.L), structured_lm.predict_proba(ranks.L)
    )


def test_trusted_old_pickle_files_still_load(ranks, structured_lm, tmp_path):
    path = tmp_path / "old.pkl"
    with open(path, "wb") as f:  # what save wrote before the safe format
        pickle.dump(structured_lm, f)
    with pytest.raises(ValueError, match="re-save"):
        ss.StructuredLabelModel(ranks.space).load(path)
    fresh = ss.StructuredLabelModel(ranks.space).load(path, trust=True)
    np.testing.assert_array_equal(
        fresh.predict_proba(ranks.L), structured_lm.predict_proba(ranks.L)
    )
    # and re-saved in the safe format, it loads without trust
    fresh.save(tmp_path / "new.model")
    again = ss.StructuredLabelModel(ranks.space).load(tmp_path / "new.model")
    np.testing.assert_array_equal(again.theta_, structured_lm.theta_)


def test_trusted_pickles_of_other_objects_are_refused(ranks, tmp_path):
    path = tmp_path / "dict.pkl"
    path.write_bytes(pickle.dumps({"theta_": 1}))
    with pytest.raises(ValueError, match="holds a dict"):
        ss.StructuredLabelModel(ranks.space).load(path, trust=True)


# -- versions ------------------------------------------------------------------------------
def test_files_from_a_newer_library_or_format_are_refused(
    structured_lm, monkeypatch, tmp_path
):
    path = tmp_path / "new.model"
    with monkeypatch.context() as m:
        # the version the files are stamped with (ss.__version__ re-exports it)
        m.setattr(version_module, "__version__", "999.0")
        structured_lm.save(path)
        header, _ = _read(path)
        assert header["library_version"] == "999.0"
        old_pickle = tmp_path / "new.pkl"
        old_pickle.write_bytes(pickle.dumps(structured_lm))
    fresh = ss.StructuredLabelModel(structured_lm.space)
    with pytest.raises(ValueError, match=r"snorkel_structured 999\.0, newer"):
        fresh.load(path)
    with pytest.raises(ValueError, match=r"999\.0"):
        fresh.load(old_pickle, trust=True)
    header, arrays = _read(path)
    header["library_version"] = "0.0.1"  # an older library, same format: fine
    _write(path, header, arrays)
    fresh.load(path)
    header["format_version"] = 999
    _write(path, header, arrays)
    with pytest.raises(ValueError, match=r"model format 999"):
        fresh.load(path)


def test_a_refused_load_leaves_the_model_unchanged(structured_lm, tmp_path):
    model = copy.deepcopy(structured_lm)
    path = tmp_path / "bad.model"
    path.write_bytes(b"garbage")
    with pytest.raises(ValueError):
        model.load(path)
    np.testing.assert_array_equal(model.theta_, structured_lm.theta_)


# -- space and class mismatches --------------------------------------------------------------
def test_a_different_space_is_refused(structured_lm, manifold_lm, tmp_path):
    path = tmp_path / "s4.model"
    structured_lm.save(path)
    small = ss.StructuredLabelModel(ss.Permutations(3))
    with pytest.raises(
        ValueError, match=r"on Permutations\(n_items=4.*Permutations\(n_items=3"
    ):
        small.load(path)
    assert small.space == ss.Permutations(3) and not hasattr(small, "theta_")
    with pytest.raises(ValueError, match="kendall_tau"):
        ss.StructuredLabelModel(ss.Permutations(4, metric="cayley")).load(path)
    manifold_lm.save(tmp_path / "h2.model")
    with pytest.raises(ValueError, match=r"Hyperbolic\(dim=2\).*Hyperbolic\(dim=3\)"):
        ss.ManifoldLabelModel(ss.Hyperbolic(3)).load(tmp_path / "h2.model")
    with pytest.raises(
        ValueError, match="holds a snorkel_structured.label_model.manifold"
    ):
        ss.StructuredLabelModel(ss.Permutations(4)).load(tmp_path / "h2.model")


def test_a_different_space_that_prints_the_same_says_what_differs(tmp_path):
    # Both spaces print as GraphSpace(n_labels=4): the message used to read "on
    # GraphSpace(n_labels=4), but this model's space is GraphSpace(n_labels=4)".
    path = tmp_path / "path4.model"
    ss.StructuredLabelModel(ss.GraphSpace(nx.path_graph(4))).save(path)
    star = ss.StructuredLabelModel(ss.GraphSpace(nx.star_graph(3)))
    with pytest.raises(ValueError) as info:
        star.load(path)
    message = str(info.value)
    assert "on a different GraphSpace(n_labels=4) than this model's" in message
    assert (
        "the items are the same but 8 of the 16 distances differ, e.g. d(0, 2) is 2 "
        "in the file and 1 here"
    ) in message
    assert star.space == ss.GraphSpace(nx.star_graph(3))  # unchanged
    # other items, the same items in another order
    named = ss.GraphSpace(nx.relabel_nodes(nx.path_graph(4), dict(enumerate("abcd"))))
    with pytest.raises(
        ValueError, match="the items differ: item 0 is 0 in the file and 'a' here"
    ):
        ss.StructuredLabelModel(named).load(path)
    D = np.ones((3, 3)) - np.eye(3)
    ss.StructuredLabelModel(ss.FiniteMetricSpace("xyz", D)).save(path)
    with pytest.raises(
        ValueError,
        match="the items in another order: item 0 is 'x' in the file and 'z' here",
    ):
        ss.StructuredLabelModel(ss.FiniteMetricSpace("zyx", D)).load(path)


def test_the_space_difference_names_one_entry_not_the_arrays(tmp_path):
    path = tmp_path / "long.model"
    long_items = [f"item number {i} " + "x" * 100 for i in range(300)]
    graph = nx.relabel_nodes(nx.path_graph(300), dict(enumerate(long_items)))
    ss.StructuredLabelModel(ss.GraphSpace(graph)).save(path)
    graph.add_edge(long_items[0], long_items[299])  # a cycle now: other distances
    with pytest.raises(ValueError, match="distances differ") as info:
        ss.StructuredLabelModel(ss.GraphSpace(graph)).load(path)
    assert len(str(info.value)) < 500


def test_a_truncated_file_is_closed_after_the_error(structured_lm, tmp_path):
    # np.load handed its file to NpzFile, whose constructor failed on the damaged zip
    # directory before anything could close it: a ResourceWarning when collected.
    good = tmp_path / "good.model"
    structured_lm.save(good)
    path = tmp_path / "truncated.model"
    path.write_bytes(good.read_bytes()[: good.stat().st_size // 2])

    def load():
        try:
            ss.StructuredLabelModel(structured_lm.space).load(path)
        except ValueError as e:
            return str(e)
        raise AssertionError("a truncated file loaded")

    with warnings.catch_warnings(record=True) as caught:
        # an unclosed file warns from its __del__, where an "error" filter could only
        # print: record the warnings instead
        warnings.simplefilter("always", ResourceWarning)
        assert "damaged or truncated" in load()
        gc.collect()
    leaks = [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert not leaks, [str(w.message) for w in leaks]


# -- broken files ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["empty", "truncated", "json", "random", "plain_npz"])
def test_broken_files_raise_a_value_error_naming_the_file(
    structured_lm, kind, tmp_path
):
    good = tmp_path / "good.model"
    structured_lm.save(good)
    path = tmp_path / f"{kind}.model"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":
        path.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    elif kind == "json":
        path.write_text(json.dumps({"theta_": [1, 2, 3]}))
    elif kind == "random":
        path.write_bytes(np.random.default_rng(0).bytes(2000))
    else:
        with open(path, "wb") as f:
            np.savez(f, theta_=np.ones(3))
    for trust in (False, True):
        with pytest.raises(ValueError, match=re.escape(repr(str(path)))):
            ss.StructuredLabelModel(structured_lm.space).load(path, trust=trust)


def test_a_missing_file_raises_file_not_found(structured_lm, tmp_path):
    with pytest.raises(FileNotFoundError):
        ss.StructuredLabelModel(structured_lm.space).load(tmp_path / "nothing.model")


# -- damaged state ---------------------------------------------------------------------------
def _read(path):
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    header = json.loads(arrays.pop("__header__").tobytes().decode())
    return header, arrays


def _write(path, header, arrays):
    blob = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, __header__=blob, **arrays)
    path.write_bytes(buffer.getvalue())


def _drop_array(header, arrays, attr):
    del arrays[header["state"][attr]["key"]]


def _extra_entry(header, arrays, attr):
    key = header["state"][attr]["key"]
    arrays[key] = np.append(arrays[key], arrays[key][:1], axis=0)


def _nan(header, arrays, attr):
    key = header["state"][attr]["key"]
    arrays[key] = arrays[key].astype(float)
    arrays[key].flat[0] = np.nan


def _drop_attribute(header, arrays, attr):
    del header["state"][attr]


@pytest.mark.parametrize(
    "model_name, attr, damage, message",
    [
        ("structured_lm", "theta_", _drop_array, "theta_ refers to array"),
        ("structured_lm", "theta_", _extra_entry, r"theta_ must have shape \(3\)"),
        ("structured_lm", "prior_", _nan, "prior_ holds nan"),
        ("structured_lm", "prior_", _drop_attribute, "prior_ is missing"),
        ("structured_lm", "support_", _extra_entry, "_posterior does not belong"),
        ("manifold_lm", "weights_", _nan, "weights_ holds nan"),
        ("manifold_lm", "noise_scale_", _extra_entry, r"noise_scale_ must have shape"),
        ("manifold_lm", "groups_", _drop_attribute, "groups_ is missing"),
        ("structured_end", "dual_coef_", _extra_entry, "dual_coef_ must have shape"),
        ("structured_end", "X_fit_", _nan, "X_fit_ holds nan"),
        ("manifold_end", "beta_", _nan, "beta_ holds nan"),
        ("manifold_end", "targets_", _extra_entry, "targets_ must have shape"),
    ],
)
def test_damaged_state_is_refused_naming_the_attribute(
    request, model_name, attr, damage, message, tmp_path
):
    model = request.getfixturevalue(model_name)
    model = model[0] if isinstance(model, tuple) else model
    path = tmp_path / "damaged.model"
    model.save(path)
    header, arrays = _read(path)
    damage(header, arrays, attr)
    _write(path, header, arrays)
    with pytest.raises(ValueError, match=message) as info:
        type(model)(model.space).load(path)
    assert str(path) in str(info.value)


# -- what cannot be saved -------------------------------------------------------------------
def test_unsaveable_state_is_refused_naming_it_and_nothing_is_written(
    structured_lm, tmp_path
):
    model = copy.deepcopy(structured_lm)
    model.noise_model_["callback"] = print
    path = tmp_path / "kept.model"
    path.write_bytes(b"previous contents")
    with pytest.raises(ValueError, match=r"noise_model_\['callback'\]"):
        model.save(path)
    assert path.read_bytes() == b"previous contents"


class _MySpace(ss.FiniteMetricSpace):
    """A user's subclass: the format cannot promise to rebuild it."""


def test_a_space_subclass_is_refused_at_save(tmp_path):
    space = _MySpace(["a", "b", "c"], 1 - np.eye(3))
    with pytest.raises(ValueError, match="the parameter space.*_MySpace"):
        ss.StructuredLabelModel(space).save(tmp_path / "sub.model")


def test_items_the_format_cannot_describe_are_refused(tmp_path):
    space = ss.FiniteMetricSpace([frozenset({1}), frozenset({2})], 1 - np.eye(2))
    with pytest.raises(ValueError, match="frozenset"):
        ss.StructuredLabelModel(space).save(tmp_path / "items.model")


def test_other_stored_values_round_trip(structured_lm, tmp_path):
    """Warnings, pandas objects, non-string keys, NaN and NumPy scalars in a state."""
    import pandas as pd

    model = copy.deepcopy(structured_lm)
    frame = pd.DataFrame(
        {"a": [1.5, np.nan], "b": ["x", "y"]}, index=pd.Index(["r1", "r2"], name="row")
    )
    extra = {
        "frame": frame,
        "series": pd.Series([3, 4], index=[10, 20], name="s"),
        (1, "two"): [np.float32(0.25), np.int16(-3), float("nan"), float("-inf")],
    }
    model.noise_model_ = {**model.noise_model_, **extra}
    model.fit_warnings_ = [ss.exceptions.IdentifiabilityWarning("LF 2 is noise")]
    model.save(tmp_path / "extra.model")
    fresh = ss.StructuredLabelModel(model.space).load(tmp_path / "extra.model")
    pd.testing.assert_frame_equal(fresh.noise_model_["frame"], frame)
    pd.testing.assert_series_equal(fresh.noise_model_["series"], extra["series"])
    values = fresh.noise_model_[(1, "two")]
    assert values[0] == np.float32(0.25) and values[0].dtype == np.float32
    assert values[1] == -3 and values[1].dtype == np.int16
    assert np.isnan(values[2]) and values[3] == float("-inf")
    (w,) = fresh.fit_warnings_
    assert type(w) is ss.exceptions.IdentifiabilityWarning and str(w) == "LF 2 is noise"


@pytest.mark.parametrize("key", ["predict", "__class__", "__dict__", "not a name"])
def test_a_file_cannot_shadow_methods_or_special_attributes(
    structured_lm, key, tmp_path
):
    path = tmp_path / "shadow.model"
    structured_lm.save(path)
    header, arrays = _read(path)
    header["state"][key] = 1
    _write(path, header, arrays)
    with pytest.raises(ValueError, match=re.escape(f"{key!r} cannot be an attribute")):
        ss.StructuredLabelModel(structured_lm.space).load(path)


def test_object_arrays_are_refused_at_save(structured_lm, tmp_path):
    model = copy.deepcopy(structured_lm)
    model.fit_warnings_ = [np.array([{"a": 1}], dtype=object)]
    with pytest.raises(ValueError, match=r"Cannot save fit_warnings_\[0\].*object"):
        model.save(tmp_path / "obj.model")
    assert not (tmp_path / "obj.model").exists()


def test_numpy_items_of_a_space_are_saved_as_plain_values(tmp_path):
    items = np.arange(10, 14)  # NumPy integers as labels
    space = ss.FiniteMetricSpace(items, np.abs(items[:, None] - items[None, :]))
    ss.StructuredLabelModel(space).save(tmp_path / "np.model")
    header, arrays = _read(tmp_path / "np.model")
    assert header["space"]["items"]["items"] == [10, 11, 12, 13]
    loaded = ss.StructuredLabelModel(space).load(tmp_path / "np.model")
    assert loaded.space.index(12) == 2
