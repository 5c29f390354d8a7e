"""The distribution maps wire/, log/, broker/, tools/ and console/ into kafkette and leaks
nothing else."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP_FOLDERS = {
    "wire": "kafkette.wire",
    "log": "kafkette.log",
    "broker": "kafkette.broker",
    "tools": "kafkette.tools",
    "console": "kafkette.console",
}


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_python_package_folder_is_listed() -> None:
    listed = set(_setuptools()["packages"])
    on_disk = {"kafkette"}
    for folder, package in TOP_FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            on_disk.add(".".join((package, *relative)))
    assert on_disk == listed, f"pyproject packages differ from folders: {on_disk ^ listed}"


def test_only_kafkette_is_a_top_level_package() -> None:
    setuptools = _setuptools()
    assert {p.split(".")[0] for p in setuptools["packages"]} == {"kafkette"}
    assert setuptools["package-dir"] == {
        "kafkette": "src/kafkette",
        **{package: folder for folder, package in TOP_FOLDERS.items()},
    }
