"""Every `oh …` the README shows — in its command blocks and inline — names a command that exists, with options
that command takes (walk 2: the README grew `oh watch [INSTANCE] [--plain|--json]`, `./scripts/oh watch`, `oh start
-d`; a renamed flag must fail here, not on a new user's terminal). What the commands then do is tested where each
feature is; the install blocks run for real in tests/distribution/test_sdist.py."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INVOCATION = re.compile(r"(?:\./scripts/|\.venv/bin/)?\boh ([a-z-].*)")
OPTION = re.compile(r"^--?[a-zA-Z][\w-]*")


def _snippets(text: str) -> list[str]:
    """Lines of the README's shell blocks (without their comments) and its inline code spans."""
    lines = [
        line.split("  #", 1)[0].strip()
        for block in re.findall(r"```(?:sh|bash)?\n(.*?)```", text, re.S)
        for line in block.splitlines()
    ]
    return lines + re.findall(r"`([^`\n]+)`", text)


def _invocations(text: str) -> list[str]:
    """Each `oh …` in a snippet, cut at shell separators (`;`, `&&`, `|`, `$(`)."""
    found = []
    for snippet in _snippets(text):
        for part in re.split(r";|&&|\s\|\s|\$\(", snippet):
            m = INVOCATION.match(part.strip())
            if m:
                head, *rest = m.group(1).split("`", 1)[0].split(" ", 1)  # `oh run/read/write/edit`: each of them
                found += [" ".join([name, *rest]) for name in head.split("/")]
    return found


def _check(invocation: str, root) -> list[str]:
    words, command, path = invocation.split(), root, []
    while words and words[0] in getattr(command, "commands", {}):
        command = command.commands[words[0]]
        path.append(words.pop(0))
    if command is root:
        return [f"`oh {invocation}`: no such command"] if words and not words[0].startswith("-") else []
    known = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)} | {"-h", "--help"}
    wrong = []
    for word in words:
        if word == "--":
            break  # the command oh runs, not oh's options
        for alternative in word.strip("[](),.'\"").split("|"):  # `[--plain|--json]`, `--append/--create`
            for piece in alternative.split("/"):
                m = OPTION.match(piece.strip("[]"))
                if m and m.group(0) not in known:
                    wrong.append(f"`oh {invocation}`: oh {' '.join(path)} has no option {m.group(0)}")
    return wrong


def test_every_oh_command_in_the_readme_exists_with_its_options():
    import typer.main

    from oh.cli import app

    root = typer.main.get_command(app)
    invocations = _invocations((REPO / "README.md").read_text())
    assert len(invocations) > 150 and any(i.startswith("watch") for i in invocations), len(invocations)
    wrong = [problem for invocation in invocations for problem in _check(invocation, root)]
    assert not wrong, "\n".join(wrong)
