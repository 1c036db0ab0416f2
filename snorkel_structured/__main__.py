"""``python -m snorkel_structured``: the same as the ``snorkel-structured`` command."""

import sys

from snorkel_structured.experiments.cli import main

sys.exit(main())
