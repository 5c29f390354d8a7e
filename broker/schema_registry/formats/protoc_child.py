"""protoc in a child process: the registry's only way to compile .proto text.

grpcio-tools' embedded protoc aborts its process on some malformed inputs (an internal
check, not an error return; e.g. a custom option value naming an extension of another
options message). In the broker that would end the broker, so it runs here: a long-lived
child started on first use (it says ``ready`` once protoc is loaded, so its start is not
counted in a compile's time), fed one request per line on stdin (JSON: the main file name and
the include dirs, the files already written by the parent), answering one JSON line on
the pipe that was its stdout: the generated modules' sources, or protoc's errors.

The child is bounded: its address space is limited (``MEMORY_LIMIT``: an allocation past it
fails and protoc aborts), and the parent kills it when an answer takes longer than
``TIMEOUT_S``. A child that dies, is killed or answers garbage answers nothing; the parent says
so for that schema (``ProtocCrashed``) and starts a new child for the next one. The answers go
out on a duplicate of fd 1, and fd 1 itself is pointed at stderr, so that nothing else the
child's code prints can break the line protocol. Its stderr (protoc's warnings) is discarded.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass

TIMEOUT_S = 30.0  # for one compile; protoc takes milliseconds on any sane schema
MEMORY_LIMIT = 1 << 30  # the child's address space (RLIMIT_AS), bytes


@dataclass(frozen=True)
class ProtocError:
    """One protoc error, as ``_protoc_compiler.ProtocErrors.errors()`` gives them."""

    filename: str
    line: int
    column: int
    message: str


class ProtocCrashed(Exception):
    """The child died compiling this input (protoc aborted)."""


class ProtocFailed(Exception):
    """protoc refused the input; ``errors`` say why."""

    def __init__(self, errors: list[ProtocError]) -> None:
        super().__init__("; ".join(e.message for e in errors))
        self.errors = errors


# The child's first line, once protoc is loaded; and how long a start may take.
READY = b"ready\n"
START_TIMEOUT_S = 60.0


class _Child:
    """The running child; one request at a time (the lock), each killed after
    ``timeout_s``."""

    def __init__(self, timeout_s: float = TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        """A new child, once it says it is ready (protoc loaded): its start, which takes
        longer on a busy machine, is not counted in the first compile's ``timeout_s``."""
        proc = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdout is not None
        timer = threading.Timer(START_TIMEOUT_S, proc.kill)
        timer.start()
        try:
            ready = proc.stdout.readline()
        finally:
            timer.cancel()
        if ready != READY:
            proc.kill()
            proc.wait()
            raise ProtocCrashed("protoc's process did not start")
        return proc

    def compile(self, main: str, include: Sequence[str]) -> list[tuple[str, bytes]]:
        request = json.dumps({"main": main, "include": list(include)}).encode() + b"\n"
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()
            proc = self._proc
            assert proc.stdin is not None and proc.stdout is not None
            expired = threading.Event()

            def expire() -> None:
                expired.set()
                proc.kill()  # readline then sees the end of the pipe

            timer = threading.Timer(self.timeout_s, expire)
            timer.start()
            try:
                proc.stdin.write(request)
                proc.stdin.flush()
                line = proc.stdout.readline()
            except OSError:
                line = b""
            finally:
                timer.cancel()
            answer = _answer(line)
            if answer is None:
                proc.kill()
                proc.wait()
                self._proc = None
                if expired.is_set():
                    raise ProtocCrashed(
                        f"protoc took more than {self.timeout_s:g} s compiling this schema"
                    )
                raise ProtocCrashed("protoc stopped while compiling this schema")
        if "errors" in answer:
            raise ProtocFailed([ProtocError(*e) for e in answer["errors"]])
        return [(module, base64.b64decode(source)) for module, source in answer["generated"]]


def _answer(line: bytes) -> dict | None:
    """The child's answer line decoded; None for no answer (it died) or a garbled one."""
    if not line.endswith(b"\n"):
        return None
    try:
        answer = json.loads(line)
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


_CHILD = _Child()


def compile_protos(main: str, include: Sequence[str]) -> list[tuple[str, bytes]]:
    """``get_protos(main, include)`` run in the child: (module name, generated source) per
    file; raises ``ProtocFailed`` with protoc's errors, ``ProtocCrashed`` if it died."""
    return _CHILD.compile(main, include)


def _serve() -> None:
    _limit_memory()
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")  # the line protocol
    os.dup2(2, 1)  # anything else written to fd 1 goes where stderr goes
    sys.stdout = sys.stderr
    from grpc_tools import _protoc_compiler

    answers.write(READY.decode())
    answers.flush()
    for line in sys.stdin.buffer:
        request = json.loads(line)
        try:
            generated = _protoc_compiler.get_protos(
                request["main"].encode(), [p.encode() for p in request["include"]]
            )
        except _protoc_compiler.ProtocErrors as exc:
            errors = [[_text(e.filename), e.line, e.column, _text(e.message)] for e in exc.errors()]
            answer: dict[str, object] = {"errors": errors}
        else:
            answer = {
                "generated": [
                    [_text(module), base64.b64encode(source).decode()]
                    for module, source in generated
                ]
            }
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


def _limit_memory() -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = MEMORY_LIMIT
    for current in (soft, hard):
        if current != resource.RLIM_INFINITY:
            limit = min(limit, current)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


if __name__ == "__main__":
    _serve()
