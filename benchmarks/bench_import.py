"""Import time of ``snorkel_structured`` and of the command line, in fresh processes.

Each statement runs ``--repeats`` times (default 5) in a fresh interpreter; the table
gives the median wall time of the statement inside the process (interpreter start-up
excluded) and which heavy packages it left in ``sys.modules``. One further run per
statement with ``python -X importtime`` is summarized: the modules with the largest
cumulative import time (a module's own time plus its imports').

Compare two versions of the package with ``--src``: a folder holding a
``snorkel_structured`` package (e.g. ``git archive <commit> snorkel_structured | tar
-x -C /tmp/before``), put first on ``PYTHONPATH``; without it, the installed package.

    python benchmarks/bench_import.py
    python benchmarks/bench_import.py --src /tmp/before --src .
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HEAVY = ("torch", "sklearn", "snorkel", "pandas", "scipy", "matplotlib")
# Packages the -X importtime summary reports (interpreter start-up modules left out).
REPORTED = (
    "snorkel_structured",
    "snorkel",
    "torch",
    "sklearn",
    "scipy",
    "pandas",
    "numpy",
    "networkx",
    "matplotlib",
    "pyarrow",
    "dask",
    "tqdm",
    "threadpoolctl",
)
# Statements whose -X importtime is summarized.
PROFILED = ("import snorkel_structured", "ss.Permutations(4)")

# (label, statement). The CLI rows call the entry point as the console script does.
STATEMENTS = (
    ("import snorkel_structured", "import snorkel_structured"),
    (
        "ss.Permutations(4)",
        "import snorkel_structured as ss; ss.Permutations(4)",
    ),
    (
        "ss.StructuredLabelModel",
        "import snorkel_structured as ss; ss.StructuredLabelModel",
    ),
    (
        "StructuredLabelModel(Permutations(3)).fit(L)",
        "import numpy as np; import snorkel_structured as ss\n"
        "L = np.random.default_rng(0).integers(0, 6, size=(200, 3))\n"
        "ss.StructuredLabelModel(ss.Permutations(3), seed=0).fit(L)",
    ),
    (
        "snorkel-structured --help",
        "import sys; from snorkel_structured.experiments.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass",
    ),
    (
        "snorkel-structured --version",
        "import sys; from snorkel_structured.experiments.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass",
    ),
)

_CHILD = """
import io, contextlib, json, sys, time
t0 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    exec(compile({stmt!r}, "<bench>", "exec"), {{}})
seconds = time.perf_counter() - t0
heavy = [m for m in {heavy!r} if m in sys.modules]
print(json.dumps({{"seconds": seconds, "heavy": heavy}}))
"""


def _env(src: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if src is not None:
        # PathFinder runs before the editable install's finder: this copy wins.
        env["PYTHONPATH"] = os.pathsep.join(
            [str(src.resolve()), *filter(None, [env.get("PYTHONPATH")])]
        )
    env.pop("PYTHONSTARTUP", None)
    return env


def time_statement(stmt: str, src: Path | None, repeats: int) -> dict:
    """Median seconds of ``stmt`` over ``repeats`` fresh processes, and what it loaded."""
    runs = []
    for _ in range(repeats):
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD.format(stmt=stmt, heavy=HEAVY)],
            env=_env(src),
            capture_output=True,
            text=True,
            check=True,
            cwd="/",
        )
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    seconds = [r["seconds"] for r in runs]
    return {
        "median": statistics.median(seconds),
        "min": min(seconds),
        "max": max(seconds),
        "heavy": runs[-1]["heavy"],
    }


def importtime_top(stmt: str, src: Path | None, top: int) -> list[tuple[str, float]]:
    """Top-level packages by cumulative import time (``-X importtime``), in seconds."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", stmt],
        env=_env(src),
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
    )
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self_us, cum_us, name = line.split(":", 1)[1].split("|")
        rows.append((name.strip(), int(cum_us) / 1e6))
    # Keep each top-level package's largest line (usually the package itself).
    # Times overlap: a package imported by another counts in both.
    best: dict[str, tuple[str, float]] = {}
    for name, cum in rows:
        root = name.split(".")[0]
        if root not in REPORTED:
            continue
        if root not in best or cum > best[root][1]:
            best[root] = (name, cum)
    ranked = sorted(best.values(), key=lambda r: -r[1])
    return ranked[:top]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--src",
        type=Path,
        action="append",
        help="folder holding a snorkel_structured package (repeatable); "
        "default: the installed package",
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args(argv)
    sources = args.src or [None]
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    for src in sources:
        where = src.resolve() if src else "installed package"
        print(f"\n## {where}: median of {args.repeats} fresh processes\n")
        print("| statement | median s | min s | max s | heavy modules loaded |")
        print("|---|---:|---:|---:|---|")
        for label, stmt in STATEMENTS:
            r = time_statement(stmt, src, args.repeats)
            print(
                f"| `{label}` | {r['median']:.3f} | {r['min']:.3f} | {r['max']:.3f} "
                f"| {', '.join(r['heavy']) or '-'} |"
            )
        for label, stmt in STATEMENTS:
            if label not in PROFILED:
                continue
            print(
                f"\n`-X importtime` of `{label}`, top packages by cumulative time "
                "(one run; a package imported by another counts in both):\n"
            )
            for name, cum in importtime_top(stmt, src, args.top):
                print(f"- {name}: {cum:.3f} s")
    print(f"\nload average {os.getloadavg()[0]:.1f} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
