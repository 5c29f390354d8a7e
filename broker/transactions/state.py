"""The transaction state machine: Kafka's states, legal moves and per-id metadata.

Pure and synchronous (no I/O, no trio), so every rule here is a function of
its inputs. ``TransactionMetadata`` is what the coordinator keeps per
transactional id and what ``__transaction_state`` records hold; a change is
*prepared* (``prepare_*`` returns the metadata it would become, checked
against ``LEGAL_PREVIOUS``), persisted by the coordinator, and only then
installed: memory never shows a state the log does not have.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum

MAX_EPOCH = 32767  # Short.MAX_VALUE
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
# Kafka's TransactionVersion levels (the feature ``transaction.version``): what a
# transaction's client spoke (EndTxn 5+, AddPartitionsToTxn 4+ from a broker, Produce 12+
# and TxnOffsetCommit 5+ are TV2; older requests TV0). TV2 bumps the epoch at every end.
TV_0 = 0
TV_2 = 2


class TxnState(IntEnum):
    """Kafka's TransactionState ids (the byte stored in TransactionLogValue)."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        """The name ListTransactions/DescribeTransactions and kafka-transactions.sh use."""
        return _DISPLAY[self]


_DISPLAY = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
STATE_BY_NAME = {name: state for state, name in _DISPLAY.items()}

# Kafka's TransactionState.validPreviousStates: a move to the key is legal only from these.
LEGAL_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    TxnState.EMPTY: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.ONGOING: frozenset(
        {TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}
    ),
    TxnState.PREPARE_COMMIT: frozenset({TxnState.ONGOING}),
    # TV2 may abort an idle id too (Empty, Complete*): its client cannot know whether the
    # partitions its Produce requests added reached the coordinator, so it always ends.
    TxnState.PREPARE_ABORT: frozenset(
        {
            TxnState.ONGOING,
            TxnState.PREPARE_EPOCH_FENCE,
            TxnState.EMPTY,
            TxnState.COMPLETE_COMMIT,
            TxnState.COMPLETE_ABORT,
        }
    ),
    TxnState.COMPLETE_COMMIT: frozenset({TxnState.PREPARE_COMMIT}),
    TxnState.COMPLETE_ABORT: frozenset({TxnState.PREPARE_ABORT}),
    TxnState.DEAD: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.PREPARE_EPOCH_FENCE: frozenset({TxnState.ONGOING}),
}

PREPARED = frozenset({TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT})
COMPLETED = frozenset({TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})
# States in which a transactional id may be forgotten after transactional.id.expiration.ms.
EXPIRABLE = frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})


class IllegalTransition(Exception):
    """A move the state machine forbids; a bug of the caller, never a client's doing."""


TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class TransactionMetadata:
    """One transactional id's state. Immutable: a change makes a new one.

    ``last_producer_id``/``last_producer_epoch`` are Kafka's memory of the id
    and epoch before the latest bump (previousProducerId, lastProducerEpoch), so a
    retried InitProducerId (KIP-360) or a retried TV2 EndTxn that carries them is
    answered again instead of fenced. ``last_producer_id`` is persisted (the
    PreviousProducerId tag of TransactionLogValue v1), ``last_producer_epoch`` is
    not, as in Kafka.

    ``client_tv`` is the transaction version the last change was made with
    (ClientTransactionVersion); ``next_producer_id`` the producer id a TV2 end whose
    epoch bump would exhaust the epoch moves to at completion (NextProducerId).
    """

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    start_ms: int = -1
    last_update_ms: int = -1
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    client_tv: int = TV_0
    next_producer_id: int = NO_PRODUCER_ID

    # Queries -------------------------------------------------------------

    @property
    def epoch_exhausted(self) -> bool:
        """Kafka's isProducerEpochExhausted: one more bump would reach Short.MAX_VALUE."""
        return self.producer_epoch >= MAX_EPOCH - 1

    def timed_out(self, now_ms: int) -> bool:
        return self.state == TxnState.ONGOING and self.start_ms + self.timeout_ms <= now_ms

    def expired(self, now_ms: int, expiration_ms: int) -> bool:
        return self.state in EXPIRABLE and self.last_update_ms + expiration_ms <= now_ms

    # Transitions (each returns the metadata to persist) --------------------

    def _to(self, state: TxnState, **changes: object) -> TransactionMetadata:
        if self.state not in LEGAL_PREVIOUS[state]:
            raise IllegalTransition(
                f"{self.transactional_id}: {self.state.display_name} -> {state.display_name}"
            )
        return replace(self, state=state, **changes)  # type: ignore[arg-type]

    def prepare_epoch_bump(
        self, timeout_ms: int, now_ms: int, *, remember_last: bool
    ) -> TransactionMetadata:
        """InitProducerId on an idle id: epoch + 1, same producer id, back to Empty.

        ``remember_last`` (the request carried the current id and epoch, KIP-360)
        keeps the old epoch so a retry of this very request is recognised."""
        return self._reinit(
            self.producer_id, self.producer_epoch + 1, timeout_ms, now_ms, remember_last
        )

    def prepare_producer_id_rotation(
        self, new_producer_id: int, timeout_ms: int, now_ms: int, *, remember_last: bool
    ) -> TransactionMetadata:
        """InitProducerId when the epoch is exhausted: a new producer id at epoch 0."""
        return self._reinit(new_producer_id, 0, timeout_ms, now_ms, remember_last)

    def _reinit(
        self,
        producer_id: int,
        producer_epoch: int,
        timeout_ms: int,
        now_ms: int,
        remember_last: bool,
    ) -> TransactionMetadata:
        """Back to Empty with no partitions under ``producer_id``/``producer_epoch``.

        An epoch bump and a producer id rotation are the same re-init but for the
        id and epoch they move to; both remember the current ones as the last.
        """
        return self._to(
            TxnState.EMPTY,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            last_producer_id=self.producer_id,
            last_producer_epoch=self.producer_epoch if remember_last else NO_PRODUCER_EPOCH,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            start_ms=-1,
            last_update_ms=now_ms,
            next_producer_id=NO_PRODUCER_ID,
        )

    def prepare_add_partitions(
        self, partitions: frozenset[TopicPartition], now_ms: int, client_tv: int = TV_0
    ) -> TransactionMetadata:
        """AddPartitionsToTxn/AddOffsetsToTxn (and, TV2, the partition leader's implicit
        add): Ongoing, with the transaction's start time set when it begins (from Empty
        or a completed transaction)."""
        starting = self.state != TxnState.ONGOING
        return self._to(
            TxnState.ONGOING,
            partitions=(partitions if starting else self.partitions | partitions),
            start_ms=now_ms if starting else self.start_ms,
            last_update_ms=now_ms,
            client_tv=client_tv,
        )

    def prepare_fence(self) -> TransactionMetadata:
        """Kafka's prepareFenceProducerEpoch: the epoch goes up by one (to 32767 at most),
        so the markers of the abort that follows fence the old producer everywhere; the
        next InitProducerId then finds the epoch exhausted and rotates the producer id."""
        epoch = min(self.producer_epoch + 1, MAX_EPOCH)
        return self._to(
            TxnState.PREPARE_EPOCH_FENCE,
            producer_epoch=epoch,
            last_producer_epoch=NO_PRODUCER_EPOCH,
        )

    def prepare_end(
        self,
        commit: bool,
        now_ms: int,
        *,
        client_tv: int = TV_0,
        next_producer_id: int = NO_PRODUCER_ID,
    ) -> TransactionMetadata:
        """EndTxn (or an abort by the coordinator): PrepareCommit/PrepareAbort.

        TV2 (Kafka's prepareAbortOrCommit): the epoch goes up by one now, so the
        markers carry it and fence the transaction's epoch in every partition; the
        epoch before it is remembered (a retried EndTxn is recognised by it). An
        exhausted epoch brings ``next_producer_id``, taken at completion. An abort of an
        idle id (no partition was added) starts its "transaction" now.
        """
        changes: dict[str, object] = {}
        if client_tv >= TV_2:
            if not (self.producer_epoch == MAX_EPOCH and not commit):
                changes["producer_epoch"] = self.producer_epoch + 1
            changes["last_producer_epoch"] = self.producer_epoch
        if self.state in EXPIRABLE:  # TV2: an abort with no partition added
            changes["start_ms"] = now_ms
        return self._to(
            TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
            last_update_ms=now_ms,
            client_tv=client_tv,
            next_producer_id=next_producer_id,
            **changes,
        )

    def prepare_complete(self, now_ms: int) -> TransactionMetadata:
        """Every marker written: CompleteCommit/CompleteAbort, no partitions left.

        TV2: a pending ``next_producer_id`` becomes the producer id at epoch 0 (the
        client was told so by EndTxn), the old one is remembered as the last."""
        state = (
            TxnState.COMPLETE_COMMIT
            if self.state == TxnState.PREPARE_COMMIT
            else TxnState.COMPLETE_ABORT
        )
        changes: dict[str, object] = {}
        if self.client_tv >= TV_2:
            changes["last_producer_id"] = self.producer_id
            if self.next_producer_id != NO_PRODUCER_ID:
                changes["producer_id"] = self.next_producer_id
                changes["producer_epoch"] = 0
        return self._to(
            state,
            partitions=frozenset(),
            last_update_ms=now_ms,
            next_producer_id=NO_PRODUCER_ID,
            **changes,
        )

    def answer_after_end(self) -> tuple[int, int]:
        """The producer id and epoch EndTxn v5 answers for this Prepare state: those the
        client continues with once the markers are written (Kafka answers them with the
        Prepare state persisted, before the markers)."""
        if self.client_tv >= TV_2 and self.next_producer_id != NO_PRODUCER_ID:
            return self.next_producer_id, 0
        return self.producer_id, self.producer_epoch


def new_metadata(
    transactional_id: str, producer_id: int, timeout_ms: int, now_ms: int
) -> TransactionMetadata:
    """A transactional id seen for the first time: epoch 0, Empty."""
    return TransactionMetadata(
        transactional_id,
        producer_id,
        0,
        timeout_ms,
        TxnState.EMPTY,
        last_update_ms=now_ms,
    )
