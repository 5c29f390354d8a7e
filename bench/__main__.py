"""Entry point for ``python -m bench`` (run from the repository root)."""

import sys

from bench.harness.cli import main

sys.exit(main())
