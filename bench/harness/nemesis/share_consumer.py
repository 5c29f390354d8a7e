"""A share-group member that accepts every record and says which acceptances the broker
confirmed, for the nemesis schedules.

Run as ``python -m bench.harness.nemesis.share_consumer --bootstrap B --topic T --out PATH
--group G [--no-earliest]``.

confluent-kafka 2.16's ``ShareConsumer`` in explicit acknowledgement mode: every delivered
record is acknowledged ACCEPT and committed with ``commit_sync``; the acknowledgement commit
callback names, per partition, the offsets the broker answered for and the error, so each
record gets its own outcome: ``{"p", "o", "v", "accepted": true}`` when confirmed,
``"accepted": false`` (with ``error``) when refused. Whatever has no answer when the script
stops is written ``"accepted": "unknown"``. Each delivery is written too,
``{"event": "delivered", "at": [p, o], "t0"}`` (``t0``: the clock before the poll; an accepted
line's ``t``: after the broker's answer). At start the group's ``share.auto.offset.reset`` is set
to ``earliest`` (a share group starts at the end by default), unless ``--no-earliest``.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from bench.harness.nemesis.client_run import CALL_TIMEOUT_S, ClientRun, run_member


def set_earliest(run: ClientRun) -> None:
    """share.auto.offset.reset=earliest for the group, asked until a broker accepts it."""
    entry = ConfigEntry("share.auto.offset.reset", "earliest",
                        incremental_operation=AlterConfigOpType.SET)  # fmt: skip
    resource = ConfigResource(ResourceType.GROUP, run.args.group, incremental_configs=[entry])
    admin = AdminClient({k: v for k, v in run.config().items() if k != "error_cb"})
    while not run.stopping.is_set():
        try:
            admin.incremental_alter_configs([resource])[resource].result(CALL_TIMEOUT_S)
            return
        except (KafkaException, TimeoutError) as exc:  # result() raises TimeoutError
            run.log(f"share.auto.offset.reset: {exc}")
            time.sleep(0.5)


class ShareMember:
    def __init__(self, run: ClientRun) -> None:
        self.run = run
        self.pending: dict[tuple[int, int], str] = {}  # acknowledged, no answer yet
        self.consumer = ShareConsumer({
            **run.config(), "group.id": run.args.group,
            "share.acknowledgement.mode": "explicit",
        })  # fmt: skip
        self.consumer.set_acknowledgement_commit_callback(self._answered)
        self.consumer.subscribe([run.args.topic])

    def _answered(self, offsets: dict[Any, set[int]], error: KafkaException | None) -> None:
        for tp, answered in offsets.items():
            for offset in sorted(answered):
                value = self.pending.pop((tp.partition, offset), None)
                record = {"p": tp.partition, "o": offset, "v": value,
                          "member": self.run.instance}  # fmt: skip
                if error is None:
                    self.run.write(**record, accepted=True, t=time.time())
                else:
                    self.run.write(**record, accepted=False, error=str(error))
        if error is not None:
            self.run.log(f"acknowledgement: {error}")

    def loop(self) -> None:
        while not self.run.stopping.is_set():
            t0 = time.time()
            try:
                messages = self.consumer.poll(0.5)
            except KafkaException as exc:
                self.run.log(f"poll: {exc}")
                continue
            for message in messages or []:
                if message.error() is not None:
                    self.run.log(f"poll: {message.error()}")
                    continue
                p, o = message.partition(), message.offset()
                self.run.write(event="delivered", at=[p, o], member=self.run.instance, t0=t0)
                self.pending[(p, o)] = message.value().decode()
                self.consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            if self.pending:
                self._commit()

    def _commit(self) -> None:
        try:
            self.consumer.commit_sync(CALL_TIMEOUT_S)
        except KafkaException as exc:  # the callback, now or later, says what happened
            self.run.log(f"commit_sync: {exc}")

    def close(self) -> None:
        try:
            self.consumer.close()  # commits what is still acknowledged locally
        except (KafkaException, RuntimeError) as exc:
            self.run.log(f"close: {exc}")
        for (p, o), value in sorted(self.pending.items()):
            self.run.write(p=p, o=o, v=value, member=self.run.instance, accepted="unknown")


def _extra(parser: Any) -> None:
    parser.add_argument("--group", required=True)
    parser.add_argument("--no-earliest", action="store_true",
                        help="leave the group's share.auto.offset.reset alone")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    run = ClientRun("share_consumer", argv, _extra, __doc__.splitlines()[0])
    if not run.args.no_earliest:
        set_earliest(run)
    return run_member(run, ShareMember(run))


if __name__ == "__main__":
    sys.exit(main())
