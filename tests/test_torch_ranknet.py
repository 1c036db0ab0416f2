"""RankNet-style pairwise losses for ranking end models (snorkel_structured.torch)."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

import snorkel_structured as ss
from snorkel_structured.rankings.estimate import pair_signs
from snorkel_structured.rankings.mallows import sample_mallows
from snorkel_structured.torch import (
    PairWeights,
    RankNetLoss,
    pair_weights_tensor,
    ranknet_loss,
)

N_ITEMS, N_FEATURES = 6, 4
THETAS = [0.3, 0.5, 0.8, 1.0]
BETA = np.array([1.0, -0.5, 0.8, 0.0])


def sp(x):
    """softplus, by hand."""
    return math.log1p(math.exp(x))


def q_weights(q):
    """[weight_pseudolabel, weight_flipped] for pseudolabels right with probability q."""
    return [q / (2 * q - 1), -(1 - q) / (2 * q - 1)]


def _synthetic(n_rows, seed):
    """Item features, true orderings (by a noisy linear utility) and Mallows LF votes."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, N_ITEMS, N_FEATURES))
    utility = X @ BETA + 0.3 * rng.normal(size=(n_rows, N_ITEMS))
    Y = np.argsort(-utility, axis=1)
    V = np.stack(
        [sample_mallows(Y, t, seed=seed * 10 + a) for a, t in enumerate(THETAS)], axis=1
    )
    return X, Y, V


@pytest.fixture(scope="module")
def fitted():
    X, Y, V = _synthetic(300, seed=0)
    lm = ss.RankingLabelModel(ss.Rankings(N_ITEMS), seed=0).fit(V)
    return X, Y, V, lm, lm.loss_weights(V)


# -- the loss, by hand -------------------------------------------------------------
SCORES = [[2.0, 0.5, 1.0], [0.0, 0.0, 3.0]]
# pairs (0, 1), (0, 2), (1, 2): row 0 gaps 1.5, 1.0, -0.5; row 1 gaps 0, -3, -3
TARGETS = [[1, -1, -1], [1, 1, -1]]
W08 = q_weights(0.8)  # [4/3, -1/3]
WEIGHTS = [[W08, W08, [0.0, 0.0]], [W08, q_weights(0.9), W08]]
SOFT = [[0.9, 0.2, 0.5], [0.5, 0.3, 0.1]]


def _by_hand(kind):
    gaps = [[1.5, 1.0, -0.5], [0.0, -3.0, -3.0]]
    rows = []
    for r in range(2):
        total = 0.0
        for p in range(3):
            s, z, (w0, w1) = gaps[r][p], TARGETS[r][p], WEIGHTS[r][p]
            if kind == "plain":
                total += sp(-z * s)
            elif kind == "corrected":
                total += w0 * sp(-z * s) + w1 * sp(z * s)
            else:  # soft, over the pairs with a nonzero weight
                pr = SOFT[r][p]
                if w0 or w1:
                    total += pr * sp(-s) + (1 - pr) * sp(s)
        rows.append(total)
    return rows


@pytest.mark.parametrize("kind", ["plain", "corrected", "soft"])
def test_three_items_by_hand(kind):
    scores = torch.tensor(SCORES, dtype=torch.float64)
    args = {
        "plain": (TARGETS,),
        "corrected": (TARGETS, WEIGHTS),
        "soft": (None, WEIGHTS),
    }[kind]
    soft = SOFT if kind == "soft" else None
    want = _by_hand(kind)
    got = ranknet_loss(scores, *args, soft=soft, reduction="none")
    assert got.shape == (2,) and got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(
        ranknet_loss(scores, *args, soft=soft).item(), np.mean(want), rtol=1e-12
    )
    np.testing.assert_allclose(
        ranknet_loss(scores, *args, soft=soft, reduction="sum").item(),
        np.sum(want),
        rtol=1e-12,
    )
    crit = RankNetLoss(reduction="none")
    np.testing.assert_allclose(crit(scores, *args, soft=soft).numpy(), want, rtol=1e-12)


def test_corrected_row_by_hand_value():
    # row 0, corrected: 4/3 sp(-1.5) - 1/3 sp(1.5) + 4/3 sp(1) - 1/3 sp(-1) + 0
    want = (4 * sp(-1.5) - sp(1.5) + 4 * sp(1.0) - sp(-1.0)) / 3
    assert want == pytest.approx(1.3480, abs=1e-4)
    got = ranknet_loss(torch.tensor(SCORES[:1]), TARGETS[:1], WEIGHTS[:1])
    assert got.item() == pytest.approx(want, rel=1e-6)


def test_zero_targets_and_zero_weights_skip_pairs():
    scores = torch.tensor([[2.0, 0.5, 1.0]], dtype=torch.float64)
    # plain: target 0 skips pair (1, 2)
    got = ranknet_loss(scores, [[1, -1, 0]]).item()
    assert got == pytest.approx(sp(-1.5) + sp(1.0), rel=1e-12)
    # all weights zero: nothing to learn, loss and gradient 0 (even for huge scores)
    big = torch.tensor([[1e6, -1e6, 0.0]], dtype=torch.float64, requires_grad=True)
    loss = ranknet_loss(big, [[1, 1, 1]], torch.zeros(1, 3, 2, dtype=torch.float64))
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(big.grad, torch.zeros_like(big))


def test_clip_clamps_rows_below():
    scores = torch.tensor([[5.0, 0.0, 0.0]])  # pairs (0,1), (0,2) gap 5, (1,2) gap 0
    w = torch.tensor([[q_weights(0.8)] * 3])
    t = torch.tensor([[1.0, 1.0, 1.0]])
    raw = ranknet_loss(scores, t, w, reduction="none")
    assert raw.item() < 0  # confident and right: the corrected loss goes negative
    assert ranknet_loss(scores, t, w, clip=0.0).item() == 0.0
    assert ranknet_loss(scores, t, w, clip=-100.0).item() == pytest.approx(raw.item())
    assert RankNetLoss(clip=0.0)(scores, t, w).item() == 0.0


# -- unbiasedness ------------------------------------------------------------------
def test_expected_corrected_loss_is_the_clean_loss(rng):
    """q * corrected(z = z*) + (1 - q) * corrected(z = -z*) == ell(z*), with gradients."""
    n_rows, n = 50, 5
    n_pairs = n * (n - 1) // 2
    scores = torch.tensor(
        rng.normal(scale=3.0, size=(n_rows, n)), dtype=torch.float64, requires_grad=True
    )
    q = rng.uniform(0.55, 0.99, size=(n_rows, n_pairs))
    w = torch.tensor(np.stack(q_weights(q), axis=-1))
    z_true = torch.tensor(rng.choice([-1.0, 1.0], size=(n_rows, n_pairs)))
    qt = torch.tensor(q)
    i, j = (torch.as_tensor(a) for a in np.triu_indices(n, 1))
    s = scores.index_select(1, i) - scores.index_select(1, j)

    # per pair (reduction over a single pair at a time is the row sum; use one pair)
    for p in range(n_pairs):
        mask = torch.zeros(n_rows, n_pairs, dtype=torch.float64)
        mask[:, p] = 1.0
        right = ranknet_loss(scores, z_true * mask, w, reduction="none")
        flipped = ranknet_loss(scores, -z_true * mask, w, reduction="none")
        expected = qt[:, p] * right + (1 - qt[:, p]) * flipped
        clean = torch.nn.functional.softplus(-z_true[:, p] * s[:, p])
        torch.testing.assert_close(expected, clean, rtol=1e-10, atol=1e-10)

    # whole rows: every pair's pseudolabel flipped independently, by enumeration over
    # the 2^n_pairs flips is too many; linearity makes the row sum exact anyway, and
    # the gradient of the expectation equals the clean gradient
    right = ranknet_loss(scores, z_true, w, reduction="none")
    g_clean = torch.autograd.grad(
        torch.nn.functional.softplus(-z_true * s).sum(), scores, retain_graph=True
    )[0]
    expected_grad = torch.zeros_like(scores)
    for p in range(n_pairs):
        mask = torch.zeros(n_rows, n_pairs, dtype=torch.float64)
        mask[:, p] = 1.0
        r = ranknet_loss(scores, z_true * mask, w, reduction="sum")
        f = ranknet_loss(scores, -z_true * mask, w, reduction="sum")
        gr = torch.autograd.grad(r, scores)[0]
        gf = torch.autograd.grad(f, scores)[0]
        expected_grad += qt[:, p : p + 1] * gr + (1 - qt[:, p : p + 1]) * gf
    torch.testing.assert_close(expected_grad, g_clean, rtol=1e-9, atol=1e-10)
    assert torch.isfinite(right).all()


def test_expected_loss_with_label_model_weights(fitted):
    """The two weights of loss_weights invert [[q, 1-q], [1-q, q]] for one q."""
    *_, W = fitted
    voted = (W["weight_pseudolabel"] != 0) | (W["weight_flipped"] != 0)
    w0 = W.loc[voted, "weight_pseudolabel"].to_numpy()
    w1 = W.loc[voted, "weight_flipped"].to_numpy()
    np.testing.assert_allclose(w0 + w1, 1.0)
    q = w0[0] / (2 * w0[0] - 1)
    assert 0.5 < q < 1
    s = torch.linspace(-6, 6, 25, dtype=torch.float64)[:, None]  # one pair per row
    scores = torch.cat([s, torch.zeros_like(s)], dim=1)
    w = torch.tensor([[[w0[0], w1[0]]]], dtype=torch.float64).expand(25, 1, 2)
    for z in (1.0, -1.0):
        zt = torch.full((25, 1), z, dtype=torch.float64)
        exp = q * ranknet_loss(scores, zt, w, reduction="none") + (
            1 - q
        ) * ranknet_loss(scores, -zt, w, reduction="none")
        torch.testing.assert_close(
            exp, torch.nn.functional.softplus(-z * s[:, 0]), rtol=1e-10, atol=1e-10
        )


# -- gradients ---------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["plain", "corrected", "soft", "clipped"])
def test_gradient_flows_and_is_right(kind, rng):
    n_rows, n = 4, 4
    scores = torch.tensor(
        rng.normal(size=(n_rows, n)), dtype=torch.float64, requires_grad=True
    )
    t = torch.tensor(rng.choice([-1.0, 1.0], size=(n_rows, 6)))
    w = torch.tensor(np.stack(q_weights(np.full((n_rows, 6), 0.75)), axis=-1))
    p = torch.tensor(rng.uniform(size=(n_rows, 6)))

    def f(x):
        if kind == "plain":
            return ranknet_loss(x, t)
        if kind == "soft":
            return ranknet_loss(x, None, soft=p)
        return ranknet_loss(x, t, w, clip=-1e3 if kind == "clipped" else None)

    assert torch.autograd.gradcheck(f, (scores,))
    loss = f(scores)
    loss.backward()
    assert torch.isfinite(scores.grad).all() and scores.grad.abs().sum() > 0
    # scores enter through differences only: each row's gradient sums to zero
    torch.testing.assert_close(
        scores.grad.sum(dim=1), torch.zeros(n_rows, dtype=torch.float64)
    )


def test_gradient_through_a_module_float32():
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 1)
    x = torch.randn(8, 5, 3)
    t = torch.ones(8, 10)
    w = torch.tensor(q_weights(0.7)).expand(8, 10, 2)
    loss = RankNetLoss()(net(x).squeeze(-1), t, w)
    loss.backward()
    assert loss.dtype == torch.float32
    assert all(torch.isfinite(p.grad).all() for p in net.parameters())
    assert net.weight.grad.abs().sum() > 0


# -- pair_weights_tensor -----------------------------------------------------------
def test_pair_weights_tensor_round_trip(fitted):
    _, Y, V, lm, W = fitted
    n_pairs = N_ITEMS * (N_ITEMS - 1) // 2
    pw = pair_weights_tensor(W)
    assert isinstance(pw, PairWeights)
    assert pw.targets.shape == (300, n_pairs) and pw.targets.dtype == torch.float32
    assert pw.weights.shape == (300, n_pairs, 2)
    assert pw.p_before.shape == (300, n_pairs)
    np.testing.assert_array_equal(pw.rows, np.arange(300))
    np.testing.assert_array_equal(
        pw.targets.numpy(), W["pseudolabel"].to_numpy().reshape(300, n_pairs)
    )
    np.testing.assert_array_equal(pw.targets.numpy(), pair_signs(lm.predict(V)))
    np.testing.assert_allclose(
        pw.weights.numpy(),
        W[["weight_pseudolabel", "weight_flipped"]].to_numpy().reshape(300, n_pairs, 2),
        rtol=1e-6,
    )
    np.testing.assert_allclose(pw.p_before.numpy(), lm.predict_proba(V), rtol=1e-6)

    # any line order, float64, explicit n_items: the same tensors
    shuffled = W.sample(frac=1.0, random_state=0)
    pw64 = pair_weights_tensor(shuffled, N_ITEMS, dtype=torch.float64)
    assert pw64.targets.dtype == torch.float64
    np.testing.assert_array_equal(pw64.targets.numpy(), pw.targets.numpy())
    np.testing.assert_allclose(pw64.weights.numpy(), pw.weights.numpy(), rtol=1e-6)
    np.testing.assert_allclose(pw64.p_before.numpy(), pw.p_before.numpy(), rtol=1e-6)

    # a subset of whole rows: rows says which
    ids = [250, 3, 17]
    sub = pair_weights_tensor(W[W["row"].isin(ids)])
    np.testing.assert_array_equal(sub.rows, [3, 17, 250])
    np.testing.assert_array_equal(sub.targets.numpy(), pw.targets.numpy()[sub.rows])

    # without p_before: None
    assert pair_weights_tensor(W.drop(columns="p_before")).p_before is None

    # the loss accepts the tensors
    scores = torch.zeros(300, N_ITEMS, requires_grad=True)
    loss = ranknet_loss(scores, pw.targets, pw.weights)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(scores.grad).all()
    # at s = 0 every voted pair costs (w0 + w1) log 2 = log 2
    n_voted = int((pw.weights != 0).any(dim=2).sum())
    assert loss.item() == pytest.approx(n_voted * math.log(2) / 300, rel=1e-5)


def test_linear_scorer_recovers_the_ordering(fitted):
    """Trained on the corrected loss of pseudolabels, a linear scorer ranks held-out
    rows far better than chance (and about as well as the label model's own rankings
    on the training rows)."""
    X, Y, V, lm, W = fitted
    pw = pair_weights_tensor(W, N_ITEMS)
    X_test, Y_test, _ = _synthetic(300, seed=1)
    i, j = np.triu_indices(N_ITEMS, 1)
    Xt = torch.tensor(X, dtype=torch.float32)
    Xh = torch.tensor(X_test, dtype=torch.float32)
    truth = pair_signs(Y_test)
    label_model_acc = lm.score(V, Y)["pair_accuracy"]
    for clip in (None, 0.0):
        torch.manual_seed(0)
        scorer = torch.nn.Linear(N_FEATURES, 1, bias=False)
        opt = torch.optim.Adam(scorer.parameters(), lr=0.05)
        crit = RankNetLoss(clip=clip)
        for _ in range(100):
            opt.zero_grad()
            crit(scorer(Xt).squeeze(-1), pw.targets, pw.weights).backward()
            opt.step()
        with torch.no_grad():
            s = scorer(Xh).squeeze(-1).numpy()
        acc = float(np.mean(np.sign(s[:, i] - s[:, j]) == truth))
        assert acc > 0.85, (clip, acc)
        assert acc > label_model_acc - 0.05, (clip, acc, label_model_acc)
        direction = scorer.weight.detach().numpy().ravel()
        cos = direction @ BETA / np.linalg.norm(direction) / np.linalg.norm(BETA)
        assert cos > 0.95, (clip, cos)


# -- validation --------------------------------------------------------------------
def _small_frame():
    """Two rows of 3 items, as loss_weights lays them out."""
    i, j = np.triu_indices(3, 1)
    return pd.DataFrame(
        {
            "row": np.repeat([0, 1], 3),
            "item_i": np.tile(i, 2),
            "item_j": np.tile(j, 2),
            "pseudolabel": np.array([1, -1, 1, 1, 1, -1], dtype=np.int8),
            "p_before": [0.8, 0.3, 0.6, 0.9, 0.7, 0.5],
            "weight_pseudolabel": [1.5] * 5 + [0.0],
            "weight_flipped": [-0.5] * 5 + [0.0],
        }
    )


def test_small_frame_layout():
    pw = pair_weights_tensor(_small_frame())
    assert pw.targets.tolist() == [[1, -1, 1], [1, 1, -1]]
    assert pw.weights[1, 2].tolist() == [0.0, 0.0]
    np.testing.assert_allclose(pw.p_before.numpy(), [[0.8, 0.3, 0.6], [0.9, 0.7, 0.5]])


@pytest.mark.parametrize(
    "make, kwargs, match",
    [
        (lambda: _small_frame().to_numpy(), {}, "must be the DataFrame"),
        (lambda: _small_frame().drop(columns="weight_flipped"), {}, "weight_flipped"),
        (lambda: _small_frame().drop(columns=["row", "item_i"]), {}, "lacks column"),
        (lambda: _small_frame().iloc[:0], {}, "no lines"),
        (lambda: _small_frame().astype({"row": float}).assign(row=0.5), {}, "integers"),
        (lambda: _small_frame().astype({"item_j": str}), {}, "integers"),
        (
            lambda: _small_frame().assign(item_i=[1, 0, 1, 0, 0, 1]),
            {},
            "item_i < item_j",
        ),
        (lambda: _small_frame(), {"n_items": 2}, r"items must be in 0\.\.1"),
        (lambda: _small_frame().assign(item_i=[-1, 0, 1, 0, 0, 1]), {}, "0..2"),
        (lambda: _small_frame().iloc[:5], {}, "row 1 holds 2 of its 3 pairs"),
        (lambda: _small_frame(), {"n_items": 4}, "row 0 holds 3 of its 6 pairs"),
        (
            lambda: pd.concat([_small_frame(), _small_frame().iloc[[1]]]),
            {},
            r"row 0 holds pair \(0, 2\) 2 times",
        ),
        (
            lambda: _small_frame().assign(pseudolabel=[1, 0, 1, 1, 1, -1]),
            {},
            r"\+1 \(i before j\)",
        ),
        (
            lambda: _small_frame().assign(weight_pseudolabel=[1.5, np.nan, 1, 1, 1, 0]),
            {},
            "finite",
        ),
        (
            lambda: _small_frame().assign(p_before=[0.8, 1.5, 0.6, 0.9, 0.7, 0.5]),
            {},
            r"in \[0, 1\]",
        ),
        (lambda: _small_frame(), {"n_items": 1}, "n_items must be an int >= 2"),
        (lambda: _small_frame(), {"n_items": 3.0}, "n_items must be an int >= 2"),
        (lambda: _small_frame(), {"n_items": True}, "n_items must be an int >= 2"),
    ],
)
def test_pair_weights_tensor_rejects(make, kwargs, match):
    with pytest.raises(ValueError, match=match):
        pair_weights_tensor(make(), **kwargs)


def test_pair_weights_tensor_rejects_a_single_item():
    frame = _small_frame().iloc[:1].assign(item_i=0, item_j=0)
    with pytest.raises(ValueError, match="no pair of items"):
        pair_weights_tensor(frame)


S3 = torch.zeros(2, 3)
T3 = torch.ones(2, 3)
W3 = torch.ones(2, 3, 2)


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        ((S3.numpy(), T3), {}, "floating-point Tensor"),
        ((torch.zeros(2, 3, dtype=torch.int64), T3), {}, "floating-point Tensor"),
        ((torch.zeros(3), T3), {}, r"\(n_rows, n_items\)"),
        ((torch.zeros(2, 1), torch.ones(2, 0)), {}, "n_items >= 2"),
        ((S3, torch.ones(2, 4)), {}, r"targets must have shape \(2, 3\)"),
        ((S3, torch.ones(3, 3)), {}, "targets must have shape"),
        ((S3, 2 * T3), {}, "targets must hold"),
        ((S3, T3 * np.nan), {}, "targets must be finite"),
        ((S3, T3, torch.ones(2, 3)), {}, r"weights must have shape \(2, 3, 2\)"),
        ((S3, T3, W3 * np.inf), {}, "weights must be finite"),
        ((S3, None), {}, "only with soft"),
        ((S3, None), {"soft": torch.full((2, 3), 1.5)}, r"\[0, 1\]"),
        ((S3, None), {"soft": torch.ones(2, 2)}, "soft must have shape"),
        ((S3, T3), {"reduction": "max"}, "reduction must be one of"),
        ((S3, T3), {"clip": float("nan")}, "clip must be None"),
        ((S3, T3), {"clip": True}, "clip must be None"),
        ((S3, T3), {"clip": "0"}, "clip must be None"),
    ],
)
def test_ranknet_loss_rejects(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ranknet_loss(*args, **kwargs)


def test_module_validates_at_construction_and_reprs():
    with pytest.raises(ValueError, match="reduction"):
        RankNetLoss(reduction="batchmean")
    with pytest.raises(ValueError, match="clip"):
        RankNetLoss(clip=float("inf"))
    assert repr(RankNetLoss(clip=0)) == "RankNetLoss(reduction='mean', clip=0.0)"
    with pytest.raises(ValueError, match="targets must have shape"):
        RankNetLoss()(S3, torch.ones(2, 4))


def test_exported():
    import snorkel_structured.torch as st

    for name in ("PairWeights", "RankNetLoss", "pair_weights_tensor", "ranknet_loss"):
        assert name in st.__all__


@pytest.mark.parametrize("kind", ["plain", "corrected", "soft"])
@pytest.mark.parametrize("clip", [None, 0.0])
def test_empty_batch_gives_zero_loss_and_zero_gradient(kind, clip):
    torch.manual_seed(0)
    net = torch.nn.Linear(N_FEATURES, 1)
    scores = net(torch.zeros(0, 3, N_FEATURES)).squeeze(-1)  # (0 rows, 3 items)
    targets = None if kind == "soft" else torch.ones(0, 3)
    weights = torch.ones(0, 3, 2) if kind == "corrected" else None
    soft = torch.full((0, 3), 0.5) if kind == "soft" else None
    loss = RankNetLoss(clip=clip)(scores, targets, weights, soft=soft)
    assert loss.shape == () and loss.item() == 0.0
    loss.backward()
    for p in net.parameters():
        assert torch.equal(p.grad, torch.zeros_like(p))
    for reduction, shape in (("sum", ()), ("none", (0,))):
        out = ranknet_loss(
            torch.zeros(0, 3), targets, weights, soft=soft, reduction=reduction
        )
        assert out.shape == shape and not torch.isnan(out).any()
    # the mean of a non-empty batch is unchanged
    torch.testing.assert_close(
        ranknet_loss(torch.tensor(SCORES), TARGETS),
        torch.tensor(_by_hand("plain")).mean().float(),
    )
