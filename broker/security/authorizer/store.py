"""ACLs kept durably in the data dir of a single node.

Kafka keeps a KRaft cluster's ACLs in its metadata log; a single kafkette node keeps
them in ``<data dir>/acls.json``, replaced whole and atomically (temporary file,
fsync, rename) on every change before the change is acknowledged, so a crash leaves
the ACLs before or after a CreateAcls/DeleteAcls, never a mix. The file is small
(one line per binding); it is read once at start.
"""

from __future__ import annotations

import json
from pathlib import Path

from kafkette.broker.security.authorizer.acl import AclBinding
from kafkette.log.checkpoint import atomic_write

ACL_FILE = "acls.json"
FORMAT_VERSION = 1


class AclFileError(ValueError):
    """``acls.json`` cannot be read: the broker refuses to start rather than run with
    fewer ACLs than were acknowledged (a missing DENY would open access)."""


class AclFileStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / ACL_FILE

    def load(self) -> list[AclBinding]:
        """Worker thread: every stored binding, none when the file does not exist."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        try:
            data = json.loads(text)
            if data.get("version") != FORMAT_VERSION:
                raise ValueError(f"unknown format version {data.get('version')!r}")
            return [AclBinding.from_json(entry) for entry in data["acls"]]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise AclFileError(f"cannot read ACLs from {self.path}: {exc}") from None

    def save(self, bindings: list[AclBinding]) -> None:
        """Worker thread: replace the file with ``bindings``, atomically and synced."""
        lines = ",\n".join(
            "  " + json.dumps(b.to_json(), separators=(",", ":")) for b in bindings
        )
        text = f'{{"version":{FORMAT_VERSION},"acls":[\n{lines}\n]}}\n'
        atomic_write(self.path, text.encode("utf-8"))
