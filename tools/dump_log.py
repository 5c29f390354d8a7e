"""``kafkette dump-log PATH...``: print a partition's files as Kafka's ``kafka-dump-log.sh`` does.

Reads the files directly (no broker): ``.log`` segments batch by batch, records on request,
``.index``/``.timeindex`` entries checked against their segment, ``.txnindex`` aborted
transactions, ``.snapshot`` producer state and ``leader-epoch-checkpoint``. The text layout
is Kafka's, line for line, so what people know from ``kafka-dump-log.sh`` reads the same
(tests compare both tools on the same files); ``--json`` prints one JSON object per line.

Exit codes: 0 every file read to its end; 1 a file stops early (torn, corrupt, not the
type its name says) or an index disagrees with its segment; 2 a wrong command line.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafkette.tools.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, partition_name

EXAMPLES = """\
examples:
  kafkette dump-log data/orders-0/00000000000000000000.log
  kafkette dump-log --print-data-log data/orders-0/00000000000000000000.log
  kafkette dump-log data/orders-0                     # every file of a partition
  kafkette dump-log --verify-index-only data/orders-0/00000000000000000000.index
  kafkette dump-log --offsets-decoder data/__consumer_offsets-7/00000000000000000000.log
  kafkette dump-log --json --deep-iteration data/orders-0/00000000000000000000.log | jq .
"""

RECORD_INDENT = "|"
# File kinds in the order a partition directory is dumped.
_SUFFIX_ORDER = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "dump-log",
        help="print log segments and index files (like kafka-dump-log.sh), no broker needed",
        description=(
            "Print the batches, records and index entries of a partition's files, "
            "as Kafka's kafka-dump-log.sh does, reading them directly."
        ),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH",
        help=".log/.index/.timeindex/.txnindex/.snapshot files, leader-epoch-checkpoint, "
        "or a partition directory (all its files)",
    )
    parser.add_argument(
        "--files", action="append", default=[], metavar="FILE[,FILE...]",
        help="the files, comma-separated, as kafka-dump-log.sh takes them",
    )
    parser.add_argument(
        "--print-data-log", action="store_true",
        help="print each record's key and payload (implies --deep-iteration)",
    )
    parser.add_argument(
        "--deep-iteration", action="store_true",
        help="print each record's metadata, not only batch headers",
    )
    parser.add_argument(
        "--verify-index-only", action="store_true",
        help="check index entries against their segment; print only mismatches",
    )
    parser.add_argument(
        "--index-sanity-check", action="store_true",
        help="only check that each index file is well-formed (what a broker checks at load)",
    )
    parser.add_argument(
        "--max-bytes", type=int, default=None, metavar="N",
        help="read at most N bytes of each .log file",
    )
    decoders = parser.add_mutually_exclusive_group()
    decoders.add_argument(
        "--offsets-decoder", action="store_true",
        help="decode records as __consumer_offsets keys and values (implies --print-data-log)",
    )
    decoders.add_argument(
        "--transaction-log-decoder", action="store_true",
        help="decode records as __transaction_state keys and values (implies --print-data-log)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object per line")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    paths = list(args.paths)
    for group in args.files:
        paths.extend(p for p in group.split(",") if p)
    if not paths:
        print("kafkette: dump-log needs a PATH: a segment, index or partition directory",
              file=sys.stderr)
        return EXIT_USAGE
    if args.offsets_decoder or args.transaction_log_decoder:
        args.print_data_log = True
    dumper = _Dumper(args)
    try:
        for path in paths:
            dumper.dump_path(path)
    except BrokenPipeError:  # `| head`: the reader has all it wants
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes stdout
        return EXIT_OK
    dumper.report_mismatches()
    return EXIT_FAILED if dumper.failed else EXIT_OK


def _json_line(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc, default=str) + "\n")


def _text(data: bytes | None) -> str | None:
    """Key/payload as Kafka's default StringDecoder shows them (UTF-8, bad bytes replaced)."""
    return None if data is None else data.decode("utf-8", errors="replace")


class _Dumper:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.json = args.json
        self.deep = args.deep_iteration or args.print_data_log
        self.failed = False
        # file -> [(index offset, log offset)], printed at the end as Kafka does.
        self.offset_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.time_problems: list[str] = []
        self.parse: Callable[[bytes | None, bytes | None], tuple[Any, Any]] = _plain_parser
        if args.offsets_decoder:
            self.parse = _offsets_parser
        elif args.transaction_log_decoder:
            self.parse = _transaction_parser

    # --- dispatch ---------------------------------------------------------

    def dump_path(self, given: str) -> None:
        path = Path(given)
        if path.is_dir():
            files = sorted(
                (p for p in path.iterdir() if p.is_file()),
                key=lambda p: (p.name.split(".", 1)[0], _kind_rank(p)),
            )
            for file in files:
                if _kind_rank(file) < len(_SUFFIX_ORDER) or file.name == "leader-epoch-checkpoint":
                    self.dump_file(file, os.path.join(given, file.name))
            return
        if not path.exists():
            self.failed = True  # said once; the other paths are still dumped
            sys.stdout.flush()
            print(f"kafkette: {given}: no such file: give a segment, index or partition "
                  "directory", file=sys.stderr)
            return
        self.dump_file(path, given)

    def dump_file(self, path: Path, shown: str) -> None:
        """Dump one file; ``shown`` is its path as the user wrote it (Kafka echoes that)."""
        from kafkette.tools.log_files import FileStop

        handlers = {
            ".log": self.dump_log,
            ".index": self.dump_offset_index,
            ".timeindex": self.dump_time_index,
            ".txnindex": self.dump_txn_index,
            ".snapshot": self.dump_snapshot,
        }
        handler = handlers.get(path.suffix)
        if path.name == "leader-epoch-checkpoint":
            handler = self.dump_epoch_checkpoint
        if handler is None:
            print(f"Ignoring unknown file {path}", file=sys.stderr)
            return
        if self.args.index_sanity_check and path.suffix not in (".index", ".timeindex"):
            return
        if not self.json:
            print(f"Dumping {shown}")
        try:
            handler(path)
        except FileStop as stop:
            self.failed = True
            if self.json:
                _json_line({"file": str(path), "type": "stop", "position": stop.position,
                            "reason": stop.reason})
            sys.stdout.flush()
            print(f"kafkette: {stop}", file=sys.stderr)
        except BrokenPipeError:
            raise
        except OSError as exc:
            self.failed = True
            sys.stdout.flush()
            print(f"kafkette: {path}: {exc.strerror or exc}", file=sys.stderr)

    # --- .log ---------------------------------------------------------------

    def dump_log(self, path: Path) -> None:
        from kafkette.tools.log_files import (
            FileStop,
            base_offset_of,
            decode_records,
            iter_log_batches,
        )

        if not self.json:
            print(f"Log starting offset: {base_offset_of(path)}")
        end = 0
        try:
            for batch in iter_log_batches(path, self.args.max_bytes):
                end = batch.position + batch.header.size
                if not batch.valid:
                    self.failed = True
                records, unreadable = None, None
                if self.deep:
                    try:
                        records = decode_records(path, batch)
                    except FileStop as stop:
                        unreadable = stop  # the batch line first, then where it stops
                if self.json:
                    self._batch_json(path, batch, records)
                else:
                    self._batch_text(batch, records)
                if unreadable is not None:
                    raise unreadable
        except FileStop as stop:
            if not self.json and stop.position == end:
                size = path.stat().st_size
                print(f"Found {size - end} invalid bytes at the end of {path.name}")
            raise

    def _batch_fields(self, batch: Any) -> dict[str, Any]:
        from kafkette.wire.compression import CompressionType
        from kafkette.wire.records import delete_horizon_of

        h = batch.header
        try:
            codec = CompressionType(h.compression).name.lower()
        except ValueError:
            codec = f"unknown({h.compression})"
        return {
            "baseOffset": h.base_offset,
            "lastOffset": h.last_offset,
            "count": h.records_count,
            "baseSequence": h.base_sequence,
            "lastSequence": h.last_sequence,
            "producerId": h.producer_id,
            "producerEpoch": h.producer_epoch,
            "partitionLeaderEpoch": h.partition_leader_epoch,
            "isTransactional": h.is_transactional,
            "isControl": h.is_control,
            "deleteHorizonMs": delete_horizon_of(h),
            "position": batch.position,
            "timestampType": "LogAppendTime" if h.is_log_append_time else "CreateTime",
            "maxTimestamp": h.max_timestamp,
            "size": h.size,
            "magic": h.magic,
            "compresscodec": codec,
            "crc": h.crc,
            "isvalid": batch.valid,
        }

    def _batch_text(self, batch: Any, records: list[Any] | None) -> None:
        f = self._batch_fields(batch)
        horizon = f["deleteHorizonMs"]
        horizon_text = "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"
        line = (
            f"baseOffset: {f['baseOffset']} lastOffset: {f['lastOffset']} count: {f['count']}"
            f" baseSequence: {f['baseSequence']} lastSequence: {f['lastSequence']}"
            f" producerId: {f['producerId']} producerEpoch: {f['producerEpoch']}"
            f" partitionLeaderEpoch: {f['partitionLeaderEpoch']}"
            f" isTransactional: {_bool(f['isTransactional'])} isControl: {_bool(f['isControl'])}"
            f" deleteHorizonMs: {horizon_text} position: {f['position']}"
            f" {f['timestampType']}: {f['maxTimestamp']} size: {f['size']} magic: {f['magic']}"
            f" compresscodec: {f['compresscodec']} crc: {f['crc']} isvalid: {_bool(f['isvalid'])}"
        )
        print(line)
        if records is None:
            return
        timestamp_type = f["timestampType"]
        for record in records:
            print(RECORD_INDENT + " " + self._record_text(batch.header, record, timestamp_type))

    def _record_fields(self, header: Any, record: Any) -> dict[str, Any]:
        from kafkette.wire.records import parse_control_record

        sequence = -1 if header.base_sequence < 0 else (
            (header.base_sequence + record.offset_delta) % (1 << 31))
        fields: dict[str, Any] = {
            "offset": record.offset,
            "timestamp": record.timestamp,
            "keySize": -1 if record.key is None else len(record.key),
            "valueSize": -1 if record.value is None else len(record.value),
            "sequence": sequence,
            "headerKeys": [name for name, _ in record.headers],
        }
        if header.is_control:
            try:
                kind, epoch = parse_control_record(record)
            except ValueError as exc:
                fields["controlError"] = str(exc)
                return fields
            if epoch is not None:
                fields["endTxnMarker"] = kind.name
                fields["coordinatorEpoch"] = epoch
            else:
                fields["controlType"] = getattr(kind, "name", "UNKNOWN")
                fields["controlTypeId"] = int(kind)
        return fields

    def _record_text(self, header: Any, record: Any, timestamp_type: str) -> str:
        f = self._record_fields(header, record)
        text = (
            f"offset: {f['offset']} {timestamp_type}: {f['timestamp']} keySize: {f['keySize']}"
            f" valueSize: {f['valueSize']} sequence: {f['sequence']}"
            f" headerKeys: [{','.join(f['headerKeys'])}]"
        )
        if "endTxnMarker" in f:
            text += f" endTxnMarker: {f['endTxnMarker']} coordinatorEpoch: {f['coordinatorEpoch']}"
        elif "controlType" in f:
            text += f" controlType: {f['controlType']}({f['controlTypeId']})"
        elif "controlError" in f:
            text += f" controlError: {f['controlError']}"
        elif self.args.print_data_log:
            key, payload = self.parse(record.key, record.value)
            if key is not None:
                text += f" key: {key}"
            if payload is not None:
                text += f" payload: {payload}"
        return text

    def _batch_json(self, path: Path, batch: Any, records: list[Any] | None) -> None:
        doc: dict[str, Any] = {"file": str(path), "type": "batch", **self._batch_fields(batch)}
        if records is not None:
            out = []
            for record in records:
                fields = self._record_fields(batch.header, record)
                if self.args.print_data_log and not batch.header.is_control:
                    key, payload = self.parse(record.key, record.value)
                    fields["key"], fields["payload"] = key, payload
                    fields["headers"] = [
                        [name, _text(value)] for name, value in record.headers
                    ]
                out.append(fields)
            doc["records"] = out
        _json_line(doc)

    # --- indexes --------------------------------------------------------------

    def _sanity_check(self, path: Path, time_index: bool) -> None:
        from kafkette.log.errors import CorruptIndex
        from kafkette.log.index import OffsetIndex, TimeIndex
        from kafkette.tools.log_files import base_offset_of

        base = base_offset_of(path)
        log_file = path.with_suffix(".log")
        log_size = log_file.stat().st_size if log_file.exists() else 1 << 62
        max_bytes = max(path.stat().st_size, 8)
        try:
            index = (TimeIndex.load(path, base, max_bytes) if time_index
                     else OffsetIndex.load(path, base, max_bytes, log_size))
            index.discard()
        except CorruptIndex as exc:
            self.failed = True
            message = str(exc)
            if self.json:
                _json_line({"file": str(path), "type": "sanity-check", "passed": False,
                            "reason": message})
            else:
                print(f"{path} failed sanity check: {message}")
            return
        if self.json:
            _json_line({"file": str(path), "type": "sanity-check", "passed": True})
        else:
            print(f"{path} passed sanity check.")

    def _torn(self, path: Path, torn: int, entry_size: int, count: int) -> None:
        if torn:
            from kafkette.tools.log_files import FileStop

            raise FileStop(path, count * entry_size, f"{torn} bytes of a torn entry")

    def dump_offset_index(self, path: Path) -> None:
        from kafkette.tools.log_files import batch_at, read_offset_index

        if self.args.index_sanity_check:
            self._sanity_check(path, time_index=False)
            return
        entries, torn = read_offset_index(path)
        log_file = path.with_suffix(".log")
        for offset, position in entries:
            if log_file.exists():
                header = batch_at(log_file, position)
                found = header.last_offset if header is not None else -1
                if found != offset:
                    self.offset_mismatches.setdefault(str(path), []).append((offset, found))
            if self.args.verify_index_only:
                continue
            if self.json:
                _json_line({"file": str(path), "type": "index", "offset": offset,
                            "position": position})
            else:
                print(f"offset: {offset} position: {position}")
        self._torn(path, torn, 8, len(entries))

    def dump_time_index(self, path: Path) -> None:
        from kafkette.tools.log_files import (
            FileStop,
            iter_log_batches,
            read_time_index,
        )

        if self.args.index_sanity_check:
            self._sanity_check(path, time_index=True)
            return
        entries, torn = read_time_index(path)
        log_file = path.with_suffix(".log")
        batches: list[Any] = []
        if log_file.exists():
            try:
                batches = [b.header for b in iter_log_batches(log_file)]
            except FileStop:
                pass  # the .log's own dump reports where it stops
        previous = -1
        for timestamp, offset in entries:
            if log_file.exists():
                holder = next((h for h in batches if h.last_offset >= offset), None)
                if holder is None or holder.last_offset != offset:
                    found = -1 if holder is None else holder.last_offset
                    self.time_problems.append(
                        f"The following indexed offsets are not found in the log.\n"
                        f"Indexed offset: {offset}, found log offset: {found}")
                else:
                    if holder.max_timestamp != timestamp:
                        self.time_problems.append(
                            f"Found timestamp mismatch in :{path.resolve()}\n"
                            f"  Index timestamp: {timestamp}, "
                            f"log timestamp: {holder.max_timestamp}")
                    if previous >= timestamp:
                        self.time_problems.append(
                            f"Found out of order timestamp in :{path.resolve()}\n"
                            f"  Index timestamp: {timestamp}, "
                            f"Previously indexed timestamp: {previous}")
            previous = timestamp
            if self.args.verify_index_only:
                continue
            if self.json:
                _json_line({"file": str(path), "type": "timeindex", "timestamp": timestamp,
                            "offset": offset})
            else:
                print(f"timestamp: {timestamp} offset: {offset}")
        self._torn(path, torn, 12, len(entries))

    def report_mismatches(self) -> None:
        """Kafka prints index disagreements after every file, on stderr."""
        if self.offset_mismatches or self.time_problems:
            self.failed = True
        for name, pairs in self.offset_mismatches.items():
            if self.json:
                for index_offset, log_offset in pairs:
                    _json_line({"file": name, "type": "index-mismatch",
                                "indexOffset": index_offset, "logOffset": log_offset})
                continue
            sys.stdout.flush()
            print(f"Mismatches in :{Path(name).resolve()}", file=sys.stderr)
            for index_offset, log_offset in pairs:
                print(f"  Index offset: {index_offset}, log offset: {log_offset}",
                      file=sys.stderr)
        for problem in self.time_problems:
            if self.json:
                _json_line({"type": "timeindex-mismatch", "problem": problem})
            else:
                sys.stdout.flush()
                print(problem, file=sys.stderr)

    # --- transaction index, snapshots, epochs -------------------------------

    def dump_txn_index(self, path: Path) -> None:
        from kafkette.tools.log_files import read_txn_index

        for version, entry in read_txn_index(path):
            if self.json:
                _json_line({"file": str(path), "type": "txnindex", "version": version,
                            "producerId": entry.producer_id, "firstOffset": entry.first_offset,
                            "lastOffset": entry.last_offset,
                            "lastStableOffset": entry.last_stable_offset})
            else:
                print(f"version: {version} producerId: {entry.producer_id}"
                      f" firstOffset: {entry.first_offset} lastOffset: {entry.last_offset}"
                      f" lastStableOffset: {entry.last_stable_offset}")

    def dump_snapshot(self, path: Path) -> None:
        from kafkette.tools.log_files import read_snapshot_file

        table = read_snapshot_file(path)
        for producer_id, entry in table.items():
            batches = [
                {"firstSequence": b.first_sequence, "lastSequence": b.last_sequence,
                 "firstOffset": b.base_offset, "lastOffset": b.last_offset}
                for b in entry.batches
            ]
            txn_first = entry.current_txn_first_offset
            if self.json:
                _json_line({"file": str(path), "type": "snapshot", "producerId": producer_id,
                            "producerEpoch": entry.epoch,
                            "coordinatorEpoch": entry.coordinator_epoch,
                            "currentTxnFirstOffset": None if txn_first < 0 else txn_first,
                            "lastTimestamp": entry.last_append_ms, "batches": batches})
                continue
            txn_text = "Optional.empty" if txn_first < 0 else f"Optional[{txn_first}]"
            last = batches[-1] if batches else None
            line = (f"producerId: {producer_id} producerEpoch: {entry.epoch}"
                    f" coordinatorEpoch: {entry.coordinator_epoch}"
                    f" currentTxnFirstOffset: {txn_text}"
                    f" lastTimestamp: {entry.last_append_ms}")
            if last is not None:
                line += (f" firstSequence: {last['firstSequence']}"
                         f" lastSequence: {last['lastSequence']}"
                         f" lastOffset: {last['lastOffset']}"
                         f" offsetDelta: {last['lastOffset'] - last['firstOffset']}"
                         f" timestamp: {entry.last_append_ms}")
            print(line)
            # kafkette remembers up to five batches per producer (Kafka's snapshot keeps one).
            for b in batches[:-1]:
                print(f"{RECORD_INDENT} earlier batch: firstSequence: {b['firstSequence']}"
                      f" lastSequence: {b['lastSequence']} firstOffset: {b['firstOffset']}"
                      f" lastOffset: {b['lastOffset']}")

    def dump_epoch_checkpoint(self, path: Path) -> None:
        from kafkette.tools.log_files import read_epoch_checkpoint

        for epoch, start in read_epoch_checkpoint(path):
            if self.json:
                _json_line({"file": str(path), "type": "leader-epoch", "epoch": epoch,
                            "startOffset": start})
            else:
                print(f"epoch: {epoch} startOffset: {start}")


def _kind_rank(path: Path) -> int:
    try:
        return _SUFFIX_ORDER.index(path.suffix)
    except ValueError:
        return len(_SUFFIX_ORDER)


def _bool(value: bool) -> str:
    return "true" if value else "false"


# --- key/payload parsers (Kafka's --offsets-decoder / --transaction-log-decoder) -----


def _plain_parser(key: bytes | None, value: bytes | None) -> tuple[Any, Any]:
    return _text(key), _text(value)


def _offsets_parser(key: bytes | None, value: bytes | None) -> tuple[Any, Any]:
    """Kafka's OffsetsMessageParser: each key and value as JSON of its record type."""
    from kafkette.broker.groups import offsets_records as records

    if key is None:
        return None, None
    try:
        decoded = records.decode_key(key)
    except (ValueError, IndexError) as exc:
        return f"unknown::{exc}", None
    if isinstance(decoded, records.OffsetCommitKey):
        key_doc = {"type": "1", "data": {"group": decoded.group_id, "topic": decoded.topic,
                                         "partition": decoded.partition}}
        if value is None:
            return _compact(key_doc), "<DELETE>"
        commit = records.decode_offset_commit_value(value)
        data: dict[str, Any] = {"offset": commit.offset, "leaderEpoch": commit.leader_epoch,
                                "metadata": commit.metadata,
                                "commitTimestamp": commit.commit_timestamp_ms}
        if commit.expire_timestamp_ms is not None:
            data["expireTimestamp"] = commit.expire_timestamp_ms
        version = int.from_bytes(value[:2], "big", signed=True)
        return _compact(key_doc), _compact({"version": str(version), "data": data})
    key_doc = {"type": "2", "data": {"group": decoded.group_id}}
    if value is None:
        return _compact(key_doc), "<DELETE>"
    group = records.decode_group_metadata_value(value)
    version = int.from_bytes(value[:2], "big", signed=True)
    members = [
        {"memberId": m.member_id, "groupInstanceId": m.group_instance_id,
         "clientId": m.client_id, "clientHost": m.client_host,
         "rebalanceTimeout": m.rebalance_timeout_ms, "sessionTimeout": m.session_timeout_ms,
         "subscription": _consumer_protocol_json(
             "ConsumerProtocolSubscription", m.subscription, group.protocol_type),
         "assignment": _consumer_protocol_json(
             "ConsumerProtocolAssignment", m.assignment, group.protocol_type)}
        for m in group.members
    ]
    data = {"protocolType": group.protocol_type, "generation": group.generation,
            "protocol": group.protocol, "leader": group.leader,
            "currentStateTimestamp": group.current_state_timestamp_ms, "members": members}
    return _compact(key_doc), _compact({"version": str(version), "data": data})


def _consumer_protocol_json(definition: str, data: bytes, protocol_type: str) -> Any:
    """A member's subscription or assignment as Kafka's JSON converters write it (only the
    fields of its version, bytes in base64); base64 of the whole when it is not the consumer
    protocol or does not decode."""
    from kafkette.wire.codec import message_codec
    from kafkette.wire.schema import in_range

    def to_json(fields: Any, value: Any, version: int) -> Any:
        out = {}
        for spec in fields:
            if not in_range(version, spec.versions) or spec.name not in value:
                continue
            item = value[spec.name]
            if spec.fields and item is not None:
                item = ([to_json(spec.fields, v, version) for v in item] if spec.is_array
                        else to_json(spec.fields, item, version))
            elif isinstance(item, bytes | bytearray | memoryview):
                item = base64.b64encode(bytes(item)).decode()
            out[spec.json_name[:1].lower() + spec.json_name[1:]] = item  # Kafka's camelCase
        return out

    if protocol_type == "consumer" and len(data) >= 2:
        version = int.from_bytes(data[:2], "big", signed=True)
        try:
            codec = message_codec(definition, version)
            decoded, end = codec.decode(memoryview(data), 2)
            if end == len(data):
                return to_json(codec.spec.fields, decoded, version)
        except (ValueError, LookupError, IndexError):
            pass
    return base64.b64encode(data).decode()


def _transaction_parser(key: bytes | None, value: bytes | None) -> tuple[Any, Any]:
    """Kafka's TransactionLogMessageParser layout."""
    from kafkette.broker.transactions import log_records

    if key is None:
        return None, None
    try:
        transactional_id = log_records.decode_key(key)
    except (ValueError, UnicodeDecodeError) as exc:
        return f"unknown::{exc}", None
    key_text = f"transaction_metadata::transactionalId={transactional_id}"
    if value is None:
        return key_text, "<DELETE>"
    meta = log_records.decode_value(transactional_id, value)
    partitions = ",".join(partition_name(topic, index) for topic, index in sorted(meta.partitions))
    state = "".join(part.capitalize() for part in meta.state.name.split("_"))
    return key_text, (
        f"producerId:{meta.producer_id},producerEpoch:{meta.producer_epoch},state={state},"
        f"partitions=[{partitions}],txnLastUpdateTimestamp={meta.last_update_ms},"
        f"txnTimeoutMs={meta.timeout_ms}"
    )


def _compact(doc: Any) -> str:
    return json.dumps(doc, separators=(",", ":"))
