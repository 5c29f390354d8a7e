"""``kafkette serve`` and ``kafkette cluster``: their arguments, Kafka-style config, signals.

``serve`` prints exactly one line ``kafkette ready on HOST:PORT`` on stdout once the
listener accepts connections (tools wait for it), logs to stderr, and shuts down gracefully
on SIGINT or SIGTERM. The ``kafkette`` command itself (``kafkette.cli``) registers these two
subcommands beside the client tools; trio and the server are imported only when one runs.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkette.broker.server import Broker

log = logging.getLogger("kafkette")


SERVE_EXAMPLES = """examples:
  kafkette serve                                  # 127.0.0.1:9092, data in ./kafkette-data
  kafkette serve --listen 0.0.0.0:9092 --advertised-listener myhost:9092
  kafkette serve --data-dir /tmp/k --config num.partitions=3 --config log.retention.ms=60000
  kafkette serve --config-file server.properties --log-level DEBUG
"""

CLUSTER_EXAMPLES = """examples:
  kafkette cluster                                # ZooKeeper + 3 brokers on free ports
  kafkette cluster --brokers 5 --config min.insync.replicas=2
  kafkette cluster --zookeeper 127.0.0.1:2181/dev
"""


def add_parsers(commands: argparse._SubParsersAction) -> None:
    """Register ``serve`` and ``cluster`` on the ``kafkette`` command's subparsers."""
    serve = commands.add_parser(
        "serve",
        help="run the broker",
        description="Run one broker (single node, no ZooKeeper unless zookeeper.connect is set).",
        epilog=SERVE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.set_defaults(run=run_serve)
    serve.add_argument("--listen", default="127.0.0.1:9092", help="HOST:PORT to listen on")
    serve.add_argument(
        "--advertised-listener",
        default=None,
        help="HOST:PORT clients are told to connect to (default: the listen address)",
    )
    serve.add_argument("--data-dir", default=None, help="data directory (default ./kafkette-data)")
    serve.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka broker config (repeatable), e.g. num.partitions=3",
    )
    serve.add_argument("--config-file", default=None, help="a server.properties file")
    serve.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="how much to log on stderr (default INFO)",
    )
    cluster = commands.add_parser(
        "cluster",
        help="run a local cluster: ZooKeeper and N brokers (for development and tests)",
        description=(
            "Start ZooKeeper (the installed one, unless --zookeeper names a server) and N "
            "brokers on free ports; print 'kafkette cluster ready on HOST:PORT,...' once all "
            "are ready; stop everything on Ctrl-C or SIGTERM."
        ),
        epilog=CLUSTER_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cluster.set_defaults(run=run_cluster)
    cluster.add_argument("--brokers", type=int, default=3, help="how many brokers (default 3)")
    cluster.add_argument(
        "--zookeeper",
        default=None,
        metavar="HOST:PORT[/CHROOT]",
        help="an existing ZooKeeper to use (default: start the installed one)",
    )
    cluster.add_argument(
        "--data-dir",
        default=None,
        help="brokers' data (DIR/broker-N) and ZooKeeper's (default ./kafkette-cluster-data)",
    )
    cluster.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka broker config for every broker (repeatable), e.g. min.insync.replicas=2",
    )
    cluster.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="the brokers' log level (their logs go to stderr, prefixed; default INFO)",
    )


def _configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def run_serve(args: argparse.Namespace) -> int:
    """``kafkette serve``: the exit code (0 after a clean stop, 1 start failure, 2 bad config)."""
    import trio

    from kafkette.broker.config import (
        ConfigError,
        load_config,
        parse_assignments,
        parse_properties,
    )
    from kafkette.broker.server import Broker, StartupError, parse_endpoint

    _configure_logging(args.log_level)
    try:
        props: dict[str, str] = {}
        if args.config_file:
            props.update(parse_properties(Path(args.config_file).read_text(encoding="utf-8")))
        props.update(parse_assignments(args.config))
        data_dir = Path(args.data_dir) if args.data_dir else None
        config = load_config(props, data_dir=data_dir)
        listen = parse_endpoint(args.listen)
        advertised = parse_endpoint(args.advertised_listener) if args.advertised_listener else None
    except (ConfigError, ValueError, OSError) as exc:
        print(f"kafkette: {exc}", file=sys.stderr)
        return 2
    broker = Broker(config, listen, advertised)
    failures: list[BaseException] = []
    interrupted = False
    try:
        trio.run(_serve, broker)
    except* StartupError as group:
        # Nurseries wrap it in exception groups; the operator gets its one line.
        failures.extend(_leaves(group, StartupError))
    except* KeyboardInterrupt:
        interrupted = True
    if failures:
        print(f"kafkette: {failures[0]}", file=sys.stderr)
        return 1
    return 130 if interrupted else 0


def _leaves(
    group: BaseExceptionGroup, kind: type[BaseException] | tuple[type[BaseException], ...]
) -> list[BaseException]:
    """The exceptions of ``kind`` inside a (nested) exception group."""
    found: list[BaseException] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            found.extend(_leaves(exc, kind))
        elif isinstance(exc, kind):
            found.append(exc)
    return found


async def _serve(broker: Broker) -> None:
    import trio

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(broker.run)
            print(f"kafkette ready on {broker.advertised}", flush=True)
            async for signum in signals:
                log.info("received %s: shutting down", signal.Signals(signum).name)
                broker.request_stop()
                break


def run_cluster(args: argparse.Namespace) -> int:
    """``kafkette cluster``: imported only here, so ``serve`` never loads the cluster code."""
    import trio

    from kafkette.broker.cluster.local_cluster import (
        DEFAULT_DATA_DIR,
        ClusterStartError,
        LocalClusterSpec,
        run_local_cluster,
    )
    from kafkette.broker.cluster.zookeeper_server import (
        ZooKeeperNotInstalled,
        ZooKeeperStartError,
    )
    from kafkette.broker.config import ConfigError, parse_assignments

    try:
        spec = LocalClusterSpec(
            brokers=args.brokers,
            data_dir=Path(args.data_dir) if args.data_dir else DEFAULT_DATA_DIR,
            zookeeper=args.zookeeper,
            configs=parse_assignments(args.config),
            log_level=args.log_level,
        )
    except (ConfigError, ValueError) as exc:
        print(f"kafkette: {exc}", file=sys.stderr)
        return 2
    _configure_logging(args.log_level)
    kinds = (ClusterStartError, ZooKeeperNotInstalled, ZooKeeperStartError)
    failures: list[BaseException] = []
    interrupted = False
    try:
        trio.run(run_local_cluster, spec)
    except* kinds as group:
        failures.extend(_leaves(group, kinds))
    except* KeyboardInterrupt:  # a Ctrl-C before the signal handlers were in place
        interrupted = True
    if failures:
        # ZooKeeperStartError carries the log tail on the lines after its first.
        print(f"kafkette: {failures[0]}", file=sys.stderr)
        return 1
    return 130 if interrupted else 0
