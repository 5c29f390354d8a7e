"""The kafka-python range in pyproject.toml holds at both ends.

kafkette reads only kafka-python's shipped JSON message definitions (wire/schema.py), so
a release is usable when ``python -m kafkette.wire.self_check`` passes with it: every API
and version kafkette decodes is known to the definitions and round-trips. The newest
release is what the main install resolves to (checked in-process here); the lowest is
installed from the package index into a throwaway ``--target`` directory that shadows the
installed one (no venv to build: about 3 s with pip's cache), and the release just below it
must fail, so the floor is the real floor. Without the index, these two skip with the reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version as package_version
from pathlib import Path

import pytest

from kafkette.wire import self_check

ROOT = Path(__file__).resolve().parents[2]
# The last release below the floor: 2.x ships no JSON definitions at all.
BELOW_FLOOR = "2.3.3"


def _declared_range() -> tuple[str, str]:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for dependency in dependencies:
        match = re.fullmatch(r"kafka-python>=([\d.]+),<([\d.]+)", dependency.replace(" ", ""))
        if match:
            return match.group(1), match.group(2)
    raise AssertionError(f"no kafka-python>=LOW,<HIGH in {dependencies}")


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def _self_check_with(release: str, target: Path) -> subprocess.CompletedProcess[str]:
    """Install ``release`` alone into ``target`` and run the self-check with it shadowing
    the installed kafka-python; skips when pip cannot fetch it."""
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile",
         "--disable-pip-version-check", "--target", str(target), f"kafka-python=={release}"],
        capture_output=True, text=True, timeout=180, check=False,
    )
    if install.returncode != 0:
        reason = (install.stderr.strip().splitlines() or ["pip failed"])[-1]
        pytest.skip(f"pip could not install kafka-python=={release}: {reason}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        str(target), os.environ.get("PYTHONPATH", "")]))}
    return subprocess.run(
        [sys.executable, "-m", "kafkette.wire.self_check"],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )


def test_installed_release_is_inside_the_range_and_passes_the_self_check() -> None:
    low, high = _declared_range()
    installed = package_version("kafka-python")
    assert _release(low) <= _release(installed) < _release(high), (installed, low, high)
    checked, failures = self_check.check()
    assert failures == []
    assert checked > 100  # every version of every served API, not a handful


def test_lowest_release_of_the_range_passes_the_self_check(tmp_path: Path) -> None:
    low, _ = _declared_range()
    done = _self_check_with(low, tmp_path / "lowest")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"kafka-python {low}:" in done.stdout
    assert ", 0 failures" in done.stdout


def test_release_below_the_floor_fails_the_self_check(tmp_path: Path) -> None:
    low, _ = _declared_range()
    assert _release(BELOW_FLOOR) < _release(low)
    done = _self_check_with(BELOW_FLOOR, tmp_path / "below")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"kafka-python {BELOW_FLOOR}: no message definitions" in done.stdout
