"""SCRAM credentials kept durably in the data dir: salt, StoredKey, ServerKey, iterations.

Never the password: AlterUserScramCredentials carries only the client's SaltedPassword,
from which the keys are derived and the SaltedPassword dropped (as Kafka's
ScramControlManager does). Each credential is written as Kafka writes it in ZooKeeper's
``/config/users/<name>`` (ScramCredentialUtils): ``salt=<b64>,stored_key=<b64>,
server_key=<b64>,iterations=<n>``, under the mechanism name, so the same text serves the
file here and a cluster's znodes.

The file (``scram-credentials.json``, mode 0600) is replaced atomically (write, fsync,
rename, fsync the directory): after a crash it holds the old set or the new, whole.
Lookups read an in-memory dict (the event loop authenticates from it); a change is
computed on the loop, written in a worker thread, then swapped in. A cluster keeps the
same texts in ZooKeeper instead (zk_scram_store.py); ``open_scram_store`` picks one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from kafkette.broker.durable_store import StoreFileError
from kafkette.broker.security.sasl import scram_formulas as sf
from kafkette.log.checkpoint import atomic_write

if TYPE_CHECKING:
    from kafkette.broker.security.sasl.zk_scram_store import ZkScramCredentialStore
    from kafkette.broker.server import Broker

FILE_NAME = "scram-credentials.json"

# user -> mechanism name -> credential
Credentials = dict[str, dict[str, sf.ScramCredential]]
# user -> mechanism name -> new credential, or None to delete it
CredentialChanges = Mapping[str, Mapping[str, sf.ScramCredential | None]]


def credential_to_text(credential: sf.ScramCredential) -> str:
    return (
        f"salt={sf.b64(credential.salt)},stored_key={sf.b64(credential.stored_key)},"
        f"server_key={sf.b64(credential.server_key)},iterations={credential.iterations}"
    )


def credential_from_text(text: str) -> sf.ScramCredential:
    fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
    try:
        return sf.ScramCredential(
            salt=sf.unb64(fields["salt"]),
            stored_key=sf.unb64(fields["stored_key"]),
            server_key=sf.unb64(fields["server_key"]),
            iterations=int(fields["iterations"]),
        )
    except (KeyError, ValueError) as exc:
        raise ValueError(f"invalid SCRAM credential {text!r}: {exc}") from None


class ScramCredentialStore:
    """One node's credentials: in memory, and in the data dir's file (mode 0600)."""

    def __init__(self, path: Path | None, credentials: Credentials | None = None) -> None:
        self.path = path  # None: in memory only (a broker without a data dir in tests)
        self._credentials: Credentials = credentials or {}
        self._listeners: list[Callable[[Credentials], None]] = []

    @classmethod
    def load(cls, data_dir: Path) -> ScramCredentialStore:
        """Read the data dir's credentials (blocking: call in a worker thread)."""
        path = data_dir / FILE_NAME
        try:
            document = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            return cls(path)
        except (OSError, ValueError) as exc:
            raise StoreFileError(f"cannot read SCRAM credentials {path}: {exc}") from None
        try:
            users = document["users"]
            credentials = {
                str(user): {
                    mechanism: credential_from_text(text)
                    for mechanism, text in entries.items()
                    if mechanism in sf.MECHANISMS
                }
                for user, entries in users.items()
            }
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise StoreFileError(f"invalid SCRAM credentials file {path}: {exc}") from None
        return cls(path, credentials)

    # The store's interface (a DurableStore; lookup, users and mechanisms_of for the
    # authenticator and the admin handlers): async, as the cluster's store reads
    # ZooKeeper (zk_scram_store.py). ------------------------------------------------

    async def lookup(self, mechanism: str, user: str) -> sf.ScramCredential | None:
        """From memory: never waits, never fails."""
        return self._credentials.get(user, {}).get(mechanism)

    async def users(self) -> list[str]:
        return sorted(user for user, entries in self._credentials.items() if entries)

    async def mechanisms_of(self, user: str) -> Mapping[str, sf.ScramCredential]:
        return self._credentials.get(user, {})

    async def read(self) -> Credentials:
        return self._credentials

    def on_change(self, listener: Callable[[Credentials], None]) -> None:
        """``listener(credentials)`` after every change this store makes."""
        self._listeners.append(listener)

    async def apply(self, changes: CredentialChanges) -> None:
        """Durable (written in a worker thread) before anyone authenticates with them."""
        updated = self._changed(changes)
        await trio.to_thread.run_sync(self.write, updated)
        self._credentials = updated
        for listener in self._listeners:
            listener(updated)

    # ---------------------------------------------------------------------------------

    def _changed(self, changes: CredentialChanges) -> Credentials:
        """The credentials after ``changes``: a new dict, the store unchanged."""
        updated = {user: dict(entries) for user, entries in self._credentials.items()}
        for user, user_changes in changes.items():
            entries = updated.setdefault(user, {})
            for mechanism, credential in user_changes.items():
                if credential is None:
                    entries.pop(mechanism, None)
                else:
                    entries[mechanism] = credential
        return {user: entries for user, entries in updated.items() if entries}

    def write(self, credentials: Credentials) -> None:
        """Make ``credentials`` durable (blocking: call in a worker thread)."""
        if self.path is None:
            return
        document = {
            "version": 1,
            "users": {
                user: {mech: credential_to_text(cred) for mech, cred in sorted(entries.items())}
                for user, entries in sorted(credentials.items())
            },
        }
        atomic_write(self.path, json.dumps(document, indent=1).encode() + b"\n", mode=0o600)


async def open_scram_store(broker: Broker) -> ScramCredentialStore | ZkScramCredentialStore:
    """The broker's credential store, chosen once: ZooKeeper's ``/config/users`` in a
    cluster, else the data dir's file (read in a worker thread; a damaged one raises
    StoreFileError)."""
    cluster = getattr(broker, "cluster", None)
    if cluster is not None:
        from kafkette.broker.security.sasl.zk_scram_store import ZkScramCredentialStore

        return ZkScramCredentialStore(cluster.session)
    return await trio.to_thread.run_sync(ScramCredentialStore.load, broker.config.data_dir)
