"""``kafkette completion bash|zsh``: shell completion generated from the command's own parser.

The script is written from the argparse tree each time the command runs, so every subcommand,
action and option that exists then (a tool added tomorrow included) completes without a list
kept by hand, and without a completion library in the user's shell or in our dependencies
(argcomplete would run Python on every Tab; these scripts are plain shell). What completes:
subcommands and their actions, the options of the command typed so far, the choices of an
option or positional that has them (``--log-level``, ``completion bash|zsh``); any other value
falls back to file names, the shells' default. Hidden (``help=SUPPRESS``) entries stay hidden.

Both scripts hold the same data: one ``case`` branch per command path ("", "topics",
"topics create", ...) giving its subcommands, options, the options that take a value, and its
positional choices; a small function walks the words typed so far to find the path. Bash 3.2
(macOS's) suffices: no associative arrays.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field

from kafkette import __version__

SHELLS = ("bash", "zsh")

DESCRIPTION = """Print a completion script for SHELL, generated from this kafkette's commands.

bash: load it in the current shell, and add the same line to ~/.bashrc to keep it:
  source <(kafkette completion bash)
or save it where bash-completion looks for it:
  kafkette completion bash > ~/.local/share/bash-completion/completions/kafkette

zsh: save it as _kafkette in a directory on $fpath, before compinit runs in ~/.zshrc:
  mkdir -p ~/.zfunc && kafkette completion zsh > ~/.zfunc/_kafkette
  # in ~/.zshrc: fpath=(~/.zfunc $fpath); autoload -Uz compinit && compinit
or load it after compinit in ~/.zshrc:
  source <(kafkette completion zsh)

Regenerate the script after upgrading kafkette: it lists the commands of the version that
wrote it."""

EPILOG = """examples:
  source <(kafkette completion bash)              # Tab completes kafkette in this bash
  kafkette completion zsh > _kafkette             # a file for a directory on zsh's $fpath
"""

# Words a script can carry in single quotes and compgen's word list: no spaces, no quotes.
_PLAIN_WORD = re.compile(r"^[\w.,:/@%+=-]+$")


@dataclass
class CommandNode:
    """One command of the tree (``path`` "" is ``kafkette`` itself) as completion sees it."""

    path: str
    commands: dict[str, str] = field(default_factory=dict)  # subcommand -> its help
    options: dict[str, str] = field(default_factory=dict)  # option string -> its help
    valued: list[str] = field(default_factory=list)  # options that take a value
    choices: dict[str, list[str]] = field(default_factory=dict)  # option -> its choices
    positional_choices: list[str] = field(default_factory=list)


def command_nodes(parser: argparse.ArgumentParser) -> list[CommandNode]:
    """Every command of ``parser``'s tree, parents before their subcommands."""
    found: list[CommandNode] = []
    pending: list[tuple[str, argparse.ArgumentParser]] = [("", parser)]
    while pending:
        path, current = pending.pop(0)
        node = CommandNode(path)
        found.append(node)
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                hidden = {
                    choice.dest for choice in action._choices_actions
                    if choice.help == argparse.SUPPRESS
                }  # fmt: skip
                helps = {choice.dest: _help_text(choice) for choice in action._choices_actions}
                for name, sub in action.choices.items():
                    if name in hidden or not _PLAIN_WORD.match(name):
                        continue
                    node.commands[name] = helps.get(name, "")
                    pending.append((f"{path} {name}".strip(), sub))
            elif action.help == argparse.SUPPRESS:
                continue
            elif action.option_strings:
                for option in action.option_strings:
                    node.options[option] = _help_text(action)
                    if action.nargs != 0:
                        node.valued.append(option)
                        node.choices[option] = _choice_words(action)
            else:
                node.positional_choices += _choice_words(action)
    return found


def _help_text(action: argparse.Action) -> str:
    """The help line as ``--help`` shows it (``%(default)s`` expanded), on one line."""
    text = action.help or ""
    try:
        text = text % {**vars(action), "prog": ""}
    except (KeyError, TypeError, ValueError):
        pass
    return " ".join(text.split())


def _choice_words(action: argparse.Action) -> list[str]:
    if not isinstance(action.choices, (list, tuple)):
        return []  # none, or a range/dict/callable: file names, the shell's default
    return [str(c) for c in action.choices if _PLAIN_WORD.match(str(c))]


def _quoted(text: str) -> str:
    """``text`` in single quotes, for bash and zsh alike."""
    return "'" + text.replace("'", "'\\''") + "'"


def bash_script(parser: argparse.ArgumentParser) -> str:
    """The bash completion script for ``parser`` (``complete -F _kafkette kafkette``)."""
    nodes = command_nodes(parser)
    branches = [
        f"        {_quoted(n.path)})\n"
        f"            _kafkette_subs={_quoted(' '.join(n.commands))}\n"
        f"            _kafkette_opts={_quoted(' '.join(n.options))}\n"
        f"            _kafkette_valued={_quoted(' '.join(n.valued))}\n"
        f"            _kafkette_words={_quoted(' '.join(n.positional_choices))} ;;"
        for n in nodes
    ]
    values = [
        f"        {_quoted(f'{n.path} {option}')}) _kafkette_reply={_quoted(' '.join(words))} ;;"
        for n in nodes
        for option, words in n.choices.items()
        if words
    ]
    return BASH_TEMPLATE.format(
        version=__version__, branches="\n".join(branches), values="\n".join(values)
    )


def zsh_script(parser: argparse.ArgumentParser) -> str:
    """The zsh completion script for ``parser``: an ``#compdef`` file for ``$fpath``, which
    also registers itself with ``compdef`` when sourced."""
    nodes = command_nodes(parser)

    def described(entries: dict[str, str]) -> str:
        return " ".join(
            _quoted(f"{name}:{text}" if text else name) for name, text in entries.items()
        )

    def words(items: list[str]) -> str:
        return " ".join(_quoted(item) for item in items)

    branches = [
        f"        ({_quoted(n.path)})\n"
        f"            _kafkette_subs=({described(n.commands)})\n"
        f"            _kafkette_opts=({described(n.options)})\n"
        f"            _kafkette_valued=({words(n.valued)})\n"
        f"            _kafkette_words=({words(n.positional_choices)}) ;;"
        for n in nodes
    ]
    values = [
        f"        ({_quoted(f'{n.path} {option}')}) _kafkette_reply=({words(choices)}) ;;"
        for n in nodes
        for option, choices in n.choices.items()
        if choices
    ]
    return ZSH_TEMPLATE.format(
        version=__version__, branches="\n".join(branches), values="\n".join(values)
    )


SCRIPTS = {"bash": bash_script, "zsh": zsh_script}


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``kafkette completion SHELL`` (argparse only: the scripts are made when it runs)."""
    parser = commands.add_parser(
        "completion",
        help="print a bash or zsh completion script",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash or zsh")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the script for ``args.shell``, made from the whole ``kafkette`` parser."""
    from kafkette.cli import build_parser

    print(SCRIPTS[args.shell](build_parser()), end="")
    return 0


# The templates' own braces are doubled for str.format.
BASH_TEMPLATE = """\
# bash completion for kafkette {version}, written by `kafkette completion bash`.
# Load it with: source <(kafkette completion bash)

# The subcommands, options, options taking a value and positional choices of command $1.
_kafkette_node() {{
    case "$1" in
{branches}
        *) _kafkette_subs='' _kafkette_opts='' _kafkette_valued='' _kafkette_words='' ;;
    esac
}}

# The choices of option $2 of command $1 (none: bash completes file names).
_kafkette_values() {{
    _kafkette_reply=''
    case "$1 $2" in
{values}
    esac
}}

_kafkette() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" cmd='' word option='' i=1
    local _kafkette_subs _kafkette_opts _kafkette_valued _kafkette_words _kafkette_reply
    _kafkette_node ''
    # The command path typed so far: subcommand words, skipping options and their values.
    while [ "$i" -lt "$COMP_CWORD" ]; do
        word="${{COMP_WORDS[i]}}"
        if [[ " $_kafkette_valued " == *" $word "* ]]; then
            i=$((i + 1))
            [ "${{COMP_WORDS[i]}}" = '=' ] && i=$((i + 1))  # --option=value, split at '='
        elif [[ "$word" != -* && " $_kafkette_subs " == *" $word "* ]]; then
            cmd="${{cmd:+$cmd }}$word"
            _kafkette_node "$cmd"
        fi
        i=$((i + 1))
    done
    # The value of an option: `--option VALUE`, `--option=VALUE`.
    if [ "$cur" = '=' ]; then
        option="${{COMP_WORDS[COMP_CWORD - 1]}}"
        cur=''
    elif [ "$COMP_CWORD" -ge 2 ] && [ "${{COMP_WORDS[COMP_CWORD - 1]}}" = '=' ]; then
        option="${{COMP_WORDS[COMP_CWORD - 2]}}"
    elif [ "$COMP_CWORD" -ge 1 ]; then
        option="${{COMP_WORDS[COMP_CWORD - 1]}}"
    fi
    if [[ "$option" == -* && " $_kafkette_valued " == *" $option "* ]]; then
        _kafkette_values "$cmd" "$option"
        COMPREPLY=($(compgen -W "$_kafkette_reply" -- "$cur"))
        return 0
    fi
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$_kafkette_opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$_kafkette_subs $_kafkette_words" -- "$cur"))
    fi
    return 0
}}

complete -o bashdefault -o default -F _kafkette kafkette
"""

ZSH_TEMPLATE = """\
#compdef kafkette
# zsh completion for kafkette {version}, written by `kafkette completion zsh`.
# Save it as _kafkette in a directory on $fpath, or load it after compinit:
#   source <(kafkette completion zsh)

# The subcommands and options (NAME:HELP), options taking a value and positional choices of
# command $1.
_kafkette_node() {{
    _kafkette_subs=() _kafkette_opts=() _kafkette_valued=() _kafkette_words=()
    case "$1" in
{branches}
    esac
}}

# The choices of option $2 of command $1 (none: file names).
_kafkette_values() {{
    _kafkette_reply=()
    case "$1 $2" in
{values}
    esac
}}

_kafkette() {{
    local -a _kafkette_subs _kafkette_opts _kafkette_valued _kafkette_words _kafkette_reply
    local cmd='' word option=''
    local -i i=2
    _kafkette_node ''
    # The command path typed so far: subcommand words, skipping options and their values.
    while (( i < CURRENT )); do
        word=${{words[i]}}
        if (( ${{_kafkette_valued[(Ie)$word]}} )); then
            (( i += 1 ))
        # [[ ]], not (( )): in (( )) this nested expansion reads 0
        elif [[ $word != -* && ${{${{_kafkette_subs%%:*}}[(Ie)$word]}} != 0 ]]; then
            cmd=${{cmd:+$cmd }}$word
            _kafkette_node "$cmd"
        fi
        (( i += 1 ))
    done
    # The value of an option: `--option VALUE`, `--option=VALUE`.
    if [[ $PREFIX == -*=* ]]; then
        option=${{PREFIX%%=*}}
        compset -P '*='
    elif (( CURRENT > 2 )); then
        option=${{words[CURRENT - 1]}}
    fi
    if [[ $option == -* ]] && (( ${{_kafkette_valued[(Ie)$option]}} )); then
        _kafkette_values "$cmd" "$option"
        if (( $#_kafkette_reply )); then
            compadd -a _kafkette_reply
        else
            _files
        fi
        return
    fi
    if [[ $PREFIX == -* ]]; then
        _describe -t options option _kafkette_opts
    elif (( $#_kafkette_subs )); then
        _describe -t commands command _kafkette_subs
    elif (( $#_kafkette_words )); then
        compadd -a _kafkette_words
    else
        _files
    fi
}}

if [[ $funcstack[1] == _kafkette ]]; then
    _kafkette "$@"  # autoloaded from $fpath: this first call defined the functions
else
    compdef _kafkette kafkette
fi
"""
