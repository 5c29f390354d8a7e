"""``run_tool``: what escapes a tool body becomes one line and an exit code."""

from __future__ import annotations

import argparse

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafkette.tools.common import EXIT_FAILED, run_tool


def test_unforeseen_kafka_exception_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def body(args: argparse.Namespace) -> None:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "init_transactions timed out"))

    assert run_tool(body, argparse.Namespace()) == EXIT_FAILED
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "kafkette: _TIMED_OUT: init_transactions timed out\n"


def test_other_exceptions_still_propagate() -> None:
    def body(args: argparse.Namespace) -> None:
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError):
        run_tool(body, argparse.Namespace())
