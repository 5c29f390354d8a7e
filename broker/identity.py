"""The cluster id and node id, kept in ``meta.properties`` as Kafka does.

Clients cache the cluster id from Metadata; it must survive restarts of the
same data dir, so it is generated once (22 characters of URL-safe base64 of a
random UUID, Kafka's format) and written atomically.
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

from kafkette.log.checkpoint import atomic_write

META_FILE = "meta.properties"


def new_cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


def load_or_create_cluster_id(data_dir: Path, node_id: int) -> str:
    """The data dir's cluster id, creating ``meta.properties`` on first start."""
    path = data_dir / META_FILE
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() == "cluster.id":
                return value.strip()
    cluster_id = new_cluster_id()
    data_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(path, f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n".encode())
    return cluster_id
