"""The PROTOBUF schema type: .proto text (Java clients) or base64 of a serialized
FileDescriptorProto (Confluent's Python serializer) in, one canonical .proto text out.

Text is compiled by the real protoc embedded in grpcio-tools (``_protoc_compiler.get_protos``:
structured errors, one compile gives every file's descriptor, taken from the generated
module's ``AddSerializedFile`` literal), run in a child process (``protoc_child``: protoc
aborts its process on some malformed inputs). Base64 input is decoded when protoc
refuses the text, and checked by adding it to a ``DescriptorPool`` after its dependencies.
Either way the stored text is ``protobuf_text.to_text`` of the descriptor, so Java's text and
Python's base64 of one file are one schema (one id); ``render(.., "serialized")`` answers base64
of the descriptor compiled from that stored text.

Imports resolved without a reference, as Confluent's registry does: ``google/protobuf/*.proto``
(grpc_tools' bundled copies), ``google/type/*.proto`` (googleapis-common-protos, when
installed) and ``confluent/meta.proto``, ``confluent/type/decimal.proto`` (our own files with
the same package, messages and numbers, in ``protos/``).
"""

from __future__ import annotations

import ast
import atexit
import base64
import binascii
import functools
import hashlib
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import descriptor_pool
from google.protobuf.message import DecodeError
from google.protobuf.text_encoding import CEscape

from kafkette.broker.schema_registry.formats import (
    Dependency,
    ParsedSchema,
    Reference,
    protobuf_diff,
    protobuf_text,
    protoc_child,
)
from kafkette.broker.schema_registry.formats.invalid import invalid_schema
from kafkette.broker.schema_registry.formats.json_text import has_lone_surrogate
from kafkette.broker.schema_registry.formats.protobuf_text import FDP, dependency_order

SCHEMA_TYPE = "PROTOBUF"
_PROTOS_DIR = Path(__file__).with_name("protos")
_MAIN_NAME = "schema.proto"
# Parses are cached by a digest of their inputs (the same schema is parsed again for every
# lookup and registration); inputs larger than this are not cached.
CACHE_SIZE = 256
CACHE_MAX_INPUT = 256 * 1024


@dataclass(frozen=True)
class ProtoSchema:
    """``ParsedSchema.native`` for PROTOBUF: the descriptor compiled from the canonical text
    (``name`` is ours), its dependencies' descriptors by file name (transitively, built-in
    ones included), and the direct references by import path."""

    fdp: FDP
    files: Mapping[str, FDP]
    references: Mapping[str, Reference]
    serialized: bytes


class _ProtocError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse(
    text: str,
    references: Sequence[Reference],
    dependencies: Mapping[str, Dependency],
    *,
    normalize: bool,
) -> ParsedSchema:
    """``text`` (.proto or base64 FileDescriptorProto) checked and re-printed; references'
    texts (``dependencies``, by import path) are compiled alongside."""
    deps = tuple(sorted((name, dep.text) for name, dep in dependencies.items()))
    try:
        if has_lone_surrogate(text):
            raise _ProtocError("unpaired surrogate in the schema text")
        canonical, fdp_bytes, files_bytes = _parse_cached(text, deps, normalize)
    except _ProtocError as exc:
        raise invalid_schema(text, references, SCHEMA_TYPE, exc.reason) from None
    fdp = FDP.FromString(fdp_bytes)
    files = {name: FDP.FromString(data) for name, data in files_bytes}
    native = ProtoSchema(fdp, files, {r.name: r for r in references}, fdp_bytes)
    return ParsedSchema(SCHEMA_TYPE, canonical, tuple(references), native)


def render(parsed: ParsedSchema, fmt: str | None) -> str:
    """``serialized``: base64 of the FileDescriptorProto (what Python clients ask for);
    anything else: the canonical .proto text."""
    if fmt == "serialized":
        native = parsed.native
        if not isinstance(native, ProtoSchema):
            raise TypeError("a PROTOBUF ParsedSchema without its descriptor (native)")
        return base64.standard_b64encode(native.serialized).decode("ascii")
    return parsed.canonical


def check(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    """Confluent's Protobuf rule: the diff from the writer's schema to the reader's, its
    incompatible differences as ``Found incompatible change: Difference{...}``."""
    return protobuf_diff.check(reader.native, writer.native)


# ---- the pipeline -----------------------------------------------------------------------
_Parsed = tuple[str, bytes, tuple[tuple[str, bytes], ...]]
_cache: OrderedDict[bytes, _Parsed] = OrderedDict()
_cache_lock = threading.Lock()  # parses run in worker threads


def _parse_cached(text: str, deps: tuple[tuple[str, str], ...], normalize: bool) -> _Parsed:
    """``_parse`` through an LRU cache keyed by the SHA-256 of the inputs (a key holds no
    text), for inputs of at most ``CACHE_MAX_INPUT`` characters."""
    size = len(text) + sum(len(name) + len(dep) for name, dep in deps)
    if size > CACHE_MAX_INPUT:
        return _parse(text, deps, normalize)
    digest = hashlib.sha256(b"1" if normalize else b"0")
    for part in (text, *(item for dep in deps for item in dep)):
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    key = digest.digest()
    with _cache_lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    parsed = _parse(text, deps, normalize)
    with _cache_lock:
        _cache[key] = parsed
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return parsed


def _parse(text: str, deps: tuple[tuple[str, str], ...], normalize: bool) -> _Parsed:
    dep_texts = dict(deps)
    try:
        fdp, files = _compile(text, dep_texts)
    except _ProtocError:
        fdp = _from_base64(text)
        if fdp is None:
            raise
        files = _compile_imports(fdp, dep_texts)
        _check_in_pool(fdp, files)
    try:
        canonical = protobuf_text.to_text(fdp, files, normalize=normalize)
    except protobuf_text.UnsupportedDescriptor as exc:
        raise _ProtocError(str(exc)) from None
    except RecursionError:  # a descriptor nested deeper than the printer can follow
        raise _ProtocError("schema nested too deeply") from None
    try:
        final, final_files = _compile(canonical, dep_texts)
    except _ProtocError as exc:  # a printer bug, not the user's: say so
        reason = f"kafkette could not re-compile its own printing: {exc.reason}"
        raise _ProtocError(reason) from None
    return (
        canonical,
        final.SerializeToString(),
        tuple((name, f.SerializeToString()) for name, f in sorted(final_files.items())),
    )


def _from_base64(text: str) -> FDP | None:
    """``text`` as base64 of a serialized FileDescriptorProto, or None if it is not one."""
    try:
        data = base64.b64decode(text.strip(), validate=True)
        fdp = FDP.FromString(data)
    except (binascii.Error, ValueError, DecodeError):
        return None
    if not (fdp.name or fdp.package or fdp.message_type or fdp.enum_type or fdp.service):
        return None
    return fdp


def _compile_imports(fdp: FDP, dep_texts: Mapping[str, str]) -> dict[str, FDP]:
    """The descriptors of everything ``fdp`` imports (transitively), compiled from the
    references' texts and the built-in files, through a stub that imports them."""
    if not fdp.dependency:
        return {}
    stub = 'syntax = "proto3";\n' + "".join(
        f'import "{CEscape(dep, True)}";\n' for dep in fdp.dependency
    )
    _stub, files = _compile(stub, dep_texts)
    return files


def _check_in_pool(fdp: FDP, files: Mapping[str, FDP]) -> None:
    """Add ``fdp`` to a fresh pool after its dependencies: the pool refuses missing imports,
    undefined types, duplicate numbers... with a reason."""
    pool = descriptor_pool.DescriptorPool()
    for f in dependency_order(files):
        pool.Add(f)
    try:
        pool.Add(fdp)
        pool.FindFileByName(fdp.name)
    except (TypeError, KeyError, ValueError) as exc:
        raise _ProtocError(str(exc)) from None


# ---- protoc ------------------------------------------------------------------------------
def _compile(text: str, dep_texts: Mapping[str, str]) -> tuple[FDP, dict[str, FDP]]:
    """``text`` compiled with ``dep_texts`` (import path -> text) importable: its descriptor
    and those of every file it imports, transitively, by file name."""
    main = _main_name(dep_texts)
    with tempfile.TemporaryDirectory(prefix="kafkette-proto-") as tmp:
        for name, dep_text in [*dep_texts.items(), (main, text)]:
            path = _safe_path(tmp, name)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(dep_text, encoding="utf-8")
            except (OSError, ValueError) as exc:  # "a.proto" and "a.proto/b.proto", ...
                reason = exc.strerror if isinstance(exc, OSError) else None
                reason = reason or type(exc).__name__
                raise _ProtocError(f"reference name '{name}' cannot be used: {reason}") from None
        include = [tmp, *(str(d) for d in _include_dirs())]
        try:
            generated = protoc_child.compile_protos(main, include)
        except protoc_child.ProtocFailed as exc:
            raise _ProtocError(_protoc_reason(exc.errors, main)) from None
        except protoc_child.ProtocCrashed as exc:
            raise _ProtocError(str(exc)) from None
    files: dict[str, FDP] = {}
    for _module, source in generated:
        fdp = FDP.FromString(_serialized_descriptor(source))
        files[fdp.name] = fdp
    fdp = files.pop(main)
    return fdp, files


def _main_name(dep_texts: Mapping[str, str]) -> str:
    name, n = _MAIN_NAME, 0
    while name in dep_texts:
        n += 1
        name = f"schema_{n}.proto"
    return name


def _safe_path(root: str, name: str) -> Path:
    parts = name.split("/")
    bad = not name or name.startswith("/") or "\0" in name or "\\" in name
    if bad or any(p in ("", ".", "..") for p in parts):
        raise _ProtocError(f"reference name '{name}' is not a relative import path")
    return Path(root, *parts)


def _serialized_descriptor(source: bytes) -> bytes:
    """The FileDescriptorProto bytes a protoc-generated Python module passes to
    ``AddSerializedFile`` (protoc's Python output: no source info, json_name only when set)."""
    text = source.decode("utf-8")
    marker = "AddSerializedFile("
    start = text.index(marker) + len(marker)
    end = text.index("\n", start)
    call = text[start:end].rstrip()
    if not call.endswith(")"):
        raise ValueError("unexpected protoc output")
    return ast.literal_eval(call[:-1])


def _protoc_reason(errors: Sequence[protoc_child.ProtocError], main: str) -> str:
    """protoc's errors as ``line:col: message`` (1-based like protoc's command line), the
    file name in front for errors in an imported file; joined by ``; ``."""
    out = []
    for err in errors:
        name, line, column, text = err.filename, err.line, err.column, err.message
        where = [] if name == main else [name]
        if line >= 0:
            where += [str(line + 1), str(column + 1)]
        out.append(f"{':'.join(where)}: {text}" if where else text)
    return "; ".join(out)


@functools.lru_cache(maxsize=1)
def _include_dirs() -> tuple[str, ...]:
    """Our confluent/*.proto, grpc_tools' google/protobuf/*.proto, and a private directory
    exposing only googleapis' google/type (the whole site-packages would expose more)."""
    import grpc_tools

    dirs = [str(_PROTOS_DIR), os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")]
    google_type = _googleapis_type_dir()
    if google_type is not None:
        private = tempfile.mkdtemp(prefix="kafkette-google-type-")
        atexit.register(shutil.rmtree, private, True)
        os.makedirs(os.path.join(private, "google"))
        os.symlink(google_type, os.path.join(private, "google", "type"))
        dirs.append(private)
    return tuple(dirs)


def _googleapis_type_dir() -> str | None:
    try:
        import google.type as google_type  # googleapis-common-protos
    except ImportError:
        return None
    for path in getattr(google_type, "__path__", []):
        if os.path.exists(os.path.join(path, "money.proto")):
            return path
    return None
