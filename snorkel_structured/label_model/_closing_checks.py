"""The closing checks of StructuredLabelModel's fit (a mixin): warnings when the
votes carry no evidence of the LFs' accuracies (no pair agrees beyond chance) or
when the fitted model gives nearly every row one label that the votes do not name.

Above the EM choices' sample size both read a random sample of the rows first and
all rows only near a threshold.
"""

from __future__ import annotations

import numpy as np

from snorkel_structured import _warnings
from snorkel_structured._validation import ABSTAIN
from snorkel_structured.estimators._agreement import excess_agreement_z
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.estimators.em import CHOICE_ROWS, chooses_on_a_sample
from snorkel_structured.exceptions import IdentifiabilityWarning

__all__ = ["ONE_ANSWER_MIN_ROWS", "ONE_ANSWER_SHARE", "ClosingChecks"]

# The fit's closing checks (chance agreement, one answer) first read a random
# CHOICE_ROWS of the rows when there are more rows and patterns than the EM choices
# read whole; only a sample that lands within this margin of a threshold (shares of
# rows or votes, +-0.005 at one standard error on 10,000 rows) is checked on all rows.
_SAMPLE_MARGIN = 0.05
# fit warns when one label is the MAP of at least this share of the voted rows (of
# at least ONE_ANSWER_MIN_ROWS) while under half of the votes name it.
ONE_ANSWER_SHARE = 0.9
ONE_ANSWER_MIN_ROWS = 50


def _warning_sample(stats: VoteStats) -> VoteStats:
    """A random CHOICE_ROWS of the rows of large ``stats`` (seeded), else ``stats``."""
    if not chooses_on_a_sample(stats):
        return stats
    return stats.thinned(CHOICE_ROWS / stats.n_samples, np.random.default_rng(11))


class ClosingChecks:
    """The fit's closing warnings of :class:`~snorkel_structured.StructuredLabelModel`
    (they read its fitted ``space``, ``support_`` and posterior)."""

    def _closing_checks(self, stats: VoteStats) -> None:
        sample = _warning_sample(stats)
        self._warn_if_chance_agreement(stats, sample)
        self._warn_if_one_answer(stats, sample)

    def _warn_if_chance_agreement(self, stats: VoteStats, sample: VoteStats) -> None:
        """Warn when no pair of LFs agrees more than independent votes would.

        ``sample``: ``stats`` or a random sample of its rows, read first."""

        def largest_excess(st: VoteStats) -> tuple[float, float] | None:
            return excess_agreement_z(
                st.patterns,
                st.counts,
                self.space.squared_distance_rows,
                len(self.space),
                stop_when_passed=True,  # the warning needs only whether one passes
            )

        found = largest_excess(sample)
        if sample is not stats and (found is None or found[0] < found[1]):
            # a sample's excess in standard errors is about sqrt(sample / all) of
            # the whole data's: one that passes on the sample passes on all rows
            found = largest_excess(stats)
        if found is not None and found[0] < found[1]:
            _warnings.warn(
                "No two LFs agree more than independent votes with the same "
                f"frequencies would (largest excess agreement {found[0]:.1f} standard "
                f"errors, {found[1]:.1f} needed): the votes cannot tell how accurate "
                "the LFs are, so their weights rest on no evidence. If the LFs should "
                "copy the truth with noise, check them on a few rows; label a few rows "
                "(L_dev, Y_dev) to let them choose.",
                IdentifiabilityWarning,
                stacklevel=4,  # fit or fit_stats, as before this mixin
            )

    def _one_answer(self, stats: VoteStats) -> tuple[float, int, float] | None:
        """The share of voted rows given the most predicted label, that label, and
        the share of votes that name it; None below ONE_ANSWER_MIN_ROWS voted rows."""
        P, c = np.asarray(stats.patterns), np.asarray(stats.counts, dtype=np.float64)
        voted = (P != ABSTAIN).any(axis=1)
        if c[voted].sum() < ONE_ANSWER_MIN_ROWS:
            return None
        logp, inverse = self._posterior.log_proba(P[voted])
        mode = np.bincount(
            np.argmax(logp, axis=1)[inverse],
            weights=c[voted],
            minlength=self.support_.size,
        )
        share = mode.max() / c[voted].sum()
        label = int(self.support_[int(np.argmax(mode))])
        votes_for = float((c[voted, None] * (P[voted] == label)).sum())
        vote_share = votes_for / float((c[voted, None] * (P[voted] != ABSTAIN)).sum())
        return float(share), label, vote_share

    def _warn_if_one_answer(self, stats: VoteStats, sample: VoteStats) -> None:
        """Warn when the fitted model gives one label to nearly every voted row
        although the LFs' votes do not agree on it (read on ``sample`` first)."""
        found = self._one_answer(sample)
        if sample is not stats and (
            found is not None
            and found[0] >= ONE_ANSWER_SHARE - _SAMPLE_MARGIN
            and found[2] < 0.5 + _SAMPLE_MARGIN
        ):
            found = self._one_answer(stats)  # near the thresholds: on all rows
        if found is None:
            return
        share, label, vote_share = found
        if share >= ONE_ANSWER_SHARE and vote_share < 0.5:
            _warnings.warn(
                f"The label model predicts label {label} for {share:.0%} of the "
                f"voted rows, although only {vote_share:.0%} of the votes name it: "
                "the LFs' agreements did not identify their accuracies (noise-level "
                "LFs, or a prior that swamps them). Check the LFs on a few rows, try "
                "prior_support='all' or shrinkage=1, or label a few rows (L_dev, Y_dev).",
                IdentifiabilityWarning,
                stacklevel=4,  # fit or fit_stats, as before this mixin
            )
