"""Entry point for ``python -m bench`` (run from the repository root)."""

import sys

from bench.cli import main

sys.exit(main())
