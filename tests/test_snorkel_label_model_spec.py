"""Snorkel's own LabelModel tests as the drop-in spec of StructuredLabelModel(Discrete(k)).

Adapted from Snorkel v0.10.0 ``test/labeling/model/test_label_model.py``: each test
below names the Snorkel test it comes from and keeps its scenario and expected answer,
through our public API only (``Snorkel's LabelModel(cardinality=k)`` is
``StructuredLabelModel(ss.Discrete(k))``); randomness is seeded.

Not adapted, because they poke Snorkel's private torch internals:

- test_generate_O: reads the overlap matrix ``O`` built by ``_set_constants``/``_generate_O``.
- test_augmented_L_construction: calls ``_get_augmented_label_matrix`` and reads ``c_tree``.
- test_build_mask: reads the ``mask`` built by ``_build_mask``.
- test_init_params: reads ``mu_init`` built by ``_init_params`` from ``prec_init``.
- test_predict_proba: sets the torch parameter ``mu`` by hand, then predicts.
- test_loss: calls ``_loss_l2`` and ``_loss_mu`` on a hand-set ``mu``.
- test_model_loss: calls ``_loss_mu`` across epochs; "Loss is NaN" needs torch's SGD (lr=1e8).
- test_optimizer_init: checks the ``optimizer`` attribute is a torch optimizer.
- test_scheduler_init: checks the ``lr_scheduler`` attribute's torch class.
- test_symmetry_breaking: sets ``mu`` and calls ``_break_col_permutation_symmetry``.
- test_symmetry_breaking_multiclass: the same with 3 classes.

Adapted in part (their private half dropped): test_L_form (``_set_constants``, ``n``,
``m``), test_class_balance (``_set_class_balance``, ``p``: checked through ``fit`` and
``prior_``), test_conditional_probs (``_set_up_model``: a fitted model instead),
test_predict and test_score (hand-set ``mu``: a model fitted on seeded data instead),
test_warmup (``warmup_steps`` attribute). test_set_mu_eps is adapted only as validation:
Snorkel's floor comes from clamping its torch parameter ``mu``; ``mu_eps`` is validated
and ignored here (see ``StructuredLabelModel.fit``).
"""

import numpy as np
import pytest
from snorkel.synthetic.synthetic_data import generate_simple_label_matrix

import snorkel_structured as ss

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # tiny L: warnings


def label_model(cardinality=2):
    """Snorkel's ``LabelModel(cardinality=k, verbose=False)``."""
    return ss.StructuredLabelModel(ss.Discrete(cardinality), verbose=False)


def snorkel_data(n, m, cardinality, seed, **kwargs):
    """Snorkel's generator (global RNG only) under ``np.random.seed(seed)``, restored."""
    state = np.random.get_state()  # noqa: NPY002 - Snorkel's generator
    try:
        np.random.seed(seed)  # noqa: NPY002 - its only source of randomness
        return generate_simple_label_matrix(n, m, cardinality, **kwargs)
    finally:
        np.random.set_state(state)  # noqa: NPY002


@pytest.fixture(scope="module")
def fitted():
    """A model of 3 equally good LFs on 2 balanced classes, with a uniform prior."""
    data = ss.synthetic.make_label_matrix(
        2000, space=ss.Discrete(2), theta=[2.0, 2.0, 2.0], prior=[0.5, 0.5], seed=0
    )
    return label_model().fit(data.L, class_balance=[0.5, 0.5], seed=0)


# -- test_L_form ------------------------------------------------------------------------
def test_L_form_errors():
    """Snorkel test_L_form: votes above the cardinality, fewer than 3 LFs."""
    L = np.array([[-1, 0, 1], [-1, 0, 2], [0, -1, 2], [-1, 0, -1]])
    with pytest.raises(ValueError, match="L_train has cardinality 3") as err:
        label_model().fit(L, n_epochs=1)
    assert "entry (1, 2) is 2" in str(err.value)  # where, and what is allowed
    assert "in [0, 2)" in str(err.value)
    L = np.array([[0, 1], [1, 1], [0, 1]])
    with pytest.raises(ValueError, match="L_train should have at least 3") as err:
        label_model().fit(L, n_epochs=1)
    assert "Add labeling functions" in str(err.value)


# -- test_mv_default --------------------------------------------------------------------
def test_mv_default():
    """Snorkel test_mv_default: without overlaps or conflicts, the votes decide."""
    lm = label_model()
    L = np.array([[-1, -1, 1], [-1, 1, -1], [0, -1, -1]])  # no two LFs overlap
    lm.fit(L, n_epochs=100)
    np.testing.assert_array_equal(lm.predict(L), [1, 1, 0])
    L = np.array([[-1, -1, 1], [-1, 1, 1], [1, 1, 1]])  # no two LFs conflict
    lm.fit(L, n_epochs=100)
    np.testing.assert_array_equal(lm.predict(L), [1, 1, 1])


# -- test_prec_init ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "prec_init", [None, 0.6, 1, [0.1, 0.2, 0.3], np.array([0.1, 0.2, 0.3])]
)
def test_prec_init_accepted(prec_init):
    """Snorkel test_prec_init: a float, int, list or array (one per LF) is accepted."""
    L = np.array([[-1, -1, 1], [-1, 1, -1], [0, -1, -1]])
    kwargs = {} if prec_init is None else {"prec_init": prec_init}
    lm = label_model().fit(L_train=L, n_epochs=1000, seed=123, **kwargs)
    assert lm.predict(L).shape == (3,)


def test_prec_init_refused():
    """Snorkel test_prec_init: a string, or one precision per LF of the wrong count."""
    L = np.array([[-1, -1, 1], [-1, 1, -1], [0, -1, -1]])
    lm = label_model()
    with pytest.raises(
        TypeError,
        match="prec_init is of type <class 'str'> which is not supported currently.",
    ):
        lm.fit(L_train=L, prec_init="skibidi bop mm dada", n_epochs=1000, seed=123)
    for wrong in ([0.1, 0.2, 0.3, 0.4], [0.1, 0.2]):
        with pytest.raises(ValueError, match="prec_init must have shape 3.") as err:
            lm.fit(L_train=L, prec_init=np.array(wrong), n_epochs=1000, seed=123)
        assert f"got shape ({len(wrong)},)" in str(err.value)


# -- test_class_balance -----------------------------------------------------------------
def test_class_balance(fitted):
    """Snorkel test_class_balance: Y_dev sets the balance; zeros and misfits refused."""
    L = ss.synthetic.make_label_matrix(
        500, space=ss.Discrete(2), theta=[2.0, 2.0, 2.0], prior=[0.5, 0.5], seed=1
    ).L
    Y_dev = np.array([0, 0, 1, 1, 0, 0, 0, 0, 1, 1])
    lm = label_model().fit(L, Y_dev=Y_dev, seed=0)
    np.testing.assert_array_almost_equal(lm.prior_, [0.6, 0.4])
    with pytest.raises(ValueError, match="Class balance prior is 0") as err:
        label_model().fit(L, class_balance=np.array([0.0, 1.0]), Y_dev=Y_dev)
    assert "class(es) [0]" in str(err.value)  # names the zero class
    with pytest.raises(ValueError, match="class_balance has 1 entries."):
        label_model().fit(L, class_balance=np.array([0.0]), Y_dev=Y_dev)
    with pytest.raises(
        ValueError, match="Does not match LabelModel cardinality"
    ) as err:
        label_model().fit(L, Y_dev=np.array([0, 0, 0]))
    assert "classes [1] never occur" in str(err.value)


def test_zero_class_balance_is_legitimate_beyond_discrete():
    """Snorkel's refusals are for plain classes; a ranking prior may sit on a few labels."""
    space = ss.Permutations(3)
    prior = np.array([0.5, 0.5, 0, 0, 0, 0])
    data = ss.synthetic.make_label_matrix(
        500, space=space, theta=[1.0, 1.0, 1.0], prior=prior, seed=0
    )
    lm = ss.StructuredLabelModel(space, seed=0).fit(data.L, class_balance=prior)
    np.testing.assert_allclose(lm.prior_, prior)
    lm = ss.StructuredLabelModel(space, seed=0).fit(data.L, Y_dev=data.Y[:50])
    assert lm.prior_[2:].sum() == 0


# -- test_conditional_probs -------------------------------------------------------------
def test_conditional_probs():
    """Snorkel test_conditional_probs: the table holds probabilities."""
    L = np.array([[0, 1, 0], [0, 1, 0]])
    lm = label_model().fit(L, class_balance=[0.6, 0.4], seed=0)
    cprobs = lm.get_conditional_probs()
    assert cprobs.shape == (3, 3, 2)
    assert cprobs.max() <= 1.0 and cprobs.min() >= 0.0
    np.testing.assert_allclose(cprobs.sum(axis=1), 1.0)


# -- test_get_weight --------------------------------------------------------------------
def test_get_weight():
    """Snorkel test_get_weight (seeded): estimated accuracies within 0.1 of the truth."""
    rng = np.random.default_rng(123)
    true_accs = np.array([0.95, 0.6, 0.7, 0.55, 0.8])
    coverage = np.array([1.0, 0.8, 1.0, 1.0, 1.0])
    Y = (rng.random(1000) <= 0.5).astype(int)
    correct = rng.random((1000, 5)) <= true_accs
    L = np.where(correct, Y[:, None], 1 - Y[:, None])
    L[rng.random((1000, 5)) > coverage] = ss.ABSTAIN
    lm = label_model().fit(L, n_epochs=1000, seed=123)
    np.testing.assert_allclose(lm.get_weights(), true_accs, atol=0.1)


# -- test_predict -----------------------------------------------------------------------
def test_predict_symmetric_disagreement():
    """Snorkel test_predict: 3 LFs that always disagree or abstain: all abstain."""
    L = np.array([[-1, 1, 0], [0, -1, 1], [1, 0, -1]])
    lm = label_model().fit(L, n_epochs=100)
    np.testing.assert_allclose(lm.predict_proba(L), 0.5)
    np.testing.assert_array_equal(lm.predict(L), [-1, -1, -1])


# -- test_score, test_progress_bar ------------------------------------------------------
@pytest.mark.parametrize("progress_bar", [True, False])
def test_score_on_snorkels_rows(progress_bar):
    """Snorkel test_score and test_progress_bar: the row without votes abstains."""
    L = np.array([[1, 1, 0], [-1, -1, -1], [1, 0, 1]])
    Y = np.array([1, 0, 1])
    lm = label_model().fit(L, n_epochs=100, progress_bar=progress_bar)
    results = lm.score(L, Y, metrics=["accuracy", "coverage"])
    np.testing.assert_array_equal(lm.predict(L), [1, -1, 1])
    assert results == dict(accuracy=1.0, coverage=2 / 3)


def test_score_coverage(fitted):
    """Snorkel test_score: coverage counts abstains, accuracy is on the covered rows."""
    L = np.array([[1, 1, 0], [-1, -1, -1], [1, 0, 1]])
    Y = np.array([1, 0, 1])
    np.testing.assert_array_equal(fitted.predict(L), [1, -1, 1])  # uniform prior: tie
    assert fitted.score(L, Y, metrics=["accuracy", "coverage"]) == dict(
        accuracy=1.0, coverage=2 / 3
    )
    random_ties = fitted.score(L, Y, metrics=["coverage"], tie_break_policy="random")
    assert random_ties == dict(coverage=1.0)
    # As Snorkel's Scorer: gold -1 rows are left out of every metric but coverage.
    assert fitted.score(L, [1, 0, -1], metrics=["accuracy", "coverage"]) == dict(
        accuracy=1.0, coverage=2 / 3
    )
    assert fitted.score(L, Y, metrics=None) == {}
    with pytest.raises(ValueError, match="Unrecognized metric: coverge"):
        fitted.score(L, Y, metrics=["coverge"])


def test_score_metrics(fitted):
    """Snorkel test_score: default accuracy, and f1, on two rows predicted 1."""
    L = np.array([[1, 0, 1], [1, 0, 1]])
    assert fitted.score(L, Y=np.array([0, 1])) == dict(accuracy=0.5)
    results = fitted.score(L=L, Y=np.array([1, 0]), metrics=["accuracy", "f1"])
    assert results == pytest.approx(dict(accuracy=0.5, f1=2 / 3))


def test_score_when_every_row_abstains(fitted):
    """Every row abstains (a tie under a uniform prior): coverage 0 and NaN metrics
    with a warning that says why, where scikit-learn would raise on empty arrays."""
    L = np.full((4, 3), -1)
    with pytest.warns(UserWarning, match="metrics other than coverage are NaN"):
        res = fitted.score(L, [0, 1, 0, 1], metrics=["accuracy", "coverage", "f1"])
    assert res["coverage"] == 0.0
    assert np.isnan(res["accuracy"]) and np.isnan(res["f1"])


# -- test_optimizer, test_lr_scheduler, test_warmup, test_optimizer_init -------------------
L_SMALL = np.array([[0, -1, 0], [0, 1, 0]])


def test_optimizer():
    """Snorkel test_optimizer and test_optimizer_init: names are checked, then ignored."""
    lm = label_model()
    for optimizer in ("sgd", "adam", "adamax"):
        lm.fit(L_SMALL, n_epochs=1, optimizer=optimizer)
    for bad in ("bad_opt", "bad_optimizer"):
        with pytest.raises(ValueError, match="Unrecognized optimizer option") as err:
            lm.fit(L_SMALL, n_epochs=1, optimizer=bad)
        assert "'sgd', 'adam', 'adamax'" in str(err.value)


def test_lr_scheduler():
    """Snorkel test_lr_scheduler: names are checked, then ignored."""
    lm = label_model()
    for scheduler in ("constant", "linear", "exponential", "step"):
        lm.fit(L_SMALL, n_epochs=1, lr_scheduler=scheduler)
    with pytest.raises(ValueError, match="Unrecognized lr scheduler option"):
        lm.fit(L_SMALL, n_epochs=1, lr_scheduler="bad_scheduler")


def test_warmup():
    """Snorkel test_warmup: warmup in epochs is accepted, in batches refused."""
    lm = label_model()
    lm.fit(
        L_SMALL,
        lr_scheduler_config={"warmup_steps": 3, "warmup_unit": "epochs"},
        n_epochs=5,
    )
    lm.fit(L_SMALL, lr_scheduler_config={"warmup_percentage": 3 / 5}, n_epochs=5)
    with pytest.raises(ValueError, match="LabelModel does not support"):
        lm.fit(
            L_SMALL, lr_scheduler_config={"warmup_steps": 1, "warmup_unit": "batches"}
        )


@pytest.mark.parametrize(
    "options, error, match",
    [
        ({"n_epochs": 1.5}, TypeError, "n_epochs must be an int"),
        ({"lr": -0.1}, ValueError, "lr must be in the range"),
        ({"l2": -1.0}, ValueError, "l2 must be in the range"),
        ({"log_freq": "often"}, TypeError, "log_freq must be an int"),
        ({"optimizer_config": {"sgd": {}}}, ValueError, "unexpected fields"),
        ({"optimizer_config": {"adam_config": {"beta": 1}}}, ValueError, "unexpected"),
        (
            {"optimizer_config": {"sgd_config": {"momentum": -1.0}}},
            ValueError,
            "Invalid momentum value",
        ),
        (
            {
                "optimizer": "adam",
                "optimizer_config": {"adam_config": {"betas": (1, 0)}},
            },
            ValueError,
            "Invalid beta parameter at index 0",
        ),
        ({"lr_scheduler_config": 3}, TypeError, "lr_scheduler_config must be a dict"),
        ({"mu_eps": 0.7}, ValueError, "mu_eps must be in the range"),
        ({"epochs": 3}, TypeError, "unexpected keyword arguments"),
    ],
)
def test_training_options_refused(options, error, match):
    """Snorkel's TrainConfig and torch optimizers refuse these; so does fit."""
    with pytest.raises(error, match=match):
        label_model().fit(L_SMALL, **options)


def test_set_mu_eps_is_validated():
    """Snorkel test_set_mu_eps: mu_eps is accepted (validated, then ignored)."""
    L = np.array([[1, 1, 1], [1, 1, 1]])
    lm = label_model().fit(L, mu_eps=0.0123)
    cprobs = lm.get_conditional_probs()
    assert cprobs.min() >= 0.0 and cprobs.max() <= 1.0


# -- test_save_and_load -----------------------------------------------------------------
def test_save_and_load(tmp_path):
    """Snorkel test_save_and_load: a loaded model predicts as the saved one."""
    L = np.array([[0, -1, 0], [0, 1, 1]])
    lm = label_model().fit(L, n_epochs=1)
    lm.save(tmp_path / "label_model.pkl")
    loaded = label_model()
    loaded.load(tmp_path / "label_model.pkl")
    np.testing.assert_array_equal(loaded.predict(L), lm.predict(L))


# -- TestLabelModelAdvanced (Snorkel's "complex" tests, seeded) ---------------------------
def conditional_probs_error(P, lm):
    """Snorkel's error: mean absolute difference of the conditional-probability tables."""
    P_lm = lm.get_conditional_probs()
    return np.linalg.norm(P.flatten() - P_lm.flatten(), ord=1) / P.size


def test_label_model_basic():
    """Snorkel test_label_model_basic: P(lambda | Y) and labels on synthetic data."""
    P, Y, L = snorkel_data(10000, 10, 2, seed=123)
    lm = label_model().fit(L, n_epochs=200, lr=0.01, seed=123)
    assert conditional_probs_error(P, lm) <= 0.01
    assert lm.score(L, Y)["accuracy"] >= 0.9


def test_label_model_sparse():
    """Snorkel test_label_model_sparse: LFs that mostly abstain (issue #1422)."""
    P, Y, L = snorkel_data(10000, 10, 2, seed=123, abstain_multiplier=1000.0)
    lm = label_model().fit(L, n_epochs=1000, lr=0.01, seed=123)
    assert conditional_probs_error(P, lm) <= 0.01
    Y_pred = lm.predict(L, tie_break_policy="abstain")
    voted = (L != ss.ABSTAIN).any(axis=1)
    covered = voted & (Y_pred != ss.ABSTAIN)
    assert (Y_pred[covered] == Y[covered]).mean() >= 0.65
    # Snorkel asserts no abstain where an LF voted (its issue #1422: clamping made it
    # abstain everywhere). Here the LFs almost never meet, so the model keeps them
    # equally weighted (the unweighted vote), and a row whose votes split evenly is a
    # true tie: "abstain" is then the honest answer. Every other voted row is labeled.
    counts = np.stack([(L == c).sum(axis=1) for c in range(2)], axis=1)
    tied = counts[:, 0] == counts[:, 1]
    assert (Y_pred[voted & ~tied] != ss.ABSTAIN).all()
    assert (Y_pred[voted & tied] == ss.ABSTAIN).all()
    assert (voted & tied).sum() < 0.02 * voted.sum()
    # Snorkel's hash policy labels every voted row, as Snorkel's LabelModel does
    assert (lm.predict(L, tie_break_policy="random")[voted] != ss.ABSTAIN).all()
