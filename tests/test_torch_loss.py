"""Noise-aware losses for deep end models (snorkel_structured.torch)."""

import itertools
import subprocess
import sys

import networkx as nx
import numpy as np
import pandas as pd
import pytest
import torch
from torch.nn import functional as F

import snorkel_structured as ss
from snorkel_structured.synthetic import make_ranking_data
from snorkel_structured.torch import (
    NoiseAwareLoss,
    WeightedDataset,
    noise_aware_loss,
    one_hot_weights,
    weights_tensor,
)

SPACE3 = ss.Permutations(3)
PRIOR3 = np.array([0.3, 0.0, 0.2, 0.0, 0.0, 0.5])  # support {0, 2, 5}
SUPPORT3 = np.array([0, 2, 5])
S_SUP = SPACE3.squared_distance_matrix[np.ix_(SUPPORT3, SUPPORT3)]
THETA, ABSTAIN = np.array([0.4, 0.9]), np.array([0.2, 0.1])
LOSS_KINDS = ["cross_entropy", "brier", "expected_distance", "distance"]


def _patterns_and_likelihoods():
    """Every vote pattern (abstains included) and P(pattern | y) for y in the support."""
    S = SPACE3.squared_distance_matrix
    cond = np.exp(-THETA[:, None, None] * S[None])
    cond /= cond.sum(axis=2, keepdims=True)  # (m, y, v)
    patterns = np.array(list(itertools.product(range(-1, len(SPACE3)), repeat=2)))
    lik = np.ones((len(patterns), SUPPORT3.size))
    for a in range(2):
        v = patterns[:, a]
        lik *= np.where(
            v[:, None] == -1,
            ABSTAIN[a],
            (1 - ABSTAIN[a]) * cond[a][np.ix_(SUPPORT3, np.maximum(v, 0))].T,
        )
    return patterns, lik  # (B, 2), (B, k)


def _criterion(kind):
    return NoiseAwareLoss(
        loss=kind,
        distances=S_SUP if kind == "expected_distance" else None,
        reduction="none",
    )


def _inputs(kind, n_candidates, rng):
    """Candidate network outputs: logits, or positive distances for 'distance'."""
    x = rng.normal(scale=2.0, size=(n_candidates, SUPPORT3.size))
    return torch.tensor(np.abs(x) if kind == "distance" else x, requires_grad=True)


@pytest.mark.parametrize("kind", LOSS_KINDS)
@pytest.mark.parametrize("rule", ["sample", "map"])
def test_corrected_loss_and_gradient_are_unbiased_by_enumeration(rule, kind, rng):
    patterns, lik = _patterns_and_likelihoods()
    np.testing.assert_allclose(lik.sum(axis=0), 1.0, atol=1e-12)
    nm = ss.noise_matrix(SPACE3, THETA, PRIOR3, abstain=ABSTAIN, rule=rule)
    assert nm.method == "exact" and nm.support.tolist() == SUPPORT3.tolist()
    # P(pseudolabel = j | pattern): the rule applied to the brute-force posterior
    post = lik * nm.prior
    post /= post.sum(axis=1, keepdims=True)
    if rule == "map":
        # the public pipeline: pseudolabels and weights of every pattern
        W = ss.loss_weights(
            patterns, SPACE3, THETA, PRIOR3, abstain=ABSTAIN, rule="map", noise=nm
        )
        z = np.searchsorted(SUPPORT3, W["pseudolabel"].to_numpy())
        np.testing.assert_array_equal(z, post.argmax(axis=1))
        rule_probs = np.eye(SUPPORT3.size)[z]
        w_rows = weights_tensor(W, dtype=torch.float64)  # (B, k)
    else:
        rule_probs = post
        w_rows = None
    crit = _criterion(kind)
    t = _inputs(kind, 7, rng)  # 7 candidate outputs of the network
    k = SUPPORT3.size
    inverse = torch.tensor(nm.inverse)
    # per-pseudolabel corrected loss of each candidate: (k pseudolabels, 7)
    corrected = torch.stack([crit(t, inverse[j].expand(7, k)) for j in range(k)])
    if w_rows is not None:  # the DataFrame rows are the Q^-1 rows of the pseudolabels
        torch.testing.assert_close(w_rows, inverse[torch.as_tensor(z)])
    # E[corrected | Y = y_i] = sum_u P(u | y_i) sum_j P(Z = j | u) corrected_j
    p_z_given_y = torch.as_tensor(lik.T @ rule_probs)  # (k, k) = Q by enumeration
    torch.testing.assert_close(p_z_given_y, torch.tensor(nm.Q), atol=1e-12, rtol=0)
    expected = p_z_given_y @ corrected  # (k true labels, 7)
    clean = torch.stack(
        [
            crit(t, one_hot_weights([y] * 7, SUPPORT3, dtype=torch.float64))
            for y in SUPPORT3
        ]
    )
    torch.testing.assert_close(expected, clean, atol=1e-10, rtol=0)
    # gradients too: the expected objective is the clean objective
    mix = torch.as_tensor(rng.dirichlet(np.ones(k)))  # any mixture of true labels
    (g_noisy,) = torch.autograd.grad((mix @ expected).sum(), t)
    (g_clean,) = torch.autograd.grad((mix @ clean).sum(), t)
    torch.testing.assert_close(g_noisy, g_clean, atol=1e-10, rtol=0)


@pytest.mark.parametrize("kind", ["cross_entropy", "brier"])
def test_clipped_loss_bias_is_the_expected_negative_part(kind, rng):
    nm = ss.noise_matrix(SPACE3, THETA, PRIOR3, abstain=ABSTAIN)
    t = _inputs(kind, 50, rng)
    k = SUPPORT3.size
    inverse = torch.tensor(nm.inverse)
    plain, clipped = (
        _criterion(kind),
        NoiseAwareLoss(loss=kind, reduction="none", clip=0.0),
    )
    rows = torch.stack([plain(t, inverse[j].expand(50, k)) for j in range(k)])
    rows_c = torch.stack([clipped(t, inverse[j].expand(50, k)) for j in range(k)])
    torch.testing.assert_close(rows_c, rows.clamp(min=0.0))
    assert (rows < 0).any(), "Q^-1 weights should make some corrected losses negative"
    Q = torch.tensor(nm.Q)
    bias = Q @ rows_c - Q @ rows  # E[clipped] - clean loss, per true label and output
    torch.testing.assert_close(bias, Q @ (-rows).clamp(min=0.0))
    assert (bias >= 0).all() and bias.max() > 0
    # clean one-hot targets: every clean loss is >= 0, so clipping at 0 changes nothing
    W1 = one_hot_weights(rng.choice(SUPPORT3, 50), SUPPORT3, dtype=torch.float64)
    torch.testing.assert_close(clipped(t, W1), plain(t, W1))


def test_cross_entropy_is_unbounded_below_and_clip_and_brier_are_not():
    w = torch.tensor([[1.125, -0.125]], dtype=torch.float64)  # Q = [[.9, .1], [.1, .9]]
    direction = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
    for scale in (10.0, 100.0, 1000.0):
        scores = scale * direction  # ever more confident in the pseudolabel
        ce = noise_aware_loss(scores, w, loss="cross_entropy").item()
        assert ce < -0.1 * scale  # goes to -inf linearly in the logit gap
        clipped = noise_aware_loss(scores, w, loss="cross_entropy", clip=0.0)
        assert clipped.item() == 0.0
        assert noise_aware_loss(scores, w).item() >= -2 * 0.125  # brier, the default
    # the clipped row gives no gradient: it stops pulling once at the clip
    scores = (10.0 * direction).requires_grad_()
    noise_aware_loss(scores, w, loss="cross_entropy", clip=0.0).backward()
    assert torch.count_nonzero(scores.grad) == 0


def test_one_hot_weights_give_the_plain_losses(rng):
    logits = torch.as_tensor(rng.normal(size=(20, 3)))
    y = rng.choice(SUPPORT3, 20)
    pos = torch.as_tensor(np.searchsorted(SUPPORT3, y))
    W = one_hot_weights(y, SUPPORT3, dtype=torch.float64)
    for red in ("mean", "sum", "none"):
        torch.testing.assert_close(
            NoiseAwareLoss(loss="cross_entropy", reduction=red)(logits, W),
            F.cross_entropy(logits, pos, reduction=red),
        )
    p = F.softmax(logits, dim=1)
    brier = ((p - F.one_hot(pos, 3)) ** 2).sum(dim=1)
    torch.testing.assert_close(
        noise_aware_loss(logits, W, loss="brier", reduction="none"), brier
    )
    expdist = (p * torch.as_tensor(S_SUP)[:, pos].T).sum(dim=1)
    torch.testing.assert_close(
        noise_aware_loss(
            logits, W, loss="expected_distance", distances=S_SUP, reduction="none"
        ),
        expdist,
    )
    # one_hot_weights follows the given output order, not sorted order
    W_rev = one_hot_weights(y, SUPPORT3[::-1].copy(), dtype=torch.float64)
    torch.testing.assert_close(W_rev, W.flip(1))


def test_weights_tensor_reads_reorders_and_pads_the_frame():
    data = make_ranking_data(200, theta=[0.3, 0.6, 0.9], abstain=0.2, seed=1)
    W = ss.loss_weights(data.L, data.space, data.theta, data.prior, seed=0)
    sup = np.asarray(W.attrs["support"])
    values = W.drop(columns="pseudolabel").to_numpy()
    Wt = weights_tensor(W, dtype=torch.float64)
    np.testing.assert_array_equal(Wt.numpy(), values)
    assert weights_tensor(W).dtype == torch.float32
    # a network scoring the whole space, outputs in reverse label order
    order = np.arange(len(data.space))[::-1].copy()
    full = weights_tensor(W, support=order, dtype=torch.float64).numpy()
    assert full.shape == (200, len(data.space))
    cols = [int(np.flatnonzero(order == s)[0]) for s in sup]
    np.testing.assert_array_equal(full[:, cols], values)
    assert np.count_nonzero(np.delete(full, cols, axis=1)) == 0
    # without attrs the space names the columns
    bare = W.copy()
    bare.attrs = {}
    with pytest.raises(ValueError, match="Pass space="):
        weights_tensor(bare, support=order)
    np.testing.assert_array_equal(
        weights_tensor(
            bare, support=order, space=data.space, dtype=torch.float64
        ).numpy(),
        full,
    )
    # arrays and tensors pass through
    np.testing.assert_array_equal(
        weights_tensor(values, dtype=torch.float64).numpy(), values
    )
    torch.testing.assert_close(weights_tensor(Wt, dtype=torch.float64), Wt)


def test_weights_tensor_errors():
    data = make_ranking_data(30, theta=[0.3, 0.6, 0.9], seed=1)
    W = ss.loss_weights(data.L, data.space, data.theta, data.prior, seed=0)
    sup = W.attrs["support"]
    with pytest.raises(
        ValueError, match=f"label {sup[1]} has a weight column but is outside"
    ):
        weights_tensor(W, support=[sup[0]])
    bad = W.copy()
    bad.iloc[3, 1] = np.nan
    with pytest.raises(ValueError, match="row 3 holds NaN"):
        weights_tensor(bad)
    with pytest.raises(ValueError, match="2-D"):
        weights_tensor(np.ones(5))
    with pytest.raises(ValueError, match="an array's columns must already follow"):
        weights_tensor(np.ones((5, 2)), support=[0, 1])
    with pytest.raises(ValueError, match="distinct label indices"):
        weights_tensor(W, support=[sup[0], sup[0], sup[1]])
    with pytest.raises(ValueError, match="no label columns"):
        weights_tensor(W[["pseudolabel"]])
    with pytest.raises(ValueError, match=r"y\[1\] = 3 is outside the support"):
        one_hot_weights([0, 3], [0, 2, 5])
    with pytest.raises(ValueError, match="1-D array of label indices"):
        one_hot_weights([0.5], [0, 2])


def test_loss_validation_errors():
    with pytest.raises(ValueError, match="loss must be one of"):
        NoiseAwareLoss(loss="hinge")
    with pytest.raises(ValueError, match="reduction must be one of"):
        NoiseAwareLoss(reduction="max")
    with pytest.raises(ValueError, match="clip must be None"):
        NoiseAwareLoss(clip=float("nan"))
    with pytest.raises(ValueError, match="needs distances"):
        NoiseAwareLoss(loss="expected_distance")
    with pytest.raises(ValueError, match="used only by loss='expected_distance'"):
        NoiseAwareLoss(distances=S_SUP)
    with pytest.raises(ValueError, match=r"distances must have shape \(k, k\)"):
        NoiseAwareLoss(loss="expected_distance", distances=np.ones((2, 3)))
    crit = NoiseAwareLoss(loss="expected_distance", distances=S_SUP)
    with pytest.raises(ValueError, match="scores 2 labels"):
        crit(torch.zeros(4, 2), torch.zeros(4, 2))
    with pytest.raises(ValueError, match=r"got input \(4, 3\) and weights \(4, 2\)"):
        NoiseAwareLoss()(torch.zeros(4, 3), torch.zeros(4, 2))
    with pytest.raises(ValueError, match="weights must be finite"):
        NoiseAwareLoss()(torch.zeros(1, 2), torch.tensor([[np.nan, 1.0]]))


def test_module_keeps_distances_as_a_buffer():
    crit = NoiseAwareLoss(loss="expected_distance", distances=S_SUP, clip=0.0)
    assert "distances" in crit.state_dict() and "clip=0.0" in repr(crit)
    logits = torch.zeros(2, 3, dtype=torch.float32)
    out = crit.float()(logits, torch.eye(3)[:2])
    assert out.dtype == torch.float32


def test_weighted_dataset_zips_rows_and_batches_repeatably(rng):
    X = pd.DataFrame(rng.normal(size=(10, 4)), index=[f"r{i}" for i in range(10)])
    W = pd.DataFrame(rng.normal(size=(10, 3)), index=X.index, columns=["a", "b", "c"])
    ds = WeightedDataset(X, W.to_numpy())
    assert len(ds) == 10
    x3, w3 = ds[3]
    np.testing.assert_allclose(x3.numpy(), X.iloc[3].to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(w3.numpy(), W.iloc[3].to_numpy(), rtol=1e-6)

    def batches(seed):
        loader = torch.utils.data.DataLoader(
            ds,
            batch_size=4,
            shuffle=True,
            generator=torch.Generator().manual_seed(seed),
        )
        return [xb for xb, _ in loader]

    first, again = batches(0), batches(0)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert sum(len(b) for b in first) == 10
    with pytest.raises(ValueError, match="different indexes"):
        WeightedDataset(X, W.set_axis(W.index[::-1], axis=0))
    with pytest.raises(ValueError, match="X has 10 rows but weights has 9"):
        WeightedDataset(X, W.to_numpy()[:9])
    X_nan = X.to_numpy().copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="X must be finite"):
        WeightedDataset(X_nan, W.to_numpy())


def test_package_import_does_not_import_this_module():
    code = (
        "import sys, snorkel_structured; "
        "assert 'snorkel_structured.torch' not in sys.modules; "
        "import snorkel_structured.torch as st; print(st.NoiseAwareLoss.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "NoiseAwareLoss"


# -- regressions: weights by column name, empty batches, argument types ---------------
def _tree_weights():
    """A loss-weights frame on a 7-node tree (items 0..6, so names are indices)."""
    space = ss.GraphSpace(nx.balanced_tree(2, 2))
    prior = np.zeros(7)
    prior[[3, 4, 5]] = [0.3, 0.3, 0.4]
    L = np.random.default_rng(0).integers(0, 7, (40, 3))
    W = ss.loss_weights(L, space, [0.5, 1.0, 1.5], prior, seed=0)
    assert W.attrs["support"] == [3, 4, 5]
    return space, W


def test_weights_tensor_follows_column_names_not_positions_after_a_reorder():
    space, W = _tree_weights()
    by_hand = torch.tensor(W[["3", "4", "5"]].to_numpy())
    R = W[["pseudolabel", "5", "4", "3"]]  # pandas keeps attrs["support"] = [3, 4, 5]
    assert R.attrs["support"] == [3, 4, 5]
    np.testing.assert_array_equal(
        weights_tensor(W, support=[3, 4, 5], dtype=torch.float64), by_hand
    )
    for support in ([3, 4, 5], [5, 3, 4], range(7)):
        original = weights_tensor(W, support=support, space=space)
        reordered = weights_tensor(R, support=support, space=space)
        torch.testing.assert_close(reordered, original, rtol=0, atol=0)
    # the loss on the reordered frame is the loss on the weights read by name
    logits = torch.as_tensor(np.random.default_rng(1).normal(size=(40, 3)))
    w = weights_tensor(R, support=[3, 4, 5], space=space, dtype=torch.float64)
    for kind in ("cross_entropy", "brier"):
        torch.testing.assert_close(
            noise_aware_loss(logits, w, loss=kind),
            noise_aware_loss(logits, by_hand, loss=kind),
        )
    # Without the space, names "5", "4", "3" out of attrs order cannot be read: they
    # may be reordered labels, or integer items in another order than their indices.
    for bad in (R, W.rename(columns={"3": "5", "5": "3"})):
        with pytest.raises(ValueError, match=r"not in the order.*Pass space="):
            weights_tensor(bad, support=[3, 4, 5])
    # the frame's own column order is kept when no support is asked for
    np.testing.assert_array_equal(
        weights_tensor(R, dtype=torch.float64), by_hand.flip(1)
    )


def test_weights_tensor_names_missing_and_extra_columns():
    space, W = _tree_weights()
    dropped = W[["pseudolabel", "4", "5"]]
    with pytest.raises(ValueError, match=r"missing column\(s\) \['3'\], extra"):
        weights_tensor(dropped, support=range(7), space=space)
    with pytest.raises(ValueError, match=r"lists 3 labels \[3, 4, 5\] but it has 2"):
        weights_tensor(dropped, support=range(7))
    extra = W.assign(**{"6": 0.0})
    with pytest.raises(ValueError, match=r"missing column\(s\) \[\], extra .*\['6'\]"):
        weights_tensor(extra, support=range(7), space=space)


def test_weights_tensor_reads_label_index_names_without_the_space():
    # items whose strings collide: loss_weights names the columns "label_<i>"
    items = [0, "0", 1, "1"]
    space = ss.FiniteMetricSpace(items, 1.0 - np.eye(4))
    L = np.random.default_rng(0).integers(0, 4, (30, 2))
    W = ss.loss_weights(L, space, [1.0, 2.0], [0.0, 0.3, 0.3, 0.4], seed=0)
    assert list(W.columns) == ["pseudolabel", "label_1", "label_2", "label_3"]
    R = W[["pseudolabel", "label_3", "label_1", "label_2"]]
    torch.testing.assert_close(
        weights_tensor(R, support=[1, 2, 3]), weights_tensor(W, support=[1, 2, 3])
    )
    with pytest.raises(ValueError, match=r"missing column\(s\) \['label_2'\]"):
        weights_tensor(R.drop(columns="label_2"), support=[1, 2, 3])


def test_weights_tensor_integer_items_out_of_index_order():
    # items (2, 0, 1): the column of label 0 is named "2"; names are not indices
    space = ss.FiniteMetricSpace([2, 0, 1], 1.0 - np.eye(3))
    L = np.random.default_rng(0).integers(0, 3, (30, 2))
    W = ss.loss_weights(L, space, [1.0, 2.0], [0.3, 0.3, 0.4], seed=0)
    assert list(W.columns) == ["pseudolabel", "2", "0", "1"]
    out = weights_tensor(W, support=[0, 1, 2], space=space, dtype=torch.float64)
    np.testing.assert_array_equal(out, W[["2", "0", "1"]].to_numpy())
    # without the space "2" might be label 2: refuse rather than guess
    with pytest.raises(ValueError, match="Pass space="):
        weights_tensor(W, support=[0, 1, 2])


@pytest.mark.parametrize("kind", LOSS_KINDS)
@pytest.mark.parametrize("clip", [None, 0.0])
def test_empty_batch_gives_zero_loss_and_zero_gradient(kind, clip):
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 3)
    distances = S_SUP if kind == "expected_distance" else None
    crit = NoiseAwareLoss(loss=kind, distances=distances, clip=clip)
    loss = crit(net(torch.zeros(0, 4)), torch.zeros(0, 3))
    assert loss.shape == () and loss.item() == 0.0
    loss.backward()
    for p in net.parameters():
        assert torch.equal(p.grad, torch.zeros_like(p))
    x = torch.zeros(0, 3)
    for reduction, shape in (("sum", ()), ("none", (0,))):
        out = noise_aware_loss(
            x, x, loss=kind, distances=distances, reduction=reduction, clip=clip
        )
        assert out.shape == shape and not torch.isnan(out).any()
    # a non-empty batch still takes the mean
    x1 = torch.ones(2, 3)
    w1 = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    rows = NoiseAwareLoss(loss=kind, distances=distances, reduction="none")(x1, w1)
    if clip is not None:
        rows = rows.clamp(min=clip)
    torch.testing.assert_close(crit(x1, w1), rows.mean())


def test_array_weights_are_taken_as_ranknet_loss_takes_them(rng):
    logits = torch.as_tensor(rng.normal(size=(6, 3)), dtype=torch.float32)
    W = rng.normal(size=(6, 3))  # float64 numpy, like a slice of Q^-1
    expected = noise_aware_loss(logits, torch.as_tensor(W))
    for weights in (W, W.tolist()):
        out = noise_aware_loss(logits, weights)
        assert out.dtype == torch.float32
        torch.testing.assert_close(out, expected, rtol=0, atol=0)
    torch.testing.assert_close(NoiseAwareLoss()(logits, W), expected, rtol=0, atol=0)
    with pytest.raises(TypeError, match="weights must be a Tensor or an array-like"):
        noise_aware_loss(logits, [["a", "b", "c"]] * 6)
    with pytest.raises(ValueError, match=r"got input \(6, 3\) and weights \(6, 2\)"):
        noise_aware_loss(logits, W[:, :2])


@pytest.mark.parametrize(
    "bad, match",
    [
        (torch.zeros(2, 3, dtype=torch.int64), "floating-point Tensor.*int64"),
        (torch.zeros(2, 3, dtype=torch.bool), "floating-point Tensor.*bool"),
        (np.zeros((2, 3)), "floating-point Tensor.*got ndarray"),
    ],
)
def test_input_must_be_a_float_tensor(bad, match):
    for kind in LOSS_KINDS:
        distances = S_SUP if kind == "expected_distance" else None
        with pytest.raises(ValueError, match=match):
            noise_aware_loss(bad, torch.zeros(2, 3), loss=kind, distances=distances)


def test_negative_distances_are_refused():
    D = S_SUP.copy()
    D[0, 1] = -1.0
    with pytest.raises(ValueError, match=r"never negative; distances\[0, 1\] = -1.0"):
        NoiseAwareLoss(loss="expected_distance", distances=D)
    with pytest.raises(ValueError, match="never negative"):
        noise_aware_loss(
            torch.zeros(1, 3),
            torch.zeros(1, 3),
            loss="expected_distance",
            distances=torch.as_tensor(D),
        )
