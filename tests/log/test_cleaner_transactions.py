"""The log cleaner and transactions: aborted data dropped, markers kept then removed,
nothing cleaned at or above the last stable offset, the read_committed view unchanged."""

from __future__ import annotations

import threading

import kafkette.log.segment_swap as swap
from kafkette.log import PartitionLog
from kafkette.log.cleaner import Throttler, clean_log
from kafkette.log.offset_map import OffsetMap
from kafkette.log.transaction_index import TXN_INDEX_SUFFIX, AbortedTxn
from kafkette.wire.records import decode_batches
from tests.log.compaction_data import COMPACT, clean
from tests.log.txn_batches import TxnProducer, append, plain

KEYS = [b"k0", b"k1", b"k2"]


def batches(log: PartitionLog) -> list:
    """Every (header, records) of the log, read like a consumer."""
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).to_bytes()
        assert data
        decoded = decode_batches(data)
        out.extend(decoded)
        offset = decoded[-1][0].next_offset
    return out


def committed_view(log: PartitionLog) -> dict[bytes, bytes]:
    """Latest value per key as a read_committed consumer computes it from Fetch's data:
    the aborted transactions of the range, applied as the Java client does."""
    aborted = sorted(
        log.aborted_transactions(log.log_start_offset, log.log_end_offset), key=lambda a: a[1]
    )
    skipping: set[int] = set()
    view: dict[bytes, bytes] = {}
    for header, records in batches(log):
        while aborted and aborted[0][1] <= header.last_offset:
            skipping.add(aborted.pop(0)[0])
        if header.is_control:
            skipping.discard(header.producer_id)  # an ABORT marker ends the range
            continue
        if header.is_transactional and header.producer_id in skipping:
            continue
        for record in records:
            view[record.key] = record.value
    return view


def markers(log: PartitionLog) -> list[int]:
    return [h.base_offset for h, records in batches(log) if h.is_control and records]


def fill_closed(log: PartitionLog) -> None:
    """Enough plain keyed batches to close the segments before them."""
    while len(log.segment_base_offsets) < 2 or log.segment_base_offsets[-1] == 0:
        append(log, plain(3, keys=[b"other-1", b"other-2", b"other-3"], value=b"o" * 200))
    log.roll()


def test_aborted_data_is_dropped_and_never_shadows_committed_values(tmp_path, clock):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=False)
    good, bad = TxnProducer(1), TxnProducer(2)
    append(log, good.data(3, keys=KEYS, value=b"committed"))
    append(log, good.commit())
    append(log, bad.data(3, keys=KEYS, value=b"aborted"))  # later offsets, same keys
    abort_offset, _ = append(log, bad.abort())
    fill_closed(log)
    before = committed_view(log)
    assert before[b"k0"].startswith(b"committed")
    assert log.abort_index_entries() == [AbortedTxn(2, 4, abort_offset, abort_offset + 1)]

    stats = clean(log, clock())
    assert stats is not None
    assert committed_view(log) == before
    values = [r.value for h, rs in batches(log) if not h.is_control for r in rs]
    assert not any(v.startswith(b"aborted") for v in values)
    # Its data were seen by this clean: the ABORT marker and its entry stay
    # (a consumer of an older copy of the range would still need them).
    assert abort_offset in markers(log)
    assert log.abort_index_entries() == [AbortedTxn(2, 4, abort_offset, abort_offset + 1)]
    files = list((tmp_path / "t-0").glob(f"*{TXN_INDEX_SUFFIX}"))
    assert len(files) == 1 and files[0].name.startswith(f"{0:020d}")

    # The producer table still remembers the aborted batch (idempotence), so
    # it stays as an empty header, and with it the marker. Once the producer
    # expires, a clean drops the header (the marker stays: that clean saw
    # data of it); the clean after sees none: the marker gets a delete
    # horizon and loses its entry; after delete.retention.ms it goes too.
    header_left = [h for h, rs in batches(log) if h.producer_id == 2 and not h.is_control]
    assert [h.records_count for h in header_left] == [0]
    clock.advance(COMPACT.producer_id_expiration_ms + 1)
    log.maybe_flush()
    assert log.producer_state.table.get(2) is None

    def forced() -> object:
        return clean_log(log, 0, OffsetMap(1 << 20), clock(), Throttler(1e308, threading.Event()),
                         expire_tombstones=True)

    forced()
    assert [h for h, rs in batches(log) if h.producer_id == 2 and not h.is_control] == []
    assert log.abort_index_entries() == [AbortedTxn(2, 4, abort_offset, abort_offset + 1)]
    stats = forced()
    assert stats is not None and stats.next_delete_horizon_ms is not None
    assert abort_offset in markers(log)
    assert log.abort_index_entries() == []
    assert committed_view(log) == before
    clock.advance(COMPACT.delete_retention_ms + 1)
    forced()
    assert abort_offset not in markers(log)
    assert committed_view(log) == before
    log.close()
    reopened = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=True)
    assert committed_view(reopened) == before
    assert reopened.open_transactions() == []
    reopened.close()


def test_commit_marker_kept_while_its_data_remain(tmp_path, clock):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=False)
    p = TxnProducer(1)
    append(log, p.data(2, keys=[b"a", b"b"], value=b"v1"))
    commit, _ = append(log, p.commit())
    fill_closed(log)
    clean(log, clock())
    clean(log, clock())
    assert commit in markers(log)  # a and b are still there
    log.close()
    reopened = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=True)
    assert reopened.open_transactions() == []  # replay still sees the commit
    reopened.close()


def test_nothing_at_or_above_the_lso_is_cleaned(tmp_path, clock):
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, COMPACT, clock, recover=False)
    for _ in range(3):
        append(log, plain(3, keys=KEYS, value=b"old" * 60))
    log.roll()
    p = TxnProducer(1)
    first, _ = append(log, p.data(3, keys=KEYS, value=b"open"))
    for _ in range(6):
        append(log, plain(3, keys=KEYS, value=b"new" * 60))
    log.roll()
    assert log.last_stable_offset == first
    holding = max(b for b in log.segment_base_offsets if b <= first)
    untouched = {
        path.name: path.read_bytes()
        for path in directory.glob("*.log")
        if int(path.name.split(".")[0]) >= holding
    }
    clean(log, clock())
    for name, data in untouched.items():
        assert (directory / name).read_bytes() == data
    # The open transaction's records are all still there.
    values = [r.value for h, rs in batches(log) for r in rs]
    assert values.count(b"open-0") == 1
    # Once it commits and the segments close, the clean may go past it.
    append(log, p.commit())
    log.roll()
    assert clean(log, clock()) is not None
    log.close()


class Crash(Exception):
    pass


def test_crash_at_every_step_of_a_swap_keeping_an_abort_index(tmp_path, clock, monkeypatch):
    """The cleaned abort index travels with the swap: after a crash at any rename the
    log reopens with the old or the new segments, each with its own abort index."""
    real_replace = swap.os.replace
    step = 0
    while True:
        directory = tmp_path / f"t-{step}"
        log = PartitionLog.open(directory, COMPACT, clock, recover=False)
        good, bad = TxnProducer(1), TxnProducer(2)
        append(log, good.data(3, keys=KEYS, value=b"committed"))
        append(log, good.commit())
        append(log, bad.data(3, keys=KEYS, value=b"aborted"))
        abort_offset, _ = append(log, bad.abort())
        fill_closed(log)
        before = committed_view(log)
        calls = 0

        def failing_replace(src, dst, _step=step):
            nonlocal calls
            calls += 1
            if calls > _step:
                raise Crash(f"crash before rename {calls}")
            return real_replace(src, dst)

        monkeypatch.setattr(swap.os, "replace", failing_replace)
        try:
            clean(log, clock())
            finished = True
        except Crash:
            finished = False
        finally:
            monkeypatch.setattr(swap.os, "replace", real_replace)
        del log  # the process dies
        reopened = PartitionLog.open(directory, COMPACT, clock, recover=True)
        assert committed_view(reopened) == before
        entries = reopened.abort_index_entries()
        assert entries == [AbortedTxn(2, 4, abort_offset, abort_offset + 1)], (step, entries)
        names = sorted(p.name for p in directory.iterdir())
        assert not [n for n in names if n.endswith((".swap", ".cleaned", ".deleted"))], names
        reopened.close()
        if finished:
            break
        step += 1
    assert step >= 4  # every rename of the swap was a crash point
