"""``kafkette completion bash|zsh``: the scripts complete what the parser has, in real shells.

bash: the printed script is sourced in one bash, which calls ``_kafkette`` with
``COMP_WORDS``/``COMP_CWORD`` set as readline sets them and prints ``COMPREPLY``. zsh (when
installed; .ci/run does not install it): ``zsh -n``, then an interactive zsh on a pseudo
terminal (zsh/zpty) with compinit loads the script both ways the help tells (sourced, and
as ``_kafkette`` on ``$fpath``) and completes lines with Tab; a ``compadd`` wrapper writes down
each match compsys offers. No broker is needed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafkette.cli import build_parser
from kafkette.completion import command_nodes

TIMEOUT_S = 60


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """``parser``'s subcommands by name, read from argparse itself."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


TOP = subcommands(build_parser())


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two scripts as ``kafkette completion SHELL`` prints them, in files."""
    home = tmp_path_factory.mktemp("completion")
    found = {}
    for shell in ("bash", "zsh"):
        done = subprocess.run(
            [sys.executable, "-m", "kafkette", "completion", shell],
            capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
        )  # fmt: skip
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        found[shell] = home / f"kafkette.{shell}"
        found[shell].write_text(done.stdout)
    return found


# --- bash ----------------------------------------------------------------------------------

# Each case: the words up to the cursor (the last one is the word being completed).
BASH_CASES = [
    ["kafkette", ""],
    ["kafkette", "to"],
    ["kafkette", "topics", ""],
    ["kafkette", "topics", "create", "clicks", "--par"],
    ["kafkette", "topics", "create", "--partitions", "3", "--rep"],
    ["kafkette", "serve", "--log-level", ""],
    ["kafkette", "serve", "--log-level", "=", "W"],  # --log-level=W: readline splits at '='
    ["kafkette", "serve", "--te"],
    ["kafkette", "serve", "--data-dir", ""],
    ["kafkette", "completion", ""],
    ["kafkette", "-h", "topics", "d"],
]

BASH_DRIVER = r"""
source "$1"
complete -p kafkette
while IFS= read -r line; do
    eval "COMP_WORDS=($line)"
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _kafkette
    printf '%s\n' "${COMPREPLY[*]}"
done
"""


@pytest.fixture(scope="module")
def bash_replies(scripts: dict[str, Path]) -> dict[str, list[str]]:
    """``COMPREPLY`` for every case of ``BASH_CASES``, from one bash; key: the words joined."""
    lines = "".join(" ".join(f"'{w}'" for w in case) + "\n" for case in BASH_CASES)
    done = subprocess.run(
        ["bash", "-c", BASH_DRIVER, "bash", str(scripts["bash"])],
        input=lines, capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    registration, *replies = done.stdout.split("\n")[:-1]
    # Anything it does not offer (a value with no choices) falls back to file names.
    assert registration == "complete -o bashdefault -o default -F _kafkette kafkette"
    assert len(replies) == len(BASH_CASES), done.stdout
    return {" ".join(case): reply.split() for case, reply in zip(BASH_CASES, replies, strict=True)}


def test_bash_completes_the_subcommands_the_parser_has(bash_replies) -> None:
    assert bash_replies["kafkette "] == list(TOP)
    assert {"serve", "cluster", "topics", "produce", "completion"} <= set(TOP)
    assert bash_replies["kafkette to"] == ["topics"]
    actions = list(subcommands(TOP["topics"]))
    assert {"list", "create", "describe", "alter", "delete"} <= set(actions)
    assert bash_replies["kafkette topics "] == actions
    # A top-level option before the command does not stop the walk.
    assert bash_replies["kafkette -h topics d"] == [a for a in actions if a.startswith("d")]


def test_bash_completes_options_and_their_choices(bash_replies) -> None:
    assert bash_replies["kafkette topics create clicks --par"] == ["--partitions"]
    # An option's value (3) is skipped on the way to the cursor.
    assert bash_replies["kafkette topics create --partitions 3 --rep"] == ["--replication-factor"]
    assert bash_replies["kafkette serve --log-level "] == ["DEBUG", "INFO", "WARNING", "ERROR"]
    assert bash_replies["kafkette serve --log-level = W"] == ["WARNING"]
    assert bash_replies["kafkette serve --te"] == ["--temp"]
    assert bash_replies["kafkette completion "] == ["bash", "zsh"]
    # No choices: nothing from us, so bash's default completes file names.
    assert bash_replies["kafkette serve --data-dir "] == []


def test_hidden_commands_and_options_are_left_out() -> None:
    parser = argparse.ArgumentParser(prog="demo")
    parser.add_argument("--shown", choices=["a", "b"])
    parser.add_argument("--secret", help=argparse.SUPPRESS)
    commands = parser.add_subparsers()
    commands.add_parser("public", help="a command")
    commands.add_parser("internal", help=argparse.SUPPRESS)
    [top, public] = command_nodes(parser)
    assert list(top.commands) == ["public"]
    assert "--secret" not in top.options
    assert top.choices["--shown"] == ["a", "b"]
    assert public.path == "public"


# --- zsh -----------------------------------------------------------------------------------

needs_zsh = pytest.mark.skipif(
    shutil.which("zsh") is None,
    reason="zsh is not installed (.ci/run does not install it): the bash tests cover the logic",
)

# Sourced into the interactive zsh: compinit, the script (sourced, or found on $fpath), and
# Tab bound to a widget that completes, writes down the matches, then clears the line.
ZSH_SETUP = r"""
PS1='' RPS1=''
if [[ $KK_MODE == fpath ]]; then
    fpath=($KK_FPATH $fpath)
    autoload -Uz compinit && compinit -u -D
else
    autoload -Uz compinit && compinit -u -D
    source $KK_SCRIPT
fi
compadd() {
    if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
        builtin compadd "$@"
        return
    fi
    local -a kk_matches
    builtin compadd -A kk_matches "$@"
    (( $#kk_matches )) && print -rl -- $kk_matches >> $KK_OUT
    builtin compadd "$@"
}
zle -C kk-complete complete-word _main_complete
kk-tab() { zle kk-complete; BUFFER=''; print -r -- --done-- >> $KK_OUT }
zle -N kk-tab
bindkey -e '^I' kk-tab
print -r -- "--done-- $_comps[kafkette]" >> $KK_OUT
"""

# Types each line then Tab, waiting (bounded) for the widget's --done-- after each.
ZSH_DRIVER = r"""
zmodload zsh/zpty
wait_done() {
    repeat 400; do
        [[ $(tail -n 1 $KK_OUT) == --done--* ]] && return 0
        sleep 0.05
    done
    print -u2 "no completion within 20s"; exit 1
}
zpty -b kk zsh -f -i
zpty -w kk "source ${(q)KK_SETUP}"
for line in "$@"; do
    wait_done
    print -r -- "==> $line" >> $KK_OUT
    zpty -w -n kk "$line"$'\t'
done
wait_done
zpty -d kk
"""

ZSH_CASES = [
    "kafkette to",
    "kafkette topics ",
    "kafkette topics create clicks --par",
    "kafkette serve --log-level ",
    "kafkette serve --log-level=W",
    "kafkette completion ",
]


@needs_zsh
def test_zsh_script_parses(scripts: dict[str, Path]) -> None:
    done = subprocess.run(
        ["zsh", "-n", str(scripts["zsh"])], capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert scripts["zsh"].read_text().startswith("#compdef kafkette\n")


@needs_zsh
@pytest.mark.parametrize("mode", ["source", "fpath"])
def test_zsh_completes_with_compsys(scripts: dict[str, Path], tmp_path: Path, mode: str) -> None:
    functions = tmp_path / "functions"
    functions.mkdir()
    shutil.copy(scripts["zsh"], functions / "_kafkette")
    (tmp_path / "setup.zsh").write_text(ZSH_SETUP)
    out = tmp_path / "matches"
    out.write_text("")
    env = {
        **os.environ, "HOME": str(tmp_path), "KK_MODE": mode, "KK_FPATH": str(functions),
        "KK_SCRIPT": str(scripts["zsh"]), "KK_SETUP": str(tmp_path / "setup.zsh"),
        "KK_OUT": str(out),
    }  # fmt: skip
    done = subprocess.run(
        ["zsh", "-f", "-c", ZSH_DRIVER, "zsh", *ZSH_CASES],
        env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + out.read_text()
    registered, *rest = out.read_text().split("\n==> ")
    assert registered.strip() == "--done-- _kafkette"  # compdef/#compdef: kafkette -> _kafkette
    matches = {}
    for block in rest:
        line, *found = block.strip().split("\n")
        assert found[-1] == "--done--"
        matches[line] = found[:-1]
    assert matches == {
        "kafkette to": ["topics"],
        "kafkette topics ": list(subcommands(TOP["topics"])),
        "kafkette topics create clicks --par": ["--partitions"],
        "kafkette serve --log-level ": ["DEBUG", "INFO", "WARNING", "ERROR"],
        "kafkette serve --log-level=W": ["WARNING"],
        "kafkette completion ": ["bash", "zsh"],
    }, json.dumps(matches, indent=1)
