"""Votes drawn from Dawid and Skene's model, for the tests of the estimator and of the
label model's default on classes."""

import numpy as np


def draw_votes(n, prior, tables, rng):
    """(L, y): n rows of independent LFs, tables[a, y] = P(vote v | Y = y) over
    (abstain, 0, ..., k - 1)."""
    y = rng.choice(len(prior), size=n, p=prior)
    L = np.empty((n, len(tables)), dtype=np.int64)
    for a, table in enumerate(tables):
        cum = np.cumsum(table[y], axis=1)
        L[:, a] = (rng.random(n)[:, None] > cum).sum(axis=1) - 1
    return L, y


def right_mostly_tables(m, k, rng):
    """(m, k, k + 1) tables right 60% of the time plus uneven errors and abstains."""
    t = 0.4 * rng.dirichlet(np.ones(k + 1), size=(m, k))
    t[:, np.arange(k), np.arange(k) + 1] += 0.6
    return t
