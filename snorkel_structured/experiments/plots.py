"""Figures that redraw the paper's plots with our curves beside the paper's values.

Our curves are medians over seeds with their interquartile range (25th-75th
percentile over seeds) as a shaded band; every figure says so in a caption.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from snorkel_structured.experiments import paper


def _bands(ax: Any, df: pd.DataFrame, value: str, label: str, **style: Any) -> None:
    q = df.groupby("n")[value].quantile([0.25, 0.5, 0.75]).unstack()
    ax.plot(q.index, q[0.5], marker="o", label=label, **style)
    ax.fill_between(q.index, q[0.25], q[0.75], alpha=0.2, **style)


def _figure(n_panels: int) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    width = 4.2 * n_panels if n_panels > 1 else 7.5  # one panel: room for the legend
    fig, axes = plt.subplots(1, n_panels, figsize=(width, 3.8), squeeze=False)
    return fig, axes[0]


BAND_CAPTION = (
    "Lines: medians over seeds; shaded bands: interquartile range (25th-75th "
    "percentile) over seeds."
)


def _save(fig: Any, path: Path, notes: tuple[str, ...] = ()) -> Path:
    fig.tight_layout()
    # The caption sits under the axes; bbox_inches="tight" grows the canvas to hold
    # it and the legends placed outside the axes (nothing is cut off).
    fig.text(
        0.01,
        0.0,
        "\n".join((BAND_CAPTION, *notes)),
        ha="left",
        va="top",
        fontsize=7,
        wrap=True,
    )
    fig.savefig(path, dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def plot_ranking_recovery(df: pd.DataFrame, path: Path) -> Path:
    fig, axes = _figure(3)
    for lf, ax in zip((1, 2, 3), axes, strict=True):
        sub = df[df.lf == lf]
        for method in ("tensor", "mle", "uws", "floor"):
            part = sub[sub.method == method]
            if len(part):
                _bands(
                    ax,
                    part,
                    "abs_error",
                    f"ours: {method}"
                    if method != "floor"
                    else "floor (true labels visible)",
                )
        ns = sorted(paper.RANKING_RECOVERY_TENSOR)
        ax.plot(
            ns,
            [paper.RANKING_RECOVERY_TENSOR[n][lf - 1] for n in ns],
            "k^--",
            label="paper: tensor",
        )
        ax.axhline(
            paper.RANKING_RECOVERY_UWS[lf - 1], color="gray", ls=":", label="paper: UWS"
        )
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="n",
            ylabel="|E d^2 - estimate| (Kendall tau)",
            title=f"LF {lf}",
        )
    axes[0].legend(fontsize=7)
    return _save(fig, path)


def plot_accuracy(
    df: pd.DataFrame,
    path: Path,
    title: str,
    reference: dict[str, float],
    at_n: int | None = None,
    warnings: dict[str, str] | None = None,
) -> Path:
    """Accuracy by n per method; ``warnings`` ({method: text}) are noted in the figure."""
    warnings = warnings or {}
    fig, axes = _figure(1)
    ax = axes[0]
    for method, part in df.groupby("method"):
        mark = " (warned, see note)" if str(method) in warnings else ""
        _bands(ax, part, "accuracy", f"{method}{mark}")
    for i, (name, value) in enumerate(reference.items()):
        if at_n is None:
            ax.axhline(value, color=f"C{(i + 5) % 10}", ls=":", label=f"paper: {name}")
        else:
            ax.plot([at_n], [value], "k*", markersize=12, label=f"paper: {name}")
    ax.set(xlabel="n", ylabel="accuracy (exact ranking)", title=title)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    notes = tuple(f"Note: {m} {text}" for m, text in warnings.items())
    return _save(fig, path, notes)


def plot_hyperbolic(df: pd.DataFrame, path: Path) -> Path:
    fig, axes = _figure(1)
    ax = axes[0]
    for method, part in df.groupby("method"):
        _bands(ax, part, "abs_error", f"ours: {method}")
    ns = sorted(paper.HYPERBOLIC)
    ax.plot(
        ns,
        [paper.HYPERBOLIC[n] for n in ns],
        "k^--",
        label="paper (oracle, grid search)",
    )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="n",
        ylabel="|theta_1 - estimate|",
        title="H^5: error of LF 1's noise parameter",
    )
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    return _save(fig, path)
