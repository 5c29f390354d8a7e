"""The cluster id and node id, kept in ``meta.properties`` as Kafka does.

Clients cache the cluster id from Metadata; it must survive restarts of the
same data dir, so it is generated once (22 characters of URL-safe base64 of a
random UUID, Kafka's format) and written atomically.
"""

from __future__ import annotations

import base64
import os
import uuid
from pathlib import Path

META_FILE = "meta.properties"


def new_cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


def write_atomically(path: Path, text: str) -> None:
    """Write temp, fsync, rename: a reader sees the old file or the new one."""
    temp = path.with_name(path.name + ".tmp")
    with open(temp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


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
    write_atomically(path, f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n")
    return cluster_id
