"""The shell engine's conformance battery (issue 17; docs/protocol.md §3.4.1): command shapes as DATA.

Every runner of the agent's shell runs the same table: the local runtime through a real backend and the
Python client, the headless editor (`oh attach`), the engine host process, and the VS Code extension
in real VS Code (its TypeScript runner reads this table as JSON: ``python tests/shell/battery.py``; stdlib only).
Nothing here assumes a runtime: no paths, no Python, only what a POSIX terminal running bash or zsh
shows.

A case is ``{"name", "steps": [step, ...], "shells"?: ["bash"|"zsh"]}``; cases run in order in one
shell, each starting in a fresh empty directory (the runner ``cd``s there first). A step is one of

- ``{"run": text}``: a new command; ``timeout`` (seconds) makes it a soft timeout: the observation
  comes back while it still runs (``code`` -1); ``max_output`` (characters) as the run argument;
- ``{"input": text}``: typed into the running command and Enter (``is_input``), then wait like ``run``;
- ``{"key": "C-c" | "C-d" | "C-z"}``: the key, then wait like ``run``;

and what its observation must show: ``code`` (exact int, or ``"nonzero"``), ``out`` (the exact
output), ``has`` / ``lacks`` (substrings), ``re`` (a regex the whole output must match),
``restarted`` (the shell itself ended and was replaced: ``exit N``, ``set -e``, ``exec``).
"""

from __future__ import annotations

import json
import sys

BIG_LINE = 200_000
EXEC_WAIT = 20  # seconds: an `exec` of the shell that is not seen to end by then has failed
MANY_LINES = 20_000

NESTED_INTERACTIVE = {  # an interactive shell inside the agent's, writing nested-42 into ./o
    "bash": "echo 'echo nested-$((6*7)) >o' | bash --norc -i",  # (an rc could replace PROMPT_COMMAND)
    "zsh": "zsh -i -c 'echo nested-$((6*7)) >o' </dev/null",
}

# `exec` of the shell itself (issue 30) and the `exec` shapes around it; also run on their own, in every
# sandbox level and the clean shell (tests/shell/test_engine_host.py).
EXEC_CASES: list[dict] = [
    # The command ends at once (a soft timeout would say it did not:
    # code -1) with 0 and no output (the new shell's startup output is the live view's, as at oh's start);
    # the next command runs in the new shell: a plain variable is gone, exports and the directory are kept.
    *(
        {
            "name": f"exec of the shell: {run}",
            "shells": shells,
            "steps": [
                {"run": "v=old; export KEPT=kept; mkdir d && cd d", "code": 0},
                {"run": run, "timeout": EXEC_WAIT, "code": 0, "out": ""},
                {"run": 'echo "${v-unset} $KEPT ${EXEC_VAR-} $(basename "$PWD")"', "code": 0, "out": out},
                {"run": "v=new; (exit 3)", "code": 3},
                {"run": "echo $v $?", "code": 0, "out": "new 3\n"},
            ],
        }
        for run, shells, out in (
            ("exec bash", ["bash"], "unset kept  d\n"),
            ("exec bash -l", ["bash"], "unset kept  d\n"),
            ("exec bash --norc", ["bash"], "unset kept  d\n"),
            ("exec zsh", ["zsh"], "unset kept  d\n"),
            ("exec zsh -l", ["zsh"], "unset kept  d\n"),
            ('exec "$SHELL"', ["bash", "zsh"], "unset kept  d\n"),
            ("exec env EXEC_VAR=set $SHELL", ["bash", "zsh"], "unset kept set d\n"),
        )
    ),
    {
        "name": "exec of the shell twice, then exit",
        "steps": [
            {"run": "exec $SHELL", "timeout": EXEC_WAIT, "code": 0, "out": ""},
            {"run": "exec $SHELL", "timeout": EXEC_WAIT, "code": 0, "out": ""},
            {"run": "echo again", "code": 0, "out": "again\n"},
            {"run": "exit 4", "code": 4, "restarted": True},
            {"run": "echo alive", "code": 0, "out": "alive\n"},
        ],
    },
    {
        # more than a shell's startup ever prints: held after the exec, then handed on whole and in order
        "name": "exec of a program with long output",
        "steps": [
            {
                "run": f"exec sh -c 'seq 1 {MANY_LINES}; exit 2'",
                "max_output": 1_000_000,
                "timeout": EXEC_WAIT,
                "code": 2,
                "out": "".join(f"{i}\n" for i in range(1, MANY_LINES + 1)),
                "restarted": True,
            }
        ],
    },
    {
        "name": "output before an exec of the shell is the command's",
        "steps": [{"run": "echo before; exec $SHELL", "timeout": EXEC_WAIT, "code": 0, "out": "before\n"}],
    },
    {
        "name": "exec of a program that ends, from the new shell",
        "steps": [
            {"run": "exec $SHELL", "timeout": EXEC_WAIT, "code": 0},
            {"run": "exec sleep 0.1", "timeout": EXEC_WAIT, "code": 0, "restarted": True},
            {"run": "exec false", "timeout": EXEC_WAIT, "code": 1, "restarted": True},
            {"run": "echo alive", "code": 0, "out": "alive\n"},
        ],
    },
    # A shell that an exec'd program starts is another process: oh's boot in its environment does nothing
    # there (its markers, on the terminal whatever its stdout, would end the command early, wrongly). Nested
    # shells of the agent's shell get no boot at all. Interactive: bash reads the pipe (its PROMPT_COMMAND
    # runs), zsh -i reads the terminal, so it gets -c (it still reads its .zshrc, oh's ZDOTDIR's after an exec).
    *(
        {
            "name": f"a shell started by an exec'd program gets no hooks ({shell})",
            "shells": [shell],
            "steps": [
                {
                    "run": f"exec sh -c '{nested.replace(chr(39), chr(34))} >/dev/null 2>&1; cat o; exit 5'",
                    "timeout": EXEC_WAIT,
                    "code": 5,
                    "out": "nested-42\n",
                    "restarted": True,
                }
            ],
        }
        for shell, nested in NESTED_INTERACTIVE.items()
    ),
    *(
        {
            "name": f"nested shells emit no markers ({shell})",
            "shells": [shell],
            "steps": [
                {"run": "$SHELL -c 'echo hi'; echo $?", "timeout": EXEC_WAIT, "code": 0, "out": "hi\n0\n"},
                {
                    "run": f"{nested} >/dev/null 2>&1; echo outer-$?; cat o",
                    "timeout": EXEC_WAIT,
                    "code": 0,
                    "out": "outer-0\nnested-42\n",
                },
            ],
        }
        for shell, nested in NESTED_INTERACTIVE.items()
    ),
    {
        "name": "exec with only redirections keeps them for the next commands",
        "steps": [
            {"run": "echo three > f; exec 3<f", "timeout": EXEC_WAIT, "code": 0, "out": ""},
            {"run": "read -r l <&3; echo got-$l", "timeout": EXEC_WAIT, "code": 0, "out": "got-three\n"},
            {"run": "exec 4>&1 >log 2>&1; echo hidden", "timeout": EXEC_WAIT, "code": 0, "out": ""},
            {"run": "echo also-hidden; false", "timeout": EXEC_WAIT, "code": 1, "out": ""},
            {
                # (the user's prompt hooks printed into the log too, as in a terminal)
                "run": "exec 1>&4 2>&1 4>&- 3<&-; grep -o '[a-z-]*hidden' log",
                "timeout": EXEC_WAIT,
                "code": 0,
                "out": "hidden\nalso-hidden\n",
            },
        ],
    },
]

CASES: list[dict] = [
    {"name": "echo", "steps": [{"run": "echo hi", "code": 0, "out": "hi\n"}]},
    {"name": "empty output", "steps": [{"run": "true", "code": 0, "out": ""}]},
    {"name": "false", "steps": [{"run": "false", "code": 1, "out": ""}]},
    {
        "name": "$? of the previous command",
        "steps": [{"run": "(exit 3)", "code": 3}, {"run": "echo $?", "code": 0, "out": "3\n"}],
    },
    {
        "name": "set -e with a failing && list keeps the shell",
        "steps": [
            {"run": "set -e; false && true", "code": 1},
            {"run": "set +e; echo kept", "code": 0, "out": "kept\n"},
        ],
    },
    {"name": "slow command printing nothing", "steps": [{"run": "sleep 0.3", "code": 0, "out": ""}]},
    {"name": "subshell exit code", "steps": [{"run": "(exit 7)", "code": 7, "out": ""}]},
    {
        "name": "subshell with output (a VS Code shell-integration defect)",
        "steps": [
            {"run": "mkdir sub && (cd sub && pwd -P | sed 's|.*/||')", "code": 0, "out": "sub\n"},
            {"run": 'basename "$PWD" | grep -c sub', "code": 1, "out": "0\n"},
        ],
    },
    {
        "name": "pipeline status is the last command's",
        "steps": [{"run": "false | true", "code": 0}, {"run": "true | false", "code": 1}],
    },
    {"name": "pipefail in a subshell", "steps": [{"run": "(set -o pipefail; false | true)", "code": 1}]},
    {
        "name": "and-or list",
        "steps": [
            {"run": "false && echo no || echo yes", "code": 0, "out": "yes\n"},
            {"run": "true && (exit 4)", "code": 4},
        ],
    },
    {
        "name": "multi-line script",
        "steps": [
            {
                "run": 'x=1\nif [ "$x" = 1 ]; then\n  echo one\nfi\nfor i in a b; do\n  echo "$i"\ndone',
                "code": 0,
                "out": "one\na\nb\n",
            }
        ],
    },
    {"name": "quoted heredoc", "steps": [{"run": "cat <<'EOF'\nline $HOME\nEOF", "code": 0, "out": "line $HOME\n"}]},
    {"name": "heredoc with expansion", "steps": [{"run": "cat <<EOF\n$((1 + 2))\nEOF", "code": 0, "out": "3\n"}]},
    {
        "name": "function persists",
        "steps": [
            {"run": 'greet() { echo "hello $1"; }', "code": 0, "out": ""},
            {"run": "greet bob", "code": 0, "out": "hello bob\n"},
        ],
    },
    {"name": "function return code", "steps": [{"run": "f() { return 5; }; f", "code": 5, "out": ""}]},
    {
        "name": "cd persists",
        "steps": [{"run": "mkdir d1 && cd d1", "code": 0}, {"run": 'basename "$PWD"', "code": 0, "out": "d1\n"}],
    },
    {
        "name": "cd -",
        "steps": [
            {"run": "mkdir a b && cd a && cd ../b && cd - >/dev/null", "code": 0},
            {"run": 'basename "$PWD"', "out": "a\n"},
        ],
    },
    {
        "name": "pushd and popd",
        "steps": [
            {"run": 'mkdir p && pushd p >/dev/null && basename "$PWD"', "code": 0, "out": "p\n"},
            {"run": "popd >/dev/null && [ -d p ] && echo back", "code": 0, "out": "back\n"},
        ],
    },
    {
        "name": "export persists",
        "steps": [
            {"run": "export OH_BATTERY_V=abc", "code": 0},
            {"run": "sh -c 'echo $OH_BATTERY_V'", "code": 0, "out": "abc\n"},
        ],
    },
    {"name": "shell variable persists", "steps": [{"run": "v=5", "code": 0}, {"run": "echo $v", "out": "5\n"}]},
    {
        "name": "declared array persists",
        "steps": [{"run": "declare -a arr=(1 2 3)", "code": 0}, {"run": "echo ${#arr[@]}", "out": "3\n"}],
    },
    {
        "name": "alias persists",
        "steps": [{"run": "alias hh='echo aliased'", "code": 0}, {"run": "hh", "code": 0, "out": "aliased\n"}],
    },
    {
        "name": "source",
        "steps": [{"run": "printf 'SRCV=42\\n' > s.sh && . ./s.sh && echo $SRCV", "code": 0, "out": "42\n"}],
    },
    {
        "name": "tool on an exported PATH",
        "steps": [
            {
                "run": (
                    "mkdir bin && printf '#!/bin/sh\\necho tool\\n' > bin/mytool && chmod +x bin/mytool && export "
                    'PATH="$PWD/bin:$PATH"'
                ),
                "code": 0,
            },
            {"run": "mytool", "code": 0, "out": "tool\n"},
        ],
    },
    {"name": "stderr is merged", "steps": [{"run": "echo out; echo err >&2", "code": 0, "out": "out\nerr\n"}]},
    {"name": "no trailing newline", "steps": [{"run": "printf abc", "code": 0, "out": "abc"}]},
    {
        "name": "command not found",
        "steps": [{"run": "no_such_command_oh_battery", "code": 127, "has": ["no_such_command_oh_battery"]}],
    },
    {"name": "ls error", "steps": [{"run": "ls ./does-not-exist", "code": "nonzero", "has": ["does-not-exist"]}]},
    {
        "name": "syntax error leaves a working shell",
        "steps": [
            {"run": "echo start; fi", "code": "nonzero", "lacks": ["start\n"]},
            {"run": "echo fine", "code": 0, "out": "fine\n"},
        ],
    },
    {"name": "killed by a signal", "steps": [{"run": "sh -c 'kill -9 $$'", "code": 137}]},
    {"name": "unicode", "steps": [{"run": "echo 'héllo wörld 中文 🎉'", "code": 0, "out": "héllo wörld 中文 🎉\n"}]},
    {
        "name": "200 KB line",
        "steps": [
            {
                "run": f"head -c {BIG_LINE} /dev/zero | tr '\\0' a; echo",
                "max_output": 1_000_000,
                "code": 0,
                "out": "a" * BIG_LINE + "\n",
            }
        ],
    },
    {
        "name": "20,000 lines",
        "steps": [
            {
                "run": f"seq 1 {MANY_LINES}",
                "max_output": 1_000_000,
                "code": 0,
                "out": "".join(f"{i}\n" for i in range(1, MANY_LINES + 1)),
            }
        ],
    },
    {
        "name": "a 100 KB heredoc (no line-length limit on the way in)",
        "steps": [
            {
                "run": "cat <<'EOF' > big.txt\n" + "x" * 100_000 + "\nEOF\nwc -c < big.txt | tr -d ' '",
                "code": 0,
                "out": "100001\n",
            }
        ],
    },
    {
        "name": "a directory with spaces and unicode",
        "steps": [
            {"run": "mkdir 'dir with spaces é' && cd 'dir with spaces é'", "code": 0},
            {"run": 'basename "$PWD"', "code": 0, "out": "dir with spaces é\n"},
        ],
    },
    {
        "name": "max_output truncates with the marker",
        "steps": [
            {
                "run": "seq 1 100000",
                "max_output": 2000,
                "code": 0,
                "has": ["characters truncated", "\n99999\n100000\n"],
                "re": r"1\n2\n3\n[\s\S]*",
            }
        ],
    },
    {"name": "carriage-return progress", "steps": [{"run": "printf 'a\\rb\\rc\\n'", "code": 0, "out": "c\n"}]},
    {
        "name": "percent progress",
        "steps": [
            {
                "run": "for i in 10 50 100; do printf '\\r%s%%' $i; done; echo; echo done",
                "code": 0,
                "out": "100%\ndone\n",
            }
        ],
    },
    {"name": "backspaces", "steps": [{"run": "printf 'abc\\b\\bX\\n'", "code": 0, "out": "aXc\n"}]},
    {
        "name": "cursor up",
        "steps": [{"run": "printf 'one\\ntwo\\n\\033[2A\\rONE\\n\\n'", "code": 0, "out": "ONE\ntwo\n"}],
    },
    {
        "name": "colours are stripped",
        "steps": [{"run": "printf '\\033[1;31mred\\033[0m plain\\n'", "code": 0, "out": "red plain\n"}],
    },
    {
        "name": "a terminal",
        "steps": [{"run": '[ -t 0 ] && [ -t 1 ] && echo tty; echo "$TERM"', "code": 0, "out": "tty\nxterm-256color\n"}],
    },
    {
        "name": "pager does not block",
        "steps": [{"run": "printf 'p1\\np2\\n' | ${PAGER:-less}", "code": 0, "out": "p1\np2\n"}],
    },
    {
        "name": "command that closes stdout",
        "steps": [
            {"run": "sh -c 'exec >&-; echo gone 2>/dev/null; echo still >&2'", "has": ["still\n"], "lacks": ["gone"]},
            {"run": "echo ok", "out": "ok\n"},
        ],
    },
    {
        "name": "ulimit",
        "steps": [
            {"run": "ulimit -n", "code": 0, "re": r"(\d+|unlimited)\n"},
            {"run": "(ulimit -n 64; ulimit -n)", "code": 0, "out": "64\n"},
        ],
    },
    {
        "name": "trap",
        "steps": [{"run": "trap 'echo trapped' USR1; kill -USR1 $$; trap - USR1", "code": 0, "out": "trapped\n"}],
    },
    {
        "name": "exit trap of a subshell",
        "steps": [{"run": "(trap 'echo bye' EXIT; echo hi)", "code": 0, "out": "hi\nbye\n"}],
    },
    {
        "name": "output over time, then an exit code",
        "steps": [{"run": "for i in 1 2 3; do echo $i; sleep 0.05; done; (exit 2)", "code": 2, "out": "1\n2\n3\n"}],
    },
    {"name": "background job and wait", "steps": [{"run": "(sleep 0.1; echo bg) & wait", "code": 0, "has": ["bg\n"]}]},
    {
        "name": "job notice never in the next command",
        "steps": [{"run": "sleep 0.2 &", "code": 0}, {"run": "sleep 0.6; echo next", "code": 0, "out": "next\n"}],
    },
    {
        "name": "killed job notice never in the next command",
        "steps": [
            {"run": "sleep 100 &", "code": 0},
            {"run": "kill -9 $! && sleep 0.3; echo after", "code": 0, "out": "after\n"},
            {"run": "echo later", "out": "later\n"},
        ],
    },
    {
        "name": "read a line from stdin",
        "steps": [
            {"run": 'read -r line; echo "got [$line]"', "timeout": 1, "code": -1},
            {"input": "some text", "code": 0, "out": "got [some text]\n"},
        ],
    },
    {
        "name": "a prompt shows while waiting",
        "steps": [
            {
                "run": "printf 'Continue? [y/N] '; read -r ans; echo \"answer=$ans\"",
                "timeout": 1,
                "code": -1,
                "has": ["Continue? [y/N]"],
            },
            {"input": "y", "code": 0, "out": "answer=y\n"},
        ],
    },
    {
        "name": "password prompt is not echoed",
        "steps": [
            {
                "run": "stty -echo; printf 'Password: '; read -r pw; stty echo; echo; echo \"len ${#pw}\"",
                "timeout": 1,
                "code": -1,
                "has": ["Password:"],
            },
            {"input": "hunter2", "code": 0, "has": ["len 7\n"], "lacks": ["hunter2"]},
        ],
    },
    {
        "name": "head reads one line",
        "steps": [{"run": "head -n 1", "timeout": 1, "code": -1}, {"input": "first", "code": 0, "out": "first\n"}],
    },
    {
        "name": "C-c interrupts",
        "steps": [
            {"run": "sleep 30", "timeout": 0.5, "code": -1},
            {"key": "C-c", "code": 130},
            {"run": "echo alive", "code": 0, "out": "alive\n"},
        ],
    },
    {
        "name": "C-d ends input",
        "steps": [
            {"run": "cat", "timeout": 0.5, "code": -1},
            {"key": "C-d", "code": 0},
            {"run": "echo alive", "out": "alive\n"},
        ],
    },
    {
        "name": "C-z stops the job",
        "steps": [
            {"run": "sleep 30", "timeout": 0.5, "code": -1},
            {"key": "C-z", "code": 148},
            {"run": "kill -9 %%; echo alive", "has": ["alive\n"]},
        ],
    },
    {
        "name": "set -e ends the shell",
        "steps": [
            {"run": "set -e; false; echo unreachable", "code": 1, "restarted": True, "lacks": ["unreachable"]},
            {"run": "echo alive", "code": 0, "out": "alive\n"},
        ],
    },
    {
        "name": "a program that leaves the terminal raw does not break the next command",
        "steps": [
            {"run": "stty raw -echo; echo left-raw", "code": 0, "has": ["left-raw"]},
            {"run": "echo next-fine", "code": 0, "out": "next-fine\n"},
        ],
    },
    {
        "name": "exit N",
        "steps": [{"run": "exit 3", "code": 3, "restarted": True}, {"run": "echo alive", "code": 0, "out": "alive\n"}],
    },
    {
        "name": "exec",
        "steps": [
            {"run": "exec sh -c 'echo replaced; exit 6'", "code": 6, "has": ["replaced"], "restarted": True},
            {"run": "echo alive", "out": "alive\n"},
        ],
    },
    *EXEC_CASES,
]


def shells_of(case: dict) -> tuple[str, ...]:
    return tuple(case.get("shells", ("bash", "zsh")))


def check(step: dict, output: str, code: int | None, restarted: bool) -> list[str]:
    """What is wrong with one observation (empty: it conforms)."""
    import re

    problems = []
    want = step.get("code")
    if want == "nonzero":
        if code in (0, None, -1):
            problems.append(f"exit code {code}, wanted nonzero")
    elif want is not None and code != want:
        problems.append(f"exit code {code}, wanted {want}")
    if "out" in step and output != step["out"]:
        shown = output if len(output) < 300 else output[:150] + "…" + output[-150:]
        problems.append(
            f"output {shown!r} ({len(output)} chars), wanted {step['out'][:300]!r} ({len(step['out'])} chars)"
        )
    for s in step.get("has", ()):
        if s not in output:
            problems.append(f"output lacks {s!r}: {output[-300:]!r}")
    for s in step.get("lacks", ()):
        if s in output:
            problems.append(f"output holds {s!r}: {output[-300:]!r}")
    if "re" in step and re.fullmatch(step["re"], output) is None:
        problems.append(f"output {output[:200]!r} does not match {step['re']!r}")
    if "restarted" in step and bool(restarted) != step["restarted"]:
        problems.append(f"restarted={restarted}, wanted {step['restarted']}")
    return problems


if __name__ == "__main__":  # the table as JSON, for runners in other languages (the VS Code extension)
    json.dump({"cases": CASES}, sys.stdout, ensure_ascii=False)
