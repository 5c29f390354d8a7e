"""Where the reference Apache Kafka 4.0 is: its ``kafka-ref`` script, for the tests that
check kafkette against Kafka's own tools (kafka-configs.sh, kafka-log-dirs.sh, ...).

``KAFKETTE_KAFKA_REF`` names it (the script or its folder); otherwise the shared
``reference-kafka`` folder beside the checkout or beside its parent (a git worktree).
Test modules import it: ``from tests.reference_kafka import reference_script_or_skip``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def reference_script() -> Path | None:
    """``kafka-ref`` of the reference distribution, or None where there is none."""
    given = os.environ.get("KAFKETTE_KAFKA_REF")
    beside = [REPO.parent / "shared" / "reference-kafka",
              REPO.parent.parent / "shared" / "reference-kafka"]  # fmt: skip
    bases = [Path(given)] if given else beside
    for base in bases:
        script = base if base.name == "kafka-ref" else base / "kafka-ref"
        if script.is_file():
            return script
    return None


def reference_script_or_skip(why: str = "") -> Path:
    """``kafka-ref``; the test is skipped (saying so, and ``why``) where Java or the
    reference distribution is missing: its tools run on the JVM."""
    script = reference_script()
    if shutil.which("java") is None or script is None:
        pytest.skip(
            "java or the reference Kafka (../shared/reference-kafka, or KAFKETTE_KAFKA_REF) "
            f"is missing{': ' + why if why else ''}"
        )
    return script
