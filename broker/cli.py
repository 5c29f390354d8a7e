"""``kafkette serve`` and ``kafkette cluster``: their arguments, Kafka-style config, signals.

``serve`` prints exactly one line ``kafkette ready on HOST:PORT`` on stdout once the
listener accepts connections (tools wait for it), logs to stderr, and shuts down gracefully
on SIGINT or SIGTERM. The ``kafkette`` command itself (``kafkette.cli``) registers these two
subcommands beside the client tools; trio and the server are imported only when one runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import logging
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import trio

    from kafkette.broker.config import BrokerConfig
    from kafkette.broker.server import Broker, Endpoint

log = logging.getLogger("kafkette")

DEFAULT_UI_LISTEN = "127.0.0.1:8080"
DEFAULT_SCHEMA_REGISTRY_LISTEN = "127.0.0.1:8081"


SERVE_EXAMPLES = """examples:
  kafkette serve                                  # 127.0.0.1:9092, data in ./kafkette-data
  kafkette serve --listen 0.0.0.0:9092 --advertised-listener myhost:9092
  kafkette serve --data-dir /tmp/k --config num.partitions=3 --config log.retention.ms=60000
  kafkette serve --config-file server.properties --log-level DEBUG
  kafkette serve --temp                           # data in a new temp dir, removed at exit
  kafkette serve --schema-registry                # + a schema registry on 127.0.0.1:8081
  kafkette serve --schema-registry-listen 0.0.0.0:8081 --config schema.compatibility.level=full
  kafkette serve --config listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093 \\
      --config ssl.keystore.type=PKCS12 --config ssl.keystore.location=broker.p12 \\
      --config ssl.keystore.password=secret
"""

CLUSTER_EXAMPLES = """examples:
  kafkette cluster                                # ZooKeeper + 3 brokers on free ports
  kafkette cluster --brokers 5 --config min.insync.replicas=2
  kafkette cluster --zookeeper 127.0.0.1:2181/dev
  kafkette cluster --schema-registry              # a schema registry on every broker
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
    serve.add_argument(
        "--listen",
        default=None,
        help="HOST:PORT of one PLAINTEXT listener (default: the config's listeners=, else"
        " 127.0.0.1:9092)",
    )
    serve.add_argument(
        "--advertised-listener",
        default=None,
        help="HOST:PORT clients are told to connect to (default: the listen address)",
    )
    where = serve.add_mutually_exclusive_group()
    where.add_argument("--data-dir", default=None, help="data directory (default ./kafkette-data)")
    where.add_argument(
        "--temp",
        action="store_true",
        help="keep the data in a new directory under the system's temp dir (kafkette-temp-*)"
        " and remove it at exit: for demos and scripts",
    )
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
    serve.add_argument(
        "--log-format",
        default="text",
        choices=["text", "json"],
        help="stderr log lines as text, or one JSON object per line (default text)",
    )
    serve.add_argument(
        "--metrics-listen",
        default=None,
        metavar="HOST:PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics (default: off)",
    )
    serve.add_argument(
        "--ui-listen",
        default=None,
        metavar="HOST:PORT",
        help="serve the web console on HOST:PORT (default: off)",
    )
    serve.add_argument(
        "--ui",
        action="store_const",
        const=DEFAULT_UI_LISTEN,
        dest="ui_default",
        help=f"serve the web console on {DEFAULT_UI_LISTEN} (--ui-listen picks another address)",
    )
    serve.add_argument(
        "--ui-allow-writes",
        action="store_true",
        help="let the console produce records (read-only without it)",
    )
    serve.add_argument(
        "--schema-registry-listen",
        default=None,
        metavar="[http(s)://]HOST:PORT",
        help="serve a Confluent-compatible schema registry on HOST:PORT (https when the"
        " scheme says so, or with none when the broker has an SSL listener; default: off)",
    )
    serve.add_argument(
        "--schema-registry",
        action="store_const",
        const=DEFAULT_SCHEMA_REGISTRY_LISTEN,
        dest="schema_registry_default",
        help=f"serve the schema registry on {DEFAULT_SCHEMA_REGISTRY_LISTEN}"
        " (--schema-registry-listen picks another address)",
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
    cluster.add_argument(
        "--brokers", type=_broker_count, default=3, help="how many brokers (default 3)"
    )
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
    cluster.add_argument(
        "--schema-registry",
        action="store_true",
        help="a schema registry on every broker, on free ports (URLs printed on stderr)",
    )


def _read_config_file(path: str) -> str:
    """``--config-file``'s text; a file that cannot be read is a usage error naming the flag."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"--config-file {path}: not UTF-8 text") from None
    except OSError as exc:
        raise ValueError(f"--config-file {path}: {exc.strerror or exc}") from None


def _broker_count(text: str) -> int:
    """``cluster --brokers``: a whole number, at least 1 (argparse's usage error, exit 2)."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"a cluster has at least 1 broker, not {count}")
    return count


def _configure_logging(level: str, log_format: str = "text") -> None:
    if log_format == "json":
        from kafkette.broker.observability.log_format import JsonFormatter

        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter())
        logging.basicConfig(level=level, handlers=[handler])
        return
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def _flag_configs(
    listen: object, advertised: object, data_dir: Path | None, schema_registry: str | None = None
) -> dict[str, str]:
    """The Kafka configs that ``serve``'s own flags stand for (reported as set at start)."""
    flags = {}
    if listen is not None:
        flags["listeners"] = f"PLAINTEXT://{listen}"
    if advertised is not None:
        flags["advertised.listeners"] = f"PLAINTEXT://{advertised}"
    if data_dir is not None:
        flags["log.dirs"] = str(data_dir)
    if schema_registry is not None:
        flags["schema.registry.listeners"] = schema_registry
    return flags


def _with_flags(config: BrokerConfig, flags: dict[str, str]) -> BrokerConfig:
    """``config`` with ``serve``'s flags: ``--schema-registry-listen`` stands for
    ``schema.registry.listeners`` (and wins over it, as ``--listen`` over ``listeners``)."""
    registry = config.schema_registry
    if "schema.registry.listeners" in flags:
        from kafkette.broker.network.http_listener import parse_listen_address

        text = flags["schema.registry.listeners"]
        try:
            parse_listen_address(text)
        except ValueError as exc:
            raise ValueError(f"--schema-registry-listen: {exc}") from None
        registry = dataclasses.replace(registry, schema_registry_listeners=text)
    return dataclasses.replace(config, flags=flags, schema_registry=registry)


TEMP_DIR_PREFIX = "kafkette-temp-"


def run_serve(args: argparse.Namespace) -> int:
    """``kafkette serve``: the exit code (0 after a clean stop, 1 start failure, 2 bad config).

    ``--temp``: the data dir is made here and removed however the broker ends short of a
    SIGKILL (a clean stop, a failed start, a bad config), so scripts leave nothing behind.
    """
    if not args.temp:
        return _run_serve(args)
    import tempfile  # here: ~3 ms of every `kafkette` start otherwise

    try:
        temp_dir = Path(tempfile.mkdtemp(prefix=TEMP_DIR_PREFIX))
    except OSError as exc:
        print(f"kafkette: --temp: cannot make a data dir: {exc}", file=sys.stderr)
        return 1
    try:
        return _run_serve(args, temp_dir)
    finally:
        _remove_temp_dir(temp_dir)


def _remove_temp_dir(temp_dir: Path) -> None:
    """Remove ``--temp``'s data dir; one line naming it when it cannot all go."""
    import shutil

    try:
        shutil.rmtree(temp_dir)
    except OSError as exc:
        print(f"kafkette: --temp: could not remove {temp_dir}: {exc}", file=sys.stderr)
    else:
        log.info("removed the temporary data dir %s", temp_dir)


def _run_serve(args: argparse.Namespace, temp_dir: Path | None = None) -> int:
    # Start time (issue 30): no cyclic GC while trio and the broker load (~3% of a start's
    # CPU went to collections over module objects that live as long as the process); they
    # then leave its reach (gc.freeze, as ``_tune_interpreter`` does once the broker is up:
    # the few cycles imports leave are kept, ~0.8 MB) and it runs again.
    gc_enabled = gc.isenabled()
    gc.disable()
    try:
        import trio

        from kafkette.broker.config import (
            ConfigError,
            load_config,
            parse_assignments,
            parse_properties,
        )
        from kafkette.broker.server import Broker, StartupError, parse_endpoint
    finally:
        gc.freeze()
        if gc_enabled:
            gc.enable()

    _configure_logging(args.log_level, args.log_format)
    if temp_dir is not None:
        log.info("--temp: data in %s, removed when the broker stops", temp_dir)
    try:
        props: dict[str, str] = {}
        if args.config_file:
            props.update(parse_properties(_read_config_file(args.config_file)))
        props.update(parse_assignments(args.config))
        data_dir = temp_dir or (Path(args.data_dir) if args.data_dir else None)
        config = load_config(props, data_dir=data_dir)
        listen = parse_endpoint(args.listen) if args.listen else None
        advertised = parse_endpoint(args.advertised_listener) if args.advertised_listener else None
        registry_listen = args.schema_registry_listen or args.schema_registry_default
        flags = _flag_configs(listen, advertised, data_dir, registry_listen)
        config = _with_flags(config, flags)
        extras = ServeExtras(
            metrics=parse_endpoint(args.metrics_listen) if args.metrics_listen else None,
            ui=_ui_endpoint(args, parse_endpoint),
            ui_allow_writes=args.ui_allow_writes,
        )
        # Listeners and their TLS material (keystores read now: a bad one is a config error).
        broker = Broker(config, listen, advertised)
    except (ConfigError, ValueError, OSError) as exc:
        print(f"kafkette: {exc}", file=sys.stderr)
        return 2
    failures: list[BaseException] = []
    interrupted = False
    try:
        trio.run(_serve, broker, extras)
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


@dataclass(frozen=True)
class ServeExtras:
    """What ``serve`` runs beside the broker: the metrics endpoint and the web console."""

    metrics: Endpoint | None = None
    ui: Endpoint | None = None
    ui_allow_writes: bool = False


def _ui_endpoint(args: argparse.Namespace, parse: Callable[[str], Endpoint]) -> Endpoint | None:
    text = args.ui_listen or args.ui_default
    return parse(text) if text else None


async def _serve(broker: Broker, extras: ServeExtras = ServeExtras()) -> None:
    import trio

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(broker.run)
            # The HTTP servers stop before the broker does (they read its state).
            async with trio.open_nursery() as beside:
                await _start_extras(beside, broker, extras)
                print(f"kafkette ready on {broker.advertised}", flush=True)
                async for signum in signals:
                    log.info("received %s: shutting down", signal.Signals(signum).name)
                    break
                beside.cancel_scope.cancel()
            broker.request_stop()


async def _start_extras(nursery: trio.Nursery, broker: Broker, extras: ServeExtras) -> None:
    """Start the metrics endpoint and the console (imported only when asked for); both
    read the broker through one read-only ``BrokerStateView``."""
    if extras.metrics is None and extras.ui is None:
        return
    from kafkette.broker.state_view import BrokerStateView

    view = BrokerStateView(broker)
    broker.count_records_out = True
    if extras.metrics is not None:
        from kafkette.broker.observability.metrics_http import serve_metrics

        await nursery.start(serve_metrics, broker, view, extras.metrics)
    if extras.ui is not None:
        from kafkette.console.server import serve_console

        await nursery.start(
            partial(
                serve_console,
                view,
                extras.ui,
                allow_writes=extras.ui_allow_writes,
                bootstrap=_console_bootstrap(broker),
            )
        )


def _console_bootstrap(broker: Broker) -> str:
    """Where the console's producer connects: a PLAINTEXT-protocol listener (it has no
    TLS or SASL settings of its own), else the first listener."""
    for spec in broker.listener_plan.listeners:
        if spec.security_protocol == "PLAINTEXT":
            return str(broker.endpoint_for(spec.name))
    return str(broker.advertised)


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
            schema_registry=args.schema_registry,
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
