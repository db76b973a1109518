"""The consent battery (issue 25) as data: each case is rules + an action + the verdict expected at each
level, and a real effect (the marker file ``M``, or the file named by ``marker``) that must exist after
the action exactly when the verdict is ``allow``. test_consent_battery.py runs every case through a
real in-process backend (local runtime, real bash, real kernel); tests/protocol/test_consent_issue25.py
checks the same rows against the pure decision, fast.

``{ws}`` in a command or path is the workspace, ``{pid}`` the backend's process, ``{state}`` oh's state
directory (the policy's protected directory, holding ``sessions/s.json``). ``setup`` is a shell script run
in the workspace first (no gate): it builds the repository, the symlinks, the fake programs an attack needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LEVELS = ("never", "risky", "commands")  # `all` asks whatever `commands` asks: rows that differ add it
ALL = ("never", "risky", "commands", "all")


@dataclass(frozen=True)
class Case:
    name: str
    action: dict[str, Any]  # {"action": KIND, "args": {...}}
    expect: dict[str, str]  # level -> allow | ask | deny; "*" for the rest
    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    setup: str = ""
    marker: str = "M"  # exists after the action exactly when it was allowed ("" = no file effect)
    pre: tuple[str | dict[str, Any], ...] = ()  # commands (or actions) the gate allows first, same agent shell
    levels: tuple[str, ...] = LEVELS
    changed: str = ""  # a file that exists before: its content changes exactly when the action was allowed

    def verdict(self, level: str) -> str:
        return self.expect.get(level, self.expect.get("*", "ask"))


def run(command: str, **args: Any) -> dict[str, Any]:
    return {"action": "run", "args": {"command": command, **args}}


def act(kind: str, **args: Any) -> dict[str, Any]:
    return {"action": kind, "args": args}


NEVER_RUNS = {"never": "allow", "*": "ask"}  # bash runs it; every level but never asks
GIT_REPO = "git init -q . && git config user.email t@t && git config user.name t"
# docs/ made a git directory (HEAD, objects/, refs/, a config whose fsmonitor runs): git's discovery takes it
BARE_DOCS = (
    GIT_REPO
    + " && mkdir -p docs/objects docs/refs && echo 'ref: refs/heads/main' > docs/HEAD && printf '[core]\\n"
    + "\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = ..\\n\\tfsmonitor = touch {ws}/M\\n'"
    + " > docs/config"
)
FAKE_GIT = "mkdir -p tools && printf '#!/bin/sh\\ntouch {ws}/M\\n' > tools/git && chmod +x tools/git"

CASES: list[Case] = [
    # -- assignments bash evaluates (root cause 1)
    Case("arith OPTIND", run("x='a[$(touch M)]'; OPTIND=x"), NEVER_RUNS, allow=("run: git status",)),
    Case("arith RANDOM", run("x='a[$(touch M)]'; RANDOM=x"), NEVER_RUNS),
    Case("arith in [[ -eq ]]", run("x='a[$(touch M)]'; [[ x -eq 1 ]]"), NEVER_RUNS, allow=("run: echo *",)),
    Case("array subscript", run("x='b[$(touch M)]'; a[x]=1"), NEVER_RUNS),
    Case("subscript in ${a[x]}", run("x='a[$(touch M)]'; echo ${b[x]}"), NEVER_RUNS, allow=("run: echo *",)),
    Case("${x:offset}", run("x='a[$(touch M)]'; s=abc; echo ${s:x}"), NEVER_RUNS, allow=("run: echo *",)),
    Case("${!x} indirection", run("x='a[$(touch M)]'; echo ${!x}"), NEVER_RUNS, allow=("run: echo *",)),
    Case("${x@P} prompt expansion", run("x='$(touch M)'; echo ${x@P}"), NEVER_RUNS, allow=("run: echo *",)),
    Case("declare -i", run("x='a[$(touch M)]'; declare -i y=x"), NEVER_RUNS, allow=("run: declare *",)),
    Case("declare -n", run("declare -n r='a[$(touch M)]'; echo $r"), NEVER_RUNS, allow=("run: echo *",)),
    Case("printf -v subscript", run("printf -v 'a[$(touch M)]' %s 1"), NEVER_RUNS, allow=("run: printf *",)),
    Case("read subscript", run("read 'a[$(touch M)]' <<< 1"), NEVER_RUNS, allow=("run: read *",)),
    Case("unset subscript", run("declare -a a; unset 'a[$(touch M)]'"), NEVER_RUNS, allow=("run: unset *",)),
    Case("PROMPT_COMMAND", run("PROMPT_COMMAND+='touch M;'"), NEVER_RUNS, allow=("run: git status",)),
    Case(
        "PATH then an allowed git",
        run("PATH=./tools:$PATH; git status"),
        NEVER_RUNS,
        allow=("run: git status",),
        setup=FAKE_GIT,
    ),
    Case(
        "PATH in front of an allowed git",
        run("PATH=./tools:$PATH git status"),
        {"never": "allow", "*": "ask"},
        allow=("run: git status",),
        setup=FAKE_GIT,
    ),
    Case(
        "export PATH",
        run("export PATH=./tools:$PATH; git status"),
        NEVER_RUNS,
        allow=("run: git status", "run: export *"),
        setup=FAKE_GIT,
    ),
    Case(
        "BASH_ENV",
        run("BASH_ENV=./s.sh bash -c true"),
        NEVER_RUNS,
        allow=("run: bash *",),
        setup="echo 'touch M' > s.sh",
    ),
    # -- the action's env and cwd (root cause 2)
    Case(
        "env field PATH",
        run("git status", env={"PATH": "{ws}/tools:/usr/bin:/bin"}),
        NEVER_RUNS,
        allow=("run: git status",),
        setup=FAKE_GIT,
    ),
    Case(
        "redirect relative to cwd",
        run("echo x > secret.md", cwd="docs"),
        {"*": "deny"},
        allow=("run: echo *",),
        deny=("write: docs/secret.md",),
        setup="mkdir docs",
        marker="docs/secret.md",
    ),
    Case(
        "redirect after cd in the line",
        run("cd .git && echo x > M"),
        {"never": "allow", "*": "ask"},
        allow=("run: echo *", "run: cd *"),
        setup=GIT_REPO,
        marker=".git/M",
    ),
    Case(
        "redirect after an earlier cd",
        run("echo x > M"),
        {"never": "allow", "*": "ask"},
        allow=("run: echo *", "run: cd *"),
        setup=GIT_REPO,
        pre=("cd .git",),
        marker=".git/M",
        levels=("never", "commands"),
    ),
    # -- paths as the kernel opens them (root cause 3)
    Case("./.env", act("write", path="./.env", content="x"), {"*": "deny"}, deny=("write: .env",), marker=".env"),
    Case(
        "//ws/.env", act("write", path="/{ws}/.env", content="x"), {"*": "deny"}, deny=("write: .env",), marker=".env"
    ),
    Case(
        "sub/../.env",
        act("write", path="sub/../.env", content="x"),
        {"*": "deny"},
        deny=("write: .env",),
        setup="mkdir sub",
        marker=".env",
    ),
    Case(
        "redirect to ./.env",
        run("echo x > ./.env"),
        {"*": "deny"},
        allow=("run: echo *",),
        deny=("write: .env",),
        marker=".env",
    ),
    Case(
        "symlink write into a hook",
        act("write", path="docs/notes.md", content="#!/bin/sh\n"),
        {"never": "allow", "*": "ask"},
        allow=("write: docs/**",),
        setup=GIT_REPO + " && mkdir docs && ln -s ../.git/hooks/pre-commit docs/notes.md",
        marker=".git/hooks/pre-commit",
    ),
    Case(
        "symlink read of a denied file",
        act("read", path="docs/link"),
        {"*": "deny"},
        allow=("read: docs/**",),
        deny=("read: secret.txt",),
        setup="mkdir docs && echo s3cret > secret.txt && ln -s ../secret.txt docs/link",
        marker="",
        levels=ALL,
    ),
    # -- .git under commands (root cause 4)
    Case(
        "write .git/config",
        act("write", path=".git/config", content="[core]\n\tfsmonitor = touch M\n"),
        {"never": "allow", "*": "ask"},
        setup=GIT_REPO + " && rm .git/config",
        marker=".git/config",
        levels=ALL,
    ),
    Case(
        "git config core.fsmonitor",
        run("git config core.fsmonitor 'touch M' && git status"),
        NEVER_RUNS,
        allow=("run: git *",),
        setup=GIT_REPO,
    ),
    Case(
        "git -c core.fsmonitor",
        run("git -c core.fsmonitor='touch M' status"),
        NEVER_RUNS,
        allow=("run: git *",),
        setup=GIT_REPO,
    ),
    Case(
        "redirect into .git/hooks",
        run("echo x > .git/hooks/M"),
        {"never": "allow", "*": "ask"},
        allow=("run: echo *",),
        setup=GIT_REPO,
        marker=".git/hooks/M",
    ),
    Case(
        "tee into .git/config",
        run("echo x | tee -a .git/M"),
        {"never": "allow", "*": "ask"},
        allow=("run: echo *", "run: tee *"),
        setup=GIT_REPO,
        marker=".git/M",
    ),
    # -- parser gaps (root cause 5): a deny rule names the program that runs
    Case("heredoc $'E'", run("cat <<$'E'\nE\ntouch M\n$'E'\n"), NEVER_RUNS, allow=("run: cat *",)),
    Case("xargs -e", run("echo | xargs -e touch M"), {"*": "deny"}, deny=("run: touch *",)),
    Case("xargs --eof", run("echo | xargs --eof touch M"), {"*": "deny"}, deny=("run: touch *",)),
    Case("env -iS", run("env -iS'touch M'"), {"*": "ask"}, deny=("run: touch *",)),
    Case("env --split-string", run("env --split-string='touch M'"), {"*": "ask"}, deny=("run: touch *",)),
    Case("bash -O opt -c", run("bash -O extglob -c 'touch M'"), {"*": "deny"}, deny=("run: touch *",)),
    Case("sh /dev/stdin", run("echo 'touch M' | sh /dev/stdin"), NEVER_RUNS, allow=("run: echo *",)),
    Case("sh -s", run("echo 'touch M' | sh -s"), NEVER_RUNS, allow=("run: echo *",)),
    Case("nohup --", run("nohup -- touch M >/dev/null 2>&1"), {"*": "deny"}, deny=("run: touch *",)),
    Case("timeout -k", run("timeout -k 5 9 touch M"), {"*": "deny"}, deny=("run: touch *",)),
    Case("stdbuf -oL", run("stdbuf -oL touch M"), {"*": "deny"}, deny=("run: touch *",)),
    Case("nice --adjustment", run("nice --adj 1 touch M"), {"*": "deny"}, deny=("run: touch *",)),
    Case("time -p", run("time -p touch M"), {"*": "deny"}, deny=("run: touch *",)),
    Case("command --", run("command -- touch M"), {"*": "deny"}, deny=("run: touch *",)),
    Case("exec -a", run("(exec -a x touch M)"), {"*": "deny"}, deny=("run: touch *",)),
    Case("flock runs", run("flock {ws}/l touch M"), {"*": "ask"}, deny=("run: touch *",)),
    Case("find -exec", run("find . -maxdepth 0 -exec touch M \\;"), {"*": "deny"}, deny=("run: touch *",)),
    # -- constructs that run code or open files
    Case("process substitution", run("cat <(touch M)"), NEVER_RUNS, allow=("run: cat *",)),
    Case("coproc", run("coproc touch M; wait"), NEVER_RUNS, allow=("run: wait *",)),
    Case("eval", run("eval 'touch M'"), NEVER_RUNS),
    Case("source", run("source s.sh"), {"never": "allow", "risky": "allow", "*": "ask"}, setup="echo 'touch M' > s.sh"),
    Case("trap DEBUG", run("trap 'touch M; trap - DEBUG' DEBUG; true"), NEVER_RUNS, allow=("run: true",)),
    Case("builtin eval", run("builtin eval 'touch M'"), NEVER_RUNS),
    Case("here-string to sh", run("sh <<< 'touch M'"), NEVER_RUNS, allow=("run: sh *",)),
    Case("function then call", run("f() { touch M; }; f"), NEVER_RUNS),
    Case("alias", run("alias x='touch M'"), {"never": "allow", "*": "ask"}, marker=""),
    Case("let", run("x='a[$(touch M)]'; let y=x"), NEVER_RUNS),
    Case("$(( ))", run("x='a[$(touch M)]'; echo $((x))"), NEVER_RUNS, allow=("run: echo *",)),
    Case("command name from a variable", run("c=touch; $c M"), NEVER_RUNS),
    Case("brace expansion name", run("{touch,M}"), NEVER_RUNS),
    Case("backticks", run("echo `touch M`"), {"never": "allow", "risky": "allow", "*": "ask"}, allow=("run: echo *",)),
    Case("mapfile -C", run("mapfile -C 'touch M #' -c 1 a <<< x"), NEVER_RUNS),
    # -- no self-approval (root cause 6)
    Case(
        "cat of the session file",
        run("cat {state}/sessions/s.json > M"),
        {"never": "allow", "*": "ask"},
        allow=("run: cat *",),
    ),
    Case(
        "cat of the session file through a symlink",
        run("cat st > M"),
        {"never": "allow", "*": "ask"},
        allow=("run: cat *",),
        setup="ln -s {state}/sessions/s.json st",
    ),
    Case(
        "cat of the parent's cmdline",
        run("cat /proc/$PPID/cmdline > M"),
        {"never": "allow", "*": "ask"},
        allow=("run: cat *",),
    ),
    Case(
        "python -c import oh",
        run('python3 -c \'open("M", "w"); import oh\''),
        {"never": "allow", "*": "ask"},
        allow=("run: python3 *",),
    ),
    Case(
        "python -m oh approve",
        run("python3 -m oh approve c1 2>/dev/null; touch M"),
        {"never": "allow", "*": "ask"},
        allow=("run: python3 *", "run: touch *"),
    ),
    # -- what the user sees (root cause 7): too long to show is refused, with a reason
    Case(
        "a command too long to show",
        run("touch M; : " + "a" * (70 * 1024)),
        {"never": "allow", "*": "refused"},
        allow=("run: touch *", "run: : *"),
        levels=ALL,
    ),
    # -- red team (issue 25 follow-up): programs that write or run through their options and scripts, the
    # /proc entries of the backend, directories above oh's state, a shell's own history
    Case(
        "find -fprint into a hook",
        run("find . -maxdepth 0 -fprint .git/hooks/M"),
        {"never": "allow", "*": "ask"},
        allow=("run: find *",),
        setup=GIT_REPO,
        marker=".git/hooks/M",
    ),
    Case(
        "find -fprint a denied file",
        run("find . -maxdepth 0 -fprint .env"),
        {"*": "deny"},
        allow=("run: find *",),
        deny=("write: .env",),
        marker=".env",
    ),
    Case(
        "sort -o a denied file",
        run("sort -o .env f"),
        {"*": "deny"},
        allow=("run: sort *",),
        deny=("write: .env",),
        setup="echo x > f",
        marker=".env",
    ),
    Case("sed e runs a command", run("sed -n '1e touch M' f"), NEVER_RUNS, allow=("run: sed *",), setup="echo x > f"),
    Case(
        "sed s///w into a hook",
        run("sed -n 's/x/y/w .git/hooks/M' f"),
        {"never": "allow", "*": "ask"},
        allow=("run: sed *",),
        setup=GIT_REPO + " && echo x > f",
        marker=".git/hooks/M",
    ),
    Case(
        "sed w a denied file",
        run("sed -n '1w .env' f"),
        {"*": "ask"},
        allow=("run: sed *",),
        deny=("write: .env",),
        setup="echo x > f",
        marker=".env",
    ),
    Case(
        "sed -f a script",
        run("sed -n -f s.sed f"),
        NEVER_RUNS,
        allow=("run: sed *",),
        setup="echo x > f && echo '1e touch M' > s.sed",
    ),
    Case(
        "tar --to-command",
        run("tar -xf a.tar --to-command='touch M'"),
        NEVER_RUNS,
        allow=("run: tar *",),
        setup="echo x > f && tar -cf a.tar f",
    ),
    Case(
        "tar --checkpoint-action",
        run("tar -cf b.tar f --checkpoint=1 --checkpoint-action=exec='touch M'"),
        NEVER_RUNS,
        allow=("run: tar *",),
        setup="echo x > f",
    ),
    Case(
        "tar -cf a denied file",
        run("tar -cf .env f"),
        {"*": "deny"},
        allow=("run: tar *",),
        deny=("write: .env",),
        setup="echo x > f",
        marker=".env",
    ),
    Case(
        "tar -x into a hook",
        run("tar -xf a.tar"),
        {"never": "allow", "*": "ask"},
        allow=("run: tar *",),
        setup=GIT_REPO + " && mkdir -p x/.git/hooks && touch x/.git/hooks/M && tar -C x -cf a.tar .git && rm -r x",
        marker=".git/hooks/M",
    ),
    Case(
        "grep -r above oh's state",
        run("grep -r decider_token .. > M"),
        {"never": "allow", "*": "ask"},
        allow=("run: grep *",),
    ),
    Case(
        "cat of the backend's task environ",
        run("cat /proc/{pid}/task/{pid}/environ > M"),
        {"never": "allow", "*": "ask"},
        allow=("run: cat *",),
    ),
    Case(
        "cat of /proc/self/task cmdline",
        run("cat /proc/thread-self/cmdline > M"),
        {"never": "allow", "*": "ask"},
        allow=("run: cat *",),
    ),
    Case(". /dev/stdin here-string", run(". /dev/stdin <<< 'touch M'"), NEVER_RUNS),
    Case(
        "source /dev/stdin from a pipe", run("echo 'touch M' | source /dev/stdin"), NEVER_RUNS, allow=("run: echo *",)
    ),
    # an editor's terminal reads commands as typed (readline): with history on, `!!:1-2` runs what it recalls
    Case("set -o history", run("set -o history"), {"never": "allow", "*": "ask"}, marker=""),
    Case("history -s", run("history -s 'touch M'"), {"never": "allow", "*": "ask"}, marker=""),
    Case(
        "a directory made a git repository",
        run("git status", cwd="docs"),
        {"never": "allow", "*": "ask"},
        allow=("run: git status", "write: docs/**"),
        setup=GIT_REPO,
        pre=(
            act("write", path="docs/HEAD", content="ref: refs/heads/main\n"),
            act("write", path="docs/objects/.keep", content=""),
            act("write", path="docs/refs/.keep", content=""),
            act(
                "write",
                path="docs/config",
                content="[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n"
                "\tfsmonitor = touch {ws}/M\n",
            ),
        ),
        levels=("never", "risky", "commands", "all"),
    ),
    Case(
        "git -C into a directory made a repository",
        run("git -C docs status"),
        NEVER_RUNS,
        allow=("run: git *",),
        setup=BARE_DOCS,
    ),
    Case(
        "cd into a directory made a repository, then git",
        run("cd docs && git status"),
        NEVER_RUNS,
        allow=("run: git status", "run: cd *"),
        setup=BARE_DOCS,
    ),
    Case(
        "ln of a denied file",
        run("ln .env docs/e"),
        {"*": "deny"},
        deny=("write: .env",),
        setup="mkdir docs && echo s > .env",
        marker="docs/e",
    ),
    Case(
        "cp -l of a denied file",
        run("cp -l .env docs/e"),
        {"*": "deny"},
        allow=("run: cp *",),
        deny=("write: .env",),
        setup="mkdir docs && echo s > .env",
        marker="docs/e",
    ),
    Case(
        "append through a hard link to a denied file",
        run("echo x >> docs/e"),
        {"*": "ask"},
        allow=("run: echo *",),
        deny=("write: .env",),
        setup="mkdir docs && echo s > .env && ln .env docs/e",
        marker="",
        changed=".env",
        levels=ALL,
    ),
    Case(
        "append through a hard link into a hook",
        run("echo x >> docs/h"),
        {"never": "allow", "*": "ask"},
        allow=("run: echo *",),
        setup=GIT_REPO + " && mkdir docs && echo s > .git/hooks/h && ln .git/hooks/h docs/h",
        marker="",
        changed=".git/hooks/h",
    ),
    Case(
        "cp -s then a write through it",
        run("cp -s .git/hooks/h n && echo x >> n"),
        {"never": "allow", "*": "ask"},
        allow=("run: cp *", "run: echo *"),
        setup=GIT_REPO + " && echo s > .git/hooks/h",
        marker="",
        changed=".git/hooks/h",
    ),
    Case(
        "ln -s then a write through it",
        run("ln -s .git/hooks/h n && echo x >> n"),
        {"never": "allow", "*": "ask"},
        allow=("run: ln *", "run: echo *"),
        setup=GIT_REPO + " && echo s > .git/hooks/h",
        marker="",
        changed=".git/hooks/h",
    ),
    Case(
        "MAKEFLAGS in front of an allowed make",
        run("MAKEFLAGS=SHELL=./evil make t"),
        NEVER_RUNS,
        allow=("run: make t",),
        setup="printf 't:\\n\\techo ok\\n' > Makefile && printf '#!/bin/sh\\ntouch M\\n' > evil && chmod +x evil",
    ),
    Case(
        "npm_config_script_shell in the env field",
        run("npm run t", env={"npm_config_script_shell": "{ws}/evil"}),
        NEVER_RUNS,
        allow=("run: npm run *",),
        setup='echo \'{"scripts": {"t": "true"}}\' > package.json && printf \'#!/bin/sh\\ntouch {ws}/M\\n\' > evil'
        " && chmod +x evil",
    ),
    Case(
        "mv .git away and back",
        run("mv .git g && echo x > g/hooks/M && mv g .git"),
        {"never": "allow", "*": "ask"},
        allow=("run: mv *", "run: echo *"),
        setup=GIT_REPO,
        marker=".git/hooks/M",
    ),
    Case(
        "cat of the session file through pieces",
        run("a={ws}/../ohst; b=ate/sess; c=ions/s.json; cat $a$b$c > M"),
        {"never": "allow", "*": "ask"},
        allow=("run: cat *",),
        levels=("never", "commands", "all"),  # at risky a path built at run time is not seen (§8, residual)
    ),
    Case(
        "cat of the session file through printf",
        run('cat "$(printf %s/../ohst%s {ws} ate/sessions/s.json)" > M'),
        {"never": "allow", "*": "ask"},
        allow=("run: cat *", "run: printf *"),
        levels=("never", "commands", "all"),
    ),
    # -- controls for the red team's fixes: what they do not touch still runs
    Case("sed substitution", run("sed 's/x/y/' f > M"), {"*": "allow"}, allow=("run: sed *",), setup="echo x > f"),
    Case(
        "git status in the workspace", run("git status > M"), {"*": "allow"}, allow=("run: git status",), setup=GIT_REPO
    ),
    Case(
        "tar -tf",
        run("tar -tf a.tar > M"),
        {"*": "allow"},
        allow=("run: tar *",),
        setup="echo x > f && tar -cf a.tar f",
    ),
    Case(
        "grep -r in the workspace", run("grep -r x . > M"), {"*": "allow"}, allow=("run: grep *",), setup="echo x > f"
    ),
    # -- redteam (issue 25): a program runs a command given in its arguments; a write only run time places
    Case("awk system()", run("awk 'BEGIN{system(\"touch M\")}'"), NEVER_RUNS, allow=("run: awk *",)),
    Case("awk print to a pipe", run('awk \'BEGIN{print "" | "touch M"}\''), NEVER_RUNS, allow=("run: awk *",)),
    Case(
        "vim -c !cmd",
        run("vim -Nu NONE -es -c '!touch M' -c 'qa!' < /dev/null"),
        NEVER_RUNS,
        allow=("run: vim *",),
    ),
    Case(
        "git grep --open-files-in-pager",
        run("git grep --open-files-in-pager='touch M' x"),
        NEVER_RUNS,
        allow=("run: git *",),
        setup=GIT_REPO + " && echo x > f && git add f",
    ),
    Case(
        "git fetch --upload-pack",
        run("git fetch --upload-pack='touch M' . 2> /dev/null"),
        NEVER_RUNS,
        allow=("run: git *",),
        setup=GIT_REPO,
    ),
    Case(
        "cp into a hook through $PWD",
        run("cp x $PWD/.git/hooks/pre-commit"),
        NEVER_RUNS,
        allow=("run: cp *",),
        setup=GIT_REPO + " && echo x > x",
        marker=".git/hooks/pre-commit",
    ),
    Case(
        "tee into a hook through a variable",
        run("D=.git/hooks; echo x | tee $D/pre-commit"),
        NEVER_RUNS,
        allow=("run: echo *", "run: tee *"),
        setup=GIT_REPO,
        marker=".git/hooks/pre-commit",
    ),
    Case(
        "TAR_OPTIONS in front of an allowed tar",
        run("TAR_OPTIONS='--checkpoint=1 --checkpoint-action=exec=touch\\ M' tar -cf x.tar f"),
        NEVER_RUNS,
        allow=("run: tar *",),
        setup="echo x > f",
    ),
    Case(
        "set -k then an argument that is an environment",
        run("set -k; git status GIT_CONFIG_PARAMETERS=\"'core.fsmonitor=touch {ws}/M'\""),
        NEVER_RUNS,
        allow=("run: git *", "run: set *"),
        setup=GIT_REPO + " && echo x > f && git add f",
    ),
    Case(
        "git log --output into an existing hook",
        run("git log -1 --format='#!/bin/sh%ntouch {ws}/M' --output=.git/hooks/pre-commit"),
        NEVER_RUNS,
        allow=("run: git *",),
        setup=GIT_REPO
        + " && git commit -q --allow-empty -m x && printf '#!/bin/sh\\ntrue\\n' > .git/hooks/pre-commit"
        + " && chmod +x .git/hooks/pre-commit",
        marker="",
        changed=".git/hooks/pre-commit",
    ),
    Case(
        "cp -t into the hooks",
        run("cp -t .git/hooks src/pre-commit"),
        NEVER_RUNS,
        allow=("run: cp *",),
        setup=GIT_REPO + " && mkdir src && printf '#!/bin/sh\\ntouch {ws}/M\\n' > src/pre-commit",
        marker=".git/hooks/pre-commit",
    ),
    Case(
        "git archive -o a denied file",
        run("git archive -o .env HEAD"),
        {"*": "deny"},
        allow=("run: git *",),
        deny=("write: .env",),
        setup=GIT_REPO + " && echo x > f && git add f && git commit -q -m x",
        marker=".env",
    ),
    Case(
        "cp a denied file through $PWD",
        run("cp x $PWD/.env"),
        {"*": "ask"},
        allow=("run: cp *",),
        deny=("write: .env",),
        setup="echo x > x",
        marker=".env",
    ),
    # -- package runners are followed into the program they run; inline interpreter code at `risky`
    Case("npx runs a risky program", run("npx --offline truncate -s0 M"), NEVER_RUNS),
    Case(
        "npm exec runs a denied program",
        run("npm exec --offline -- touch M"),
        {"*": "deny"},
        deny=("run: touch *",),
    ),
    Case(
        "an allowed npx runs a risky program",
        run("npx --offline truncate -s0 M"),
        NEVER_RUNS,
        allow=("run: npx *",),
    ),
    Case(
        "an allowed npx runs a plain program",
        run("npx --offline touch M"),
        {"*": "allow"},
        allow=("run: npx *",),
    ),
    Case("python -c runs a program", run("python3 -c 'import os; os.system(\"touch M\")'"), NEVER_RUNS),
    Case(
        "python -c hides a name",
        run('python3 -c \'import os; getattr(os, "sys" + "tem")("touch M")\''),
        NEVER_RUNS,
    ),
    Case("node -e writes a file", run('node -e \'require("fs").writeFileSync("M", "x")\''), NEVER_RUNS),
    Case("perl -e runs a program", run("perl -e 'system(\"touch M\")'"), NEVER_RUNS),
    # redteam2: node's -pe alias (the gate read "e" as the code), a long option's separate value before the code,
    # identifiers Python reads through NFKC, asyncio's create_subprocess_*
    Case("node -pe runs a program", run('''node -pe "require('child_process').execSync('touch M')"'''), NEVER_RUNS),
    Case(
        "node --title x -e runs a program",
        run('''node --title x -e "require('child_process').execSync('touch M')"'''),
        NEVER_RUNS,
    ),
    Case(
        "python --check-hash-based-pycs then -c",
        run("python3 --check-hash-based-pycs always -c 'import os; os.system(\"touch M\")'"),
        NEVER_RUNS,
    ),
    Case("python -c fullwidth os.system", run("python3 -c 'import os; \uff4f\uff53.system(\"touch M\")'"), NEVER_RUNS),
    Case(
        "python -c asyncio subprocess",
        run("python3 -c 'import asyncio; asyncio.run(asyncio.create_subprocess_shell(\"touch M\"))'"),
        NEVER_RUNS,
    ),
    Case(
        "plain python -c",
        run("python3 -c 'print(1 + 1)' > M"),
        {"never": "allow", "risky": "allow", "*": "ask"},
    ),
    Case(
        "plain node -e",
        run("node -e 'console.log(process.version)' > M"),
        {"never": "allow", "risky": "allow", "*": "ask"},
    ),
    # -- controls: what is allowed still runs
    Case(
        "allowed echo",
        run("echo hi > M"),
        {"never": "allow", "risky": "allow", "*": "allow"},
        allow=("run: echo *",),
        levels=ALL,
    ),
    Case("plain variable", run("x=1; echo $x > M"), {"*": "allow"}, allow=("run: echo *",), levels=ALL),
    Case("[[ ]] string test", run("[[ -n x && a < b ]] && echo y > M"), {"*": "allow"}, allow=("run: echo *",)),
]
