"""``snorkel-structured reproduce ...``: rerun the paper's experiments and redraw its figures.

Examples
--------
snorkel-structured reproduce all --quick --out results/
snorkel-structured reproduce ranking-recovery --seeds 0-9 --out results/
snorkel-structured benchmark --quick --out results/
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from snorkel_structured import __version__

if TYPE_CHECKING:  # pandas is imported by the commands, not by --help or --version
    import pandas as pd

EXPERIMENTS = (
    "ranking-recovery",
    "ranking-label-model",
    "ranking-end-model",
    "hyperbolic",
)

# (sizes, default seeds) for the full run and for --quick. QUICK_SECONDS: the wall time
# of 'reproduce all --quick' on an idle 2-core machine (36.8, 37.6 and 38.4 s on a clean
# clone; 136-162 s at load averages 2.4 to 4, when other jobs slow the kernel end
# models' eigendecompositions most); README's quick start says the same.
QUICK_SECONDS = 40
# The same for 'benchmark --quick': 128.6 s at a load average of 1.3-1.5 (13 tasks, then
# the 4 long-list tasks, which add about 30 s); 108 s for the 13 tasks alone before.
BENCHMARK_QUICK_SECONDS = 130
GRIDS = {
    "ranking-recovery": (
        ([1_000, 10_000, 100_000, 1_000_000], range(10)),
        ([1_000, 10_000, 100_000], range(3)),
    ),
    "ranking-label-model": (
        ([200, 500, 1000, 2000], range(10)),
        ([200, 1000, 2000], range(5)),
    ),
    "ranking-end-model": (
        ([200, 500, 1000, 2000], range(10)),
        ([200, 1000, 2000], range(3)),
    ),
    "hyperbolic": (
        ([100, 1_000, 10_000, 100_000, 1_000_000], range(10)),
        ([100, 1_000, 10_000, 100_000], range(3)),
    ),
}


SEED_FORMS = "a seed (3), a range (0-9) or a comma-separated list of these (0,3,5-7)"
# The largest seed: Snorkel's LabelModel (run by 'benchmark') accepts seeds up to
# 2**32 - 1 only, and failed inside the run with larger ones.
MAX_SEED = 2**32 - 1
# The most seeds one --seeds value may hold: far above any real run (the paper's grids
# use 10), and low enough that a typo such as 0-999999999999 is a usage error instead
# of a MemoryError while the range is expanded.
MAX_SEEDS = 10_000


def _seed_list(text: str) -> list[int]:
    """argparse type of ``--seeds``: one value ('3', '0-9', '0,3,5-7') as its seeds.

    Raises ``ArgumentTypeError`` (argparse turns it into a usage error naming
    ``--seeds``) for anything else, before a single run starts: a bad seed used to
    surface as a traceback from ``int()``, and an empty range as a pandas error
    after the runs. Seeds above ``MAX_SEED`` (2**32 - 1) and values holding more
    than ``MAX_SEEDS`` (10,000) seeds are refused too.
    """
    seeds: list[int] = []
    for raw in text.split(","):
        part = raw.strip()
        if not part:  # '0,' or '0,,1': a stray comma, as before
            continue
        if part.startswith("-"):
            raise argparse.ArgumentTypeError(
                f"invalid seed {part!r}: seeds are non-negative integers; write "
                f"{SEED_FORMS}."
            )
        bounds = part.split("-")
        try:
            numbers = [int(b) for b in bounds]
        except ValueError:
            numbers = []
        if not numbers or len(numbers) > 2:
            raise argparse.ArgumentTypeError(
                f"invalid seed {part!r}; write {SEED_FORMS}."
            )
        if max(numbers) > MAX_SEED:
            raise argparse.ArgumentTypeError(
                f"seed {max(numbers)} in {part!r} is too large: seeds go up to "
                f"{MAX_SEED} (2**32 - 1, the largest seed Snorkel's LabelModel "
                "accepts); write smaller seeds."
            )
        lo, hi = numbers[0], numbers[-1]
        if lo > hi:
            raise argparse.ArgumentTypeError(
                f"the range {part!r} holds no seeds; write the lower seed first "
                f"({hi}-{lo})."
            )
        if len(seeds) + (hi - lo + 1) > MAX_SEEDS:
            raise argparse.ArgumentTypeError(
                f"{text!r} holds {len(seeds) + hi - lo + 1} or more seeds; one "
                f"--seeds value may hold at most {MAX_SEEDS:,} (far more than any "
                "real run needs); write a shorter range, e.g. 0-9."
            )
        seeds.extend(range(lo, hi + 1))
    if not seeds:
        raise argparse.ArgumentTypeError(f"no seeds in {text!r}; write {SEED_FORMS}.")
    return seeds


def _parse_seeds(values: list[list[int]] | None) -> list[int] | None:
    """The seeds of all ``--seeds`` values (lists by now), in order; None if none."""
    if not values:
        return None
    return [seed for value in values for seed in value]


def _sample_size(text: str) -> int:
    """argparse type of ``--sizes``: a positive integer."""
    try:
        n = int(text)
    except ValueError:
        n = None
    if n is None or n < 1:
        raise argparse.ArgumentTypeError(
            f"invalid sample size {text!r}: sizes are positive integers, e.g. "
            "'--sizes 1000 10000'."
        )
    return n


def _output_folder(text: str) -> Path:
    """argparse type of ``--out``: a folder that exists or can be created, writable.

    Checked when the arguments are parsed, so that a typo fails at once instead of
    with a traceback after minutes of runs; nothing is created here.
    """
    out = Path(text)
    if os.path.exists(out) and not out.is_dir():
        raise argparse.ArgumentTypeError(
            f"{text!r} exists and is not a folder; give a folder to write into."
        )
    # The nearest existing folder is where the results (or the missing folders
    # leading to them) would be created: it must be a writable folder.
    # os.path.exists, not Path.exists: it returns False for a path it may not
    # inspect instead of raising PermissionError.
    existing = out.absolute()
    while not os.path.exists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(
            f"cannot create the folder {text!r}: {str(existing)!r} is not a folder."
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(
            f"cannot write into {text!r}: {str(existing)!r} is not writable; choose "
            "another --out folder."
        )
    return out


def _cannot_write(out: Path) -> str | None:
    """Create ``out`` and a scratch file in it; None if that works, else why not.

    ``_output_folder`` checks at parse time without creating anything, but it trusts
    ``os.access``, which says yes to root for any folder (even under /proc): this
    makes sure, before minutes of runs whose results could not be written.
    """
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out):
            pass
    except OSError as e:
        return (
            f"cannot write into --out {str(out)!r} ({e.strerror or e}); choose "
            "another folder."
        )
    return None


def _progress(enabled: bool, desc: str) -> Any:
    def wrap(items: Any) -> Any:
        if not enabled:
            return items
        from tqdm import tqdm

        return tqdm(list(items), desc=desc, file=sys.stderr, leave=False)

    return wrap


def _summary(df: pd.DataFrame, value: str, by: list[str]) -> pd.DataFrame:
    """Median of ``value`` over seeds: one row per ``by`` group, one column per n."""
    table = df.groupby(by)[value].median().unstack("n")
    table.columns = [f"n={n}" for n in table.columns]
    return table


def _markdown(table: pd.DataFrame, caption: str) -> str:
    """A pipe table of ``table`` (index columns first), 4 significant digits."""
    flat = table.reset_index()
    cols = [str(c) for c in flat.columns]
    n_index = table.index.nlevels
    lines = [
        "| " + " | ".join(cols) + " |",
        "|" + "|".join(["---"] * n_index + ["---:"] * (len(cols) - n_index)) + "|",
    ]
    for row in flat.itertuples(index=False):
        cells = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + f"\n\n{caption}\n"


def warning_summary(df: pd.DataFrame) -> dict[str, str]:
    """Per method, how many runs warned and the most frequent warning.

    Returns ``{method: "warned in k of m runs: <warning>"}`` for methods that warned.
    """
    if "warning" not in df:
        return {}
    runs = df.drop_duplicates(["n", "seed", "method"])
    out = {}
    for method, part in runs.groupby("method", sort=False):
        warned = part["warning"].fillna("")
        warned = warned[warned != ""]
        if len(warned):
            top = warned.value_counts().index[0]
            out[str(method)] = f"warned in {len(warned)} of {len(part)} runs: {top}"
    return out


def run_experiment(
    name: str, ns: list[int], seeds: list[int], out: Path, progress: bool = True
) -> pd.DataFrame:
    """Run one experiment, write ``<name>.csv`` and ``<name>.png`` into ``out``, return the table."""
    from snorkel_structured.experiments import paper, plots, runs

    out.mkdir(parents=True, exist_ok=True)
    bar = _progress(progress, name)
    try:
        import matplotlib  # noqa: F401
    except ImportError:  # tables and CSVs still work; figures need the plots extra
        print(
            "matplotlib is not installed: skipping figures (pip install 'snorkel-structured[plots]')."
        )
        plots = _NoPlots()
    if name == "ranking-recovery":
        df = runs.ranking_recovery(ns, seeds, bar)
        plots.plot_ranking_recovery(df, out / f"{name}.png")
        table = _summary(df, "abs_error", ["method", "lf", "n"])
        what = "|E d^2 - estimate| per LF"
    elif name == "ranking-label-model":
        df = runs.ranking_label_model(ns, seeds, bar)
        plots.plot_accuracy(
            df,
            out / f"{name}.png",
            "Label model, theta = [0, 0, 1]",
            paper.LABEL_MODEL_ACCURACY,
            warnings=warning_summary(df),
        )
        table = _summary(df, "accuracy", ["method", "n"])
        what = "exact-ranking accuracy"
    elif name == "ranking-end-model":
        df = runs.ranking_end_model(ns, seeds, bar)
        plots.plot_accuracy(
            df,
            out / f"{name}.png",
            "End models, theta = [0, 0, 1]",
            {"logistic regression on pseudolabels": paper.END_MODEL_ACCURACY_2000},
            at_n=2000,
        )
        table = _summary(df, "accuracy", ["method", "n"])
        what = "held-out exact-ranking accuracy"
    elif name == "hyperbolic":
        df = runs.hyperbolic(ns, seeds, bar)
        plots.plot_hyperbolic(df, out / f"{name}.png")
        table = _summary(df, "abs_error", ["method", "n"])
        what = "|theta_1 - estimate|"
    else:  # pragma: no cover - argparse restricts the choices
        raise ValueError(f"unknown experiment {name!r}; choose from {EXPERIMENTS}.")
    df.to_csv(out / f"{name}.csv", index=False)
    table.to_csv(out / f"{name}_medians.csv")
    caption = (
        f"{name}: median of {what} over seeds {_seed_text(seeds)}, by n "
        f"(every run in {name}.csv)."
    )
    (out / f"{name}_medians.md").write_text(_markdown(table, caption))
    return table


def _seed_text(seeds: list[int]) -> str:
    if list(seeds) == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 1:
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


class _NoPlots:
    """Stands in for the plots module when matplotlib is missing."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def _add_output_options(command: argparse.ArgumentParser) -> None:
    """``--out`` and ``--no-progress``, shared by the commands that write results."""
    command.add_argument(
        "--out",
        type=_output_folder,
        # a string, so that argparse checks the default with _output_folder too
        default="results",
        help="output folder (default: results/)",
    )
    command.add_argument(
        "--no-progress", action="store_true", help="hide progress bars"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="snorkel-structured",
        description="Weak supervision for structured labels. 'reproduce' reruns the paper's "
        "experiments, writes a CSV of every run, a PNG that redraws the paper's figure "
        "with our curves and the paper's values, and the median tables (Markdown and "
        "CSV), and prints the tables.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser(
        "reproduce",
        help="rerun the paper's experiments",
        description="Rerun one experiment or all. Full grids use seeds 0-9 (the paper's); "
        f"'all --quick' runs a reduced grid in about {QUICK_SECONDS} s on 2 cores. Writes "
        "<experiment>.csv (every run), <experiment>.png, <experiment>_medians.csv and "
        "<experiment>_medians.md into --out.",
    )
    rep.add_argument(
        "experiment", choices=(*EXPERIMENTS, "all"), help="which experiment to run"
    )
    rep.add_argument(
        "--quick", action="store_true", help="reduced grid (fewer sizes and seeds)"
    )
    rep.add_argument(
        "--seeds",
        nargs="+",
        type=_seed_list,
        metavar="S",
        help="seeds, e.g. '0 1 2', '0-9' or '0,3,5-7' (default: the grid's)",
    )
    rep.add_argument(
        "--sizes",
        nargs="+",
        type=_sample_size,
        metavar="N",
        help="override the grid's sample sizes",
    )
    _add_output_options(rep)
    bench = sub.add_parser(
        "benchmark",
        help="label models vs aggregators on real weak-supervision tasks",
        description="Score the label model (with and without 100 labeled dev rows), "
        "unweighted aggregators, UWS, the best single LF and Snorkel's LabelModel on the "
        "tasks of ss.datasets (held-out rows), and the ranking label model against rank "
        "fusion on the long-list tasks (10-30 items, top-k LFs). Writes benchmark.csv, "
        "benchmark.md, benchmark.png, list_benchmark.csv and list_benchmark.md. Full "
        "run: seeds 0-2; --quick: seed 0 on at most 2,000 training and 1,000 test rows "
        f"per task, in about {BENCHMARK_QUICK_SECONDS} s on 2 cores.",
    )
    bench.add_argument(
        "--quick", action="store_true", help="one seed, fewer rows per task"
    )
    bench.add_argument(
        "--tasks",
        nargs="+",
        metavar="TASK",
        help="task names (default: all of ss.datasets.TASKS and LIST_TASKS)",
    )
    bench.add_argument(
        "--seeds",
        nargs="+",
        type=_seed_list,
        metavar="S",
        help="seeds, e.g. '0 1 2', '0-4' or '0,3' (default: 0-2, or 0 with --quick)",
    )
    _add_output_options(bench)
    return parser


def run_benchmark_command(args: argparse.Namespace) -> int:
    """``snorkel-structured benchmark``: run, write the files, print the tables."""
    from snorkel_structured.datasets import TASKS
    from snorkel_structured.datasets.long_rankings import LIST_TASKS
    from snorkel_structured.experiments.benchmark import run_benchmark
    from snorkel_structured.experiments.list_benchmark import run_list_benchmark

    tasks = args.tasks or [*TASKS, *LIST_TASKS]
    unknown = [t for t in tasks if t not in TASKS and t not in LIST_TASKS]
    if unknown:
        print(
            f"unknown task(s) {unknown}; choose from {sorted([*TASKS, *LIST_TASKS])}.",
            file=sys.stderr,
        )
        return 2
    problem = _cannot_write(args.out)
    if problem:
        print(f"snorkel-structured benchmark: error: {problem}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    seeds = _parse_seeds(args.seeds)
    written = []
    main_tasks = [t for t in tasks if t in TASKS]
    if main_tasks:
        run_benchmark(
            tasks=main_tasks,
            quick=args.quick,
            seeds=seeds,
            out=args.out,
            progress=not args.no_progress,
        )
        print((args.out / "benchmark.md").read_text())
        written += [args.out / f"benchmark.{ext}" for ext in ("csv", "md", "png")]
    list_tasks = [t for t in tasks if t in LIST_TASKS]
    if list_tasks:
        # The list tasks are small (1,500 training lists): --quick keeps every row.
        run_list_benchmark(
            list_tasks,
            seeds=seeds or ((0,) if args.quick else (0, 1, 2)),
            out=args.out,
        )
        print("Long lists (10-30 items, top-k LFs):\n")
        print((args.out / "list_benchmark.md").read_text())
        written += [args.out / f"list_benchmark.{ext}" for ext in ("csv", "md")]
    print("wrote " + ", ".join(str(p) for p in written if p.exists()))
    print(f"\nTotal time: {time.perf_counter() - t0:.1f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "benchmark":
        return run_benchmark_command(args)
    problem = _cannot_write(args.out)
    if problem:
        print(f"snorkel-structured reproduce: error: {problem}", file=sys.stderr)
        return 2
    import pandas as pd

    names = EXPERIMENTS if args.experiment == "all" else (args.experiment,)
    seeds_arg = _parse_seeds(args.seeds)
    pd.set_option("display.width", 160)
    pd.set_option("display.float_format", lambda v: f"{v:.4g}")
    total = time.perf_counter()
    for name in names:
        full, quick = GRIDS[name]
        ns, seeds = quick if args.quick else full
        ns = args.sizes or list(ns)
        seeds = seeds_arg if seeds_arg is not None else list(seeds)
        t0 = time.perf_counter()
        try:
            table = run_experiment(
                name, ns, seeds, args.out, progress=not args.no_progress
            )
        except ValueError as e:  # e.g. --sizes too small to fit: the model's message
            print(
                f"snorkel-structured reproduce: error: {name} at sizes {ns}: {e}",
                file=sys.stderr,
            )
            return 1
        print(
            f"\n== {name} (medians over seeds {seeds[0]}..{seeds[-1]}, {time.perf_counter() - t0:.1f} s) =="
        )
        print(table.to_string())
        runs = pd.read_csv(args.out / f"{name}.csv", keep_default_na=False)
        for method, text in warning_summary(runs).items():
            print(f"warning: {method} {text}")
        written = [
            p
            for p in (
                args.out / f"{name}.csv",
                args.out / f"{name}.png",
                args.out / f"{name}_medians.csv",
                args.out / f"{name}_medians.md",
            )
            if p.exists()
        ]
        print("wrote " + ", ".join(map(str, written)))
    print(f"\nTotal time: {time.perf_counter() - total:.1f} s")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
