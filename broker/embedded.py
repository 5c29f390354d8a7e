"""Run a broker inside another program: a background thread, or a trio nursery.

Tests and embedding code use this instead of a subprocess::

    with EmbeddedBroker.start(data_dir=tmp_path) as broker:
        Producer({"bootstrap.servers": broker.bootstrap})

``EmbeddedBroker`` runs its own trio loop in a daemon thread; ``stop`` asks
it to shut down gracefully and waits for the clean-shutdown marker.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import trio

from kafkette.broker.config import load_config
from kafkette.broker.server import Broker, Endpoint, StartupError

T = TypeVar("T")


class EmbeddedBroker:
    """A broker on its own thread. Thread-safe ``stop``; usable as a context manager."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._token: trio.lowlevel.TrioToken | None = None
        self._bound: Endpoint | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="kafkette-broker", daemon=True)

    @classmethod
    def start(
        cls,
        data_dir: Path | str,
        configs: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        timeout: float = 30.0,
        *,
        schema_registry: bool = False,
    ) -> EmbeddedBroker:
        """``schema_registry``: also serve the schema registry on ``host``, a free port
        (``schema_registry_url``), unless ``configs`` set ``schema.registry.listeners``."""
        props = dict(configs or {})
        if schema_registry:
            props.setdefault("schema.registry.listeners", f"http://{_url_host(host)}:0")
        config = load_config(props, data_dir=Path(data_dir))
        # A listeners= config decides the listeners; otherwise host:port is one PLAINTEXT.
        listen = None if "listeners" in config.explicit else Endpoint(host, port)
        embedded = cls(Broker(config, listen))
        embedded._thread.start()
        if not embedded._ready.wait(timeout):
            raise TimeoutError(f"broker did not start within {timeout}s")
        if embedded._error is not None:
            raise _start_failure(embedded._error)
        return embedded

    @property
    def bootstrap(self) -> str:
        assert self._bound is not None
        return f"{self.broker.advertised.host}:{self._bound.port}"

    @property
    def schema_registry_url(self) -> str | None:
        """The schema registry's URL (``http://127.0.0.1:PORT``), None when it is off."""
        return self.broker.schema_registry_url

    def on_loop(self, function: Callable[[], T]) -> T:
        """Call ``function`` on the broker's event loop and return its result: the broker's
        state (connection counts, the request memory pool) is only consistent there."""
        assert self._token is not None, "the broker is not running"
        return trio.from_thread.run_sync(function, trio_token=self._token)

    def _main(self) -> None:
        async def main() -> None:
            self._token = trio.lowlevel.current_trio_token()
            async with trio.open_nursery() as nursery:
                self._bound = await nursery.start(self.broker.run)
                self._ready.set()

        try:
            trio.run(main)
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
        finally:
            self._ready.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Graceful shutdown: flush, write the clean-shutdown marker, join the thread."""
        if self._thread.is_alive() and self._token is not None:
            try:
                trio.from_thread.run_sync(self.broker.request_stop, trio_token=self._token)
            except trio.RunFinishedError:
                pass
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"broker did not stop within {timeout}s")

    def __enter__(self) -> EmbeddedBroker:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _start_failure(error: BaseException) -> BaseException:
    """The ``StartupError`` inside the nurseries' exception groups (a locked data dir,
    a busy port...), raised as itself; anything else wrapped as a failed start."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    if isinstance(error, StartupError):
        return StartupError(str(error))
    failure = RuntimeError("broker failed to start")
    failure.__cause__ = error
    return failure


async def run_in_nursery(nursery: trio.Nursery, broker: Broker) -> Endpoint:
    """Start ``broker`` in a caller's nursery; returns its bound endpoint."""
    return await nursery.start(broker.run)
