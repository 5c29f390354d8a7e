"""Kafka's entity-config znodes (``/config/<type>/<name>``), shared by every ZooKeeper store.

Kafka's ZooKeeper mode keeps an entity's settings (a user's SCRAM credentials and quotas,
a client id's quotas, a client-metrics subscription) in one node per entity, holding
``{"version":1,"config":{...}}`` with every value a string, the name sanitized by Kafka's
``Sanitizer``. Several kafkette stores write such nodes, sometimes the same node (a user's
node holds both its credentials and its quotas), so they must agree on the name, on the
document and on how a change is merged: here, once.

Only json and urllib are imported at the top (kazoo lazily), so a single-node broker can
import the stores that use this module without kazoo.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

ATTEMPTS = 10  # concurrent writers of one node: the read-modify-write is retried


def sanitize(name: str) -> str:
    """Kafka's Sanitizer: java.net.URLEncoder (which also encodes '~'), then '*' -> %2A."""
    return quote(name, safe="-._*").replace("*", "%2A").replace("~", "%7E")


def config_of(data: bytes | None) -> dict[str, str]:
    """The node's ``config`` map; ``{}`` for no node or a damaged one (which then
    configures nothing rather than stopping the broker)."""
    try:
        document = json.loads(data) if data else {}
    except ValueError:
        return {}
    config = document.get("config") if isinstance(document, dict) else None
    return {str(k): str(v) for k, v in config.items()} if isinstance(config, dict) else {}


def encode_config(config: Mapping[str, str]) -> bytes:
    """The node's document for ``config``, compact as Kafka writes it."""
    return json.dumps({"version": 1, "config": dict(config)}, separators=(",", ":")).encode()


def update_config(client: Any, path: str, changes: Mapping[str, str | None]) -> bool:
    """Apply ``changes`` (key -> value, None to remove the key) to the node at ``path``,
    creating it if absent; the node's other keys are kept. Versioned read-modify-write,
    retried while other writers change the node: False if they did on every try."""
    from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

    for _ in range(ATTEMPTS):
        try:
            data, stat = client.get(path)
        except NoNodeError:
            data, stat = None, None
        config = config_of(data)
        for key, value in changes.items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        try:
            if stat is None:
                client.create(path, encode_config(config), makepath=True)
            else:
                client.set(path, encode_config(config), version=stat.version)
            return True
        except (BadVersionError, NodeExistsError, NoNodeError):
            continue  # another writer changed it meanwhile: read again
    return False
