# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Ranking lists of 20: top-k labeling functions and `RankingLabelModel`
#
# The first tutorial ranked groups of 4 patients, a space small enough to enumerate
# (24 orderings). Here every example is a **list of 20 diabetes patients** to be
# ordered by disease progression one year after baseline: 20! orderings, which no
# model can enumerate. `RankingLabelModel` works on item pairs instead (190 per
# list), so lists of tens to hundreds of items work the same way.
#
# The labeling functions are what a clinician might write without labels: order
# the patients by one baseline measure. Three of them only name their **top 10**
# (the rest unordered), one lists only the patients above a blood-sugar threshold
# (a **partial list**). We then
#
# 1. apply them with `RankingPandasApplier` and look at them with `RankingLFAnalysis`;
# 2. fit the label model without labels and compare it, on lists of **held-out
#    patients**, with the rank-fusion rules search engines use (Borda, reciprocal
#    rank fusion, Copeland);
# 3. read its warnings: some LFs share a source, and saying which ones is what
#    puts the model ahead of the fusion rules;
# 4. give it 100 labeled lists, and train a RankNet end model on its pseudolabels
#    (Q^-1 pair weights or the posterior as soft targets);
# 5. see the safeguard for a case agreements cannot resolve: a truth that is a
#    consensus of what the LFs read.

# %%
import os
import tempfile
import textwrap
import warnings
from pathlib import Path

import matplotlib

matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from sklearn.datasets import load_breast_cancer, load_diabetes

import snorkel_structured as ss
from snorkel_structured.datasets import split_groups
from snorkel_structured.rankings import fusion, kendall_tau_distance, pairwise_votes
from snorkel_structured.torch import RankNetLoss, pair_weights_tensor

OUT = Path(os.environ.get("TUTORIAL_OUT") or tempfile.mkdtemp(prefix="ss_tutorial_"))
OUT.mkdir(parents=True, exist_ok=True)
N = 20  # patients per list


def fit_and_show(model, *args, **kwargs):
    """Fit, printing the warnings the model gives (they say what to check)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(*args, **kwargs)
    for w in caught:
        print(textwrap.fill(f"{type(w.message).__name__}: {w.message}", 88), "\n")
    return model


# %% [markdown]
# ## Data: lists of 20 patients, split by patient
#
# scikit-learn's bundled diabetes table has 442 real patients (no download). We split
# the *patients* 70/30 first, then draw 1,500 training lists and 500 test lists
# within each pool, so no test patient is ever seen in training. Each row of the
# DataFrame holds the 20 patients' measures as arrays; the truth orders them by
# progression, which no LF reads.

# %%
patients = load_diabetes(as_frame=True, scaled=False).frame
train_groups, test_groups = split_groups(
    len(patients), seed=0, n_train=1500, n_test=500, n_items=N
)
MEASURES = ["age", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]


def lists_frame(groups):
    return pd.DataFrame({c: list(patients[c].to_numpy()[groups]) for c in MEASURES})


def truth(groups):
    progression = patients["target"].to_numpy()[groups]
    return np.argsort(-progression, axis=1, kind="stable")  # item ids, best first


train_df, test_df = lists_frame(train_groups), lists_frame(test_groups)
Y_train, Y_test = truth(train_groups), truth(test_groups)
train_df.head(2)

# %% [markdown]
# ## Labeling functions return lists of item ids, best first
#
# A ranking LF returns the row's item ids (0-19) in order, best first; a shorter
# list is a top-k vote (the pairs among unlisted items are abstains), `None` abstains.
# Blood sugar lists only the patients at or above the training patients' 60th
# percentile.

# %%
GLUCOSE_CUT = np.quantile(patients["s6"].to_numpy()[np.unique(train_groups)], 0.6)


def by_value(values, top_k=None):
    """Item ids by decreasing value (ties by id); a top-k list keeps the first k."""
    order = np.argsort(-np.asarray(values, dtype=float), kind="stable")
    return order if top_k is None else order[:top_k]


@ss.ranking_labeling_function(n_items=N)
def by_bmi_top10(row):
    return by_value(row.bmi, top_k=10)


@ss.ranking_labeling_function(n_items=N)
def by_triglycerides_top10(row):
    return by_value(row.s5, top_k=10)


@ss.ranking_labeling_function(n_items=N)
def by_total_cholesterol_top10(row):
    return by_value(row.s1, top_k=10)


@ss.ranking_labeling_function(n_items=N)
def by_blood_pressure(row):
    return by_value(row.bp)


@ss.ranking_labeling_function(n_items=N)
def by_chol_hdl_ratio(row):
    return by_value(row.s4)


@ss.ranking_labeling_function(n_items=N)
def by_low_hdl(row):
    return by_value(-row.s3)


@ss.ranking_labeling_function(n_items=N)
def by_high_glucose(row):
    above = np.flatnonzero(row.s6 >= GLUCOSE_CUT)
    return above[by_value(row.s6[above])] if above.size else None


@ss.ranking_labeling_function(n_items=N)
def by_age(row):
    return by_value(row.age)


@ss.ranking_labeling_function(n_items=N)
def by_ldl(row):
    return by_value(row.s2)


lfs = [
    by_bmi_top10,
    by_triglycerides_top10,
    by_total_cholesterol_top10,
    by_blood_pressure,
    by_chol_hdl_ratio,
    by_low_hdl,
    by_high_glucose,
    by_age,
    by_ldl,
]
applier = ss.RankingPandasApplier(lfs)  # ss.RankingDaskApplier for Dask DataFrames
V_train, V_test = applier.apply(train_df), applier.apply(test_df)
print(V_train.shape, "(lists, LFs, items); a row of LF 0:", V_train[0, 0])

# %% [markdown]
# `RankingLFAnalysis` counts in item pairs: how many pairs each LF orders, how often
# it overlaps and conflicts with the others. With the truth of a few labeled lists
# it adds each LF's pair accuracy; here we pass the first 100 training lists, as a
# user who labeled 100 lists would.

# %%
analysis = ss.RankingLFAnalysis(V_train, lfs)
analysis.lf_summary()

# %%
analysis_dev = ss.RankingLFAnalysis(V_train[:100], lfs)
analysis_dev.lf_summary(Y_train[:100])[["Pair coverage", "Pair accuracy"]].round(3)

# %% [markdown]
# ## The label model, without labels
#
# `RankingLabelModel` learns each LF's weight on a pair, growing with the pair's gap
# in the LF's list (a list that sorts by a noisy measure orders far-apart patients
# more reliably than neighbours), from how often the LFs agree. Its prediction is
# the weighted Kemeny ranking of each list.

# %%
space = ss.Rankings(N)
lm = fit_and_show(ss.RankingLabelModel(space, seed=0), V_train)
pd.DataFrame(
    {
        "theta (weight at gap 0)": lm.theta_,
        "gap slope": lm.gap_slope_,
        "share of its source": lm.source_share_,
    },
    index=[lf.name for lf in lfs],
).round(2)

# %% [markdown]
# On the held-out lists, the fraction of patient pairs each method orders wrongly
# (normalized Kendall tau distance; 0.5 is a random ordering):


# %%
def error(orderings):
    return float(kendall_tau_distance(orderings, Y_test).mean())


results = {
    "label model": error(lm.predict(V_test)),
    "Borda": error(fusion.borda(V_test)),
    "reciprocal rank fusion": error(fusion.reciprocal_rank_fusion(V_test)),
    "Copeland": error(fusion.copeland(V_test)),
}
pd.Series(results, name="Kendall error on held-out lists").round(4)

# %% [markdown]
# ## Reading the warnings: LFs that share a source
#
# The model is behind the fusion rules here, and its warnings say why it may be.
# It found that total cholesterol (LF 2) and LDL (LF 8) agree far more than their
# accuracies explain, and it counts them as one source. It also found that the
# cholesterol/HDL ratio (LF 4) agrees with low HDL (LF 5) and with LDL (LF 8) more
# than *any* accuracy allows: a perfect LF could not agree with both more than they
# agree with each other. Its weights read that excess as accuracy (the ratio's gap
# slope is several times the others').
#
# `pair_agreement` shows it: the ratio agrees with low HDL at about 0.6 and with LDL
# at about 0.5, where low HDL and LDL agree at under 0.2 (2 x the fraction of pairs
# ordered alike - 1; 0 is chance).

# %%
analysis.pair_agreement().round(2)

# %% [markdown]
# The votes cannot say where the excess comes from, but we can: the ratio **is**
# total cholesterol divided by HDL, so it reads the sources of LFs 2 and 5, and LDL
# is part of total cholesterol. Declaring those pairs makes the four LFs one source
# (each keeps a share of its weight, by how much their errors correlate). (The
# benchmark's version of this task, `ss.datasets.load_diabetes_progression_lists`,
# stops each list before its first tie; the ratio, rounded to a few values, then
# lists 2-6 patients and cannot dominate, and the model is ahead without help.)

# %%
shared = [(2, 8), (2, 4), (4, 5), (4, 8)]  # pairs of LF indices that share a source
lm_shared = fit_and_show(
    ss.RankingLabelModel(space, dependencies=shared, seed=0), V_train
)
results["label model, shared sources declared"] = error(lm_shared.predict(V_test))
pd.Series(results, name="Kendall error on held-out lists").round(4)

# %% [markdown]
# ## 100 labeled lists
#
# With the truth of a few lists, `fit(V, V_dev=..., Y_dev=...)` chooses, by the
# Kendall distance on those lists, among its own weights, weights fitted on the
# labeled lists (cross-validated), equal weights, the Borda count and each LF alone.
# `dev_scores_` shows why.

# %%
lm_dev = fit_and_show(
    ss.RankingLabelModel(space, dependencies=shared, seed=0),
    V_train,
    V_dev=V_train[:100],
    Y_dev=Y_train[:100],
)
results["label model + 100 labeled lists"] = error(lm_dev.predict(V_test))
print("chosen:", lm_dev.choice_)
lm_dev.dev_scores_.round(4)

# %% [markdown]
# ## An end model from the pseudolabels
#
# The label model orders lists the LFs vote on; an end model scores any patient from
# the measures. `loss_weights` turns the pseudolabels into a DataFrame with one line
# per (list, pair): the pseudolabel, the posterior `p_before` = P(i before j), and
# the Q^-1 weights of a binary task whose labels are right with probability q (here
# measured on the labeled lists). `RankNetLoss` takes either the Q^-1 weights or the
# posterior as soft targets. We train the same linear scorer both ways, and on the
# true orderings of the training lists, which no weak-supervision user has.

# %%
mean, sd = train_df.explode(MEASURES).astype(float).agg(["mean", "std"]).to_numpy()


def features(df):
    X = np.stack([np.stack(df[c].to_numpy()) for c in MEASURES], axis=-1)
    return torch.tensor((X - mean) / sd, dtype=torch.float32)  # (lists, 20, 9)


def train_scorer(targets, weights=None, soft=None, seed=0):
    torch.manual_seed(seed)
    scorer = torch.nn.Linear(len(MEASURES), 1)  # a score per patient
    optimizer = torch.optim.Adam(scorer.parameters(), lr=0.05)
    loss_fn, X = RankNetLoss(clip=0.0), features(train_df)
    for _ in range(150):
        optimizer.zero_grad()
        loss = loss_fn(scorer(X).squeeze(-1), targets, weights, soft=soft)
        loss.backward()
        optimizer.step()
    return scorer


def scorer_error(scorer):
    with torch.no_grad():
        scores = scorer(features(test_df)).squeeze(-1).numpy()
    return error(np.argsort(-scores, axis=1, kind="stable"))


frame = lm_dev.loss_weights(V_train)
print(f"q = {lm_dev.dev_pair_accuracy_:.3f}")
frame.head(3)

# %%
pairs = pair_weights_tensor(frame, n_items=N)
# +1 where item i comes before item j in the truth, pairs i < j (as loss_weights)
true_pairs = torch.tensor(
    pairwise_votes(Y_train[:, None, :])[:, 0], dtype=torch.float32
)
results["end model, Q^-1 weights"] = scorer_error(
    train_scorer(pairs.targets, pairs.weights)
)
results["end model, posterior as soft targets"] = scorer_error(
    train_scorer(pairs.targets, soft=pairs.p_before)
)
results["end model on true orderings"] = scorer_error(train_scorer(true_pairs))
table = pd.Series(results, name="Kendall error on held-out lists")
table.round(4)

# %% [markdown]
# Here the soft targets do better than the Q^-1 weights. The correction is unbiased
# when every pair's pseudolabel is right with the same probability q; the label
# model's errors are not like that: they fall on pairs of patients whose progression
# is close, where the posterior is near 1/2 and says so. The soft targets carry that
# pair by pair.

# %%
fig, ax = plt.subplots(figsize=(7, 3.2))
colors = [
    "#dd8452"  # an oracle: trained on the truth
    if "true" in k
    else "#4c72b0"
    if "model" in k
    else "#999999"  # unweighted fusion rules
    for k in table.index
]
ax.barh(table.index[::-1], table.to_numpy()[::-1], color=colors[::-1])
ax.set_xlim(0.2, 0.4)
ax.set_xlabel("fraction of patient pairs ordered wrongly (held-out lists)")
ax.set_title("Lists of 20 diabetes patients, ordered by progression")
fig.tight_layout()
fig.savefig(OUT / "ranking_lists_methods.png", dpi=120)
plt.show()

# %% [markdown]
# ## When agreements cannot tell: a consensus truth
#
# The label model reads agreement as accuracy: LFs independent given the truth agree
# in proportion to their accuracies. When the truth is itself a **consensus** of what
# the LFs read, that reading fails. Here lists of 20 breast tumours (scikit-learn's
# 569) are ordered by the sum of the z-scores of five "worst" measurements, and each
# LF orders by one of them. Three of the five share a shape signal, and the model
# takes their agreement for accuracy. It cannot know this from the votes, but it
# can see that one LF agrees with two others more than any accuracy allows, and
# says so.

# %%
tumours = load_breast_cancer(as_frame=True).frame
COLUMNS = [
    "worst radius",
    "worst texture",
    "worst smoothness",
    "worst symmetry",
    "worst fractal dimension",
]
z = (tumours[COLUMNS] - tumours[COLUMNS].mean()) / tumours[COLUMNS].std()
consensus = z.sum(axis=1).to_numpy()
t_train, t_test = split_groups(
    len(tumours), seed=0, n_train=1500, n_test=500, n_items=N
)


def tumour_votes(groups):
    """Each LF orders by one column; "worst texture" lists its top 10, "worst
    symmetry" its top 5 (padded with -1)."""
    top_k = {"worst texture": 10, "worst symmetry": 5}
    V = np.full((len(groups), len(COLUMNS), N), -1)
    for a, column in enumerate(COLUMNS):
        k = top_k.get(column, N)
        values = tumours[column].to_numpy()[groups]
        V[:, a, :k] = np.argsort(-values, axis=1, kind="stable")[:, :k]
    return V


TV_train, TV_test = tumour_votes(t_train), tumour_votes(t_test)
TY_train = np.argsort(-consensus[t_train], axis=1, kind="stable")
TY_test = np.argsort(-consensus[t_test], axis=1, kind="stable")
t_lm = fit_and_show(ss.RankingLabelModel(space, seed=0), TV_train)
t_dev = fit_and_show(
    ss.RankingLabelModel(space, seed=0),
    TV_train,
    V_dev=TV_train[:100],
    Y_dev=TY_train[:100],
)
pd.Series(
    {
        "label model": kendall_tau_distance(t_lm.predict(TV_test), TY_test).mean(),
        "Borda": kendall_tau_distance(fusion.borda(TV_test), TY_test).mean(),
        f"label model + 100 labeled lists ({t_dev.choice_})": kendall_tau_distance(
            t_dev.predict(TV_test), TY_test
        ).mean(),
    },
    name="Kendall error on held-out lists",
).round(4)

# %% [markdown]
# The warning asked for labeled lists, and 100 of them were enough for the model to
# choose the Borda count, the right rule for a consensus. On the diabetes lists,
# where the truth is not a consensus of the measures, as many labeled lists chose
# weights that beat Borda. Agreements alone cannot tell these two cases apart; a
# hundred labeled lists, or what you know about your LFs' sources, can.
