"""Count the library calls one run of the fuzz suite makes (not collected as a test).

Run ``python -m tests.fuzz.count_api_calls`` from the repository root. It runs the
suite under a profiler hook that counts every call from the suite's own files
(``tests/fuzz/``) into ``snorkel_structured``: public functions, methods and
constructors the properties call (internal calls of the library are not counted),
and prints them by name, with the total.
"""

from __future__ import annotations

import collections
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "snorkel_structured")


def main() -> int:
    import pytest

    counts: collections.Counter[str] = collections.Counter()

    def hook(frame, event, arg):  # noqa: ARG001 - sys.setprofile's signature
        if event != "call":
            return
        code = frame.f_code
        caller = frame.f_back
        if (
            caller is not None
            and code.co_filename.startswith(_PACKAGE)
            and caller.f_code.co_filename.startswith(_HERE)
        ):
            counts[code.co_qualname] += 1

    sys.setprofile(hook)
    try:
        status = pytest.main(["-q", "-p", "no:cacheprovider", _HERE])
    finally:
        sys.setprofile(None)
    width = max(map(len, counts), default=0)
    for name, k in counts.most_common():
        print(f"{name:<{width}} {k:>7}")
    print(f"{'total calls into snorkel_structured':<{width}} {sum(counts.values()):>7}")
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
