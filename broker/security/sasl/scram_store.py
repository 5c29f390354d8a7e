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
computed on the loop, written in a worker thread, then swapped in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import trio

from kafkette.broker.security.sasl import scram_formulas as sf
from kafkette.log.checkpoint import atomic_write

FILE_NAME = "scram-credentials.json"

# user -> mechanism name -> credential
Credentials = dict[str, dict[str, sf.ScramCredential]]


class CredentialFileError(ValueError):
    """The credentials file cannot be read: the broker refuses to start rather than
    silently lose its users."""


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
    def __init__(self, path: Path | None, credentials: Credentials | None = None) -> None:
        self.path = path  # None: in memory only (a broker without a data dir in tests)
        self._credentials: Credentials = credentials or {}

    @classmethod
    def load(cls, data_dir: Path) -> ScramCredentialStore:
        """Read the data dir's credentials (blocking: call in a worker thread)."""
        path = data_dir / FILE_NAME
        try:
            document = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            return cls(path)
        except (OSError, ValueError) as exc:
            raise CredentialFileError(f"cannot read SCRAM credentials {path}: {exc}") from None
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
            raise CredentialFileError(f"invalid SCRAM credentials file {path}: {exc}") from None
        return cls(path, credentials)

    # The interface the authenticator and the admin handlers use (async: the cluster's
    # store, zk_scram_store.py, reads ZooKeeper). --------------------------------------

    async def lookup(self, mechanism: str, user: str) -> sf.ScramCredential | None:
        """From memory: never waits, never fails."""
        return self._credentials.get(user, {}).get(mechanism)

    async def users(self) -> list[str]:
        return sorted(user for user, entries in self._credentials.items() if entries)

    async def mechanisms_of(self, user: str) -> Mapping[str, sf.ScramCredential]:
        return self._credentials.get(user, {})

    async def apply(
        self,
        deletions: Iterable[tuple[str, str]],
        upsertions: Iterable[tuple[str, str, sf.ScramCredential]],
    ) -> None:
        """Delete (user, mechanism) pairs and upsert (user, mechanism, credential): durable
        (written in a worker thread) before anyone authenticates with them."""
        updated = self.changed(deletions, upsertions)
        await trio.to_thread.run_sync(self.write, updated)
        self.replace(updated)

    # ---------------------------------------------------------------------------------

    def changed(
        self,
        deletions: Iterable[tuple[str, str]],
        upsertions: Iterable[tuple[str, str, sf.ScramCredential]],
    ) -> Credentials:
        """The credentials after deleting (user, mechanism) pairs and upserting
        (user, mechanism, credential): a new dict, the store unchanged."""
        updated = {user: dict(entries) for user, entries in self._credentials.items()}
        for user, mechanism in deletions:
            updated.get(user, {}).pop(mechanism, None)
        for user, mechanism, credential in upsertions:
            updated.setdefault(user, {})[mechanism] = credential
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

    def replace(self, credentials: Credentials) -> None:
        """Serve ``credentials`` from now on (after ``write`` made them durable)."""
        self._credentials = credentials
