"""``kafkette topics``: placeholder until its module lands (replace this file whole)."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("topics", help="(not built yet)")
    parser.set_defaults(run=lambda args: 1)
