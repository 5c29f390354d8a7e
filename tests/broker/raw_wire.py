"""Plain helpers shared by the broker tests' support modules.

``conftest.py`` and the modules it loads speak Kafka's framing on raw sockets (with
kafka-python's protocol classes, an encoder independent of ours), pick free ports and
load their sibling modules by path (pytest runs with ``--import-mode=importlib``, so no
test folder is on ``sys.path``). One copy of each lives here. A plain module, loaded by
path like the others; it imports nothing from the broker so that it stays cheap to load.
"""

from __future__ import annotations

import importlib.util
import socket
import sys
from pathlib import Path
from types import ModuleType

# One request on a fresh socket (kafka-python's encoder): bench's copy, the only one
# (tests/conftest.py puts the repository root on sys.path).
from bench.harness.raw_wire import fetch_request, raw_request, read_exactly

__all__ = ["fetch_request", "free_port", "load_beside", "raw_request", "read_exactly"]


def load_beside(file_name: str) -> ModuleType:
    """The module ``file_name`` in this folder, loaded by path as ``kafkette_<stem>``.

    One copy per process: conftest, the load modules and the benches share it
    (``sys.modules`` is looked at first), and it is registered before it runs
    because its dataclasses look their module up.
    """
    path = Path(__file__).with_name(file_name)
    spec = importlib.util.spec_from_file_location(f"kafkette_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    if spec.name in sys.modules:
        return sys.modules[spec.name]
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    """A TCP port free right now on 127.0.0.1, for a broker that restarts on the same port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
