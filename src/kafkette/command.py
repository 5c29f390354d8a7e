"""The ``kafkette`` console script and ``python -m kafkette``.

Ctrl-C ends a command quietly with the shell's 130. While the command is still importing (a
second or more on a busy machine), a KeyboardInterrupt would print a traceback from whatever
module it hit, so until ``kafkette.cli.main`` takes over SIGINT, Ctrl-C just leaves.
"""

from __future__ import annotations

import os
import signal


def main() -> int:
    """Run the ``kafkette`` command line; its exit code."""
    signal.signal(signal.SIGINT, lambda signum, frame: os._exit(130))
    from kafkette.cli import main as run_command

    return run_command()
