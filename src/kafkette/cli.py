"""The ``kafkette`` command: brokers and the client tools under one parser.

``serve`` and ``cluster`` run brokers (``kafkette.broker.cli``); every other subcommand is a
client tool that talks to any Kafka-compatible broker (``kafkette.tools``). Each module
registers its own subparser and sets ``run`` on it. Registering imports only argparse-level
code: client libraries, rich and trio load when a subcommand runs, so ``kafkette --help`` is
instant. A command line that starts with ``serve`` or ``cluster`` does not register the
tools at all (importing them and building their ~150 options took ~30 ms of every start):
nothing of theirs can show in that command's help, usage or errors.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading

from kafkette import __version__
from kafkette.broker import cli as broker_cli
from kafkette.tools import SUBCOMMAND_MODULES

# How long a tool may take to wind down after Ctrl-C (a group member commits and leaves)
# before the process leaves anyway: the KeyboardInterrupt can be lost when it is raised
# inside a client library's callback, and the tool would then follow its topic for ever.
INTERRUPTED_EXIT_AFTER_S = 15.0

EXAMPLES = """examples:
  kafkette serve                                   # a broker on 127.0.0.1:9092
  kafkette topics create clicks --partitions 3
  kafkette topics list
  printf 'user-1:hello\\nuser-2:world\\n' | kafkette produce clicks -K:
  kafkette consume clicks --from-beginning --count 2 -f '%k %s\\n'
  kafkette groups describe my-app
  kafkette dump-log kafkette-data/clicks-0/00000000000000000000.log --print-data-log

Every tool takes -b HOST:PORT (default $KAFKETTE_BOOTSTRAP or 127.0.0.1:9092), -X key=value
for client configs, and --json for scripts. `kafkette COMMAND --help` shows more examples.
"""


BROKER_COMMANDS = ("serve", "cluster")


def build_parser(*, tools: bool = True) -> argparse.ArgumentParser:
    """The ``kafkette`` parser; ``tools=False`` registers only ``serve`` and ``cluster``."""
    parser = argparse.ArgumentParser(
        prog="kafkette",
        description="A Kafka-compatible broker, and tools that work against any Kafka.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kafkette {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    broker_cli.add_parsers(commands)
    if tools:
        for name in SUBCOMMAND_MODULES:
            importlib.import_module(f"kafkette.tools.{name}").register(commands)
        from kafkette import completion  # last: its scripts walk this whole parser

        completion.register(commands)
    return parser


def _subparser(parser: argparse.ArgumentParser, path: list[str]) -> argparse.ArgumentParser:
    """The (nested) subparser that ``path`` of command words selected, for its own usage line."""
    for word in path:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) and word in action.choices:
                parser = action.choices[word]
                break
        else:
            break
    return parser


def _interrupt_tool(signum: int, frame: object) -> None:
    """Ctrl-C in a client tool: KeyboardInterrupt now, and leave with 130 in any case once
    ``INTERRUPTED_EXIT_AFTER_S`` have passed."""
    deadline = threading.Timer(INTERRUPTED_EXIT_AFTER_S, os._exit, args=(130,))
    deadline.daemon = True
    deadline.start()
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); the exit code."""
    given = argv if argv is not None else sys.argv[1:]
    # Only when the broker command comes first: `kafkette --version serve` and the like
    # keep the whole parser.
    parser = build_parser(tools=not (given and given[0] in BROKER_COMMANDS))
    args, extras = parser.parse_known_args(argv)
    if extras:
        # argparse would blame the top-level parser; the user typed a subcommand's flags.
        words = [w for w in given if not w.startswith("-")]
        _subparser(parser, words[:3]).error(f"unrecognized arguments: {' '.join(extras)}")
    # The brokers shut down gracefully through trio's own Ctrl-C handling, which trio installs
    # only over Python's default handler; a tool gets the KeyboardInterrupt plus a deadline.
    interrupt = signal.default_int_handler if given and given[0] in BROKER_COMMANDS else (
        _interrupt_tool
    )
    signal.signal(signal.SIGINT, interrupt)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `kafkette consume t | head`: the reader left; say nothing, as cat does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
