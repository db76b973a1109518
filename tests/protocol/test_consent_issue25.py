"""Consent decides on what will run and what will be opened (issue 25), the pure half: the parser follows
bash's rules for what it accepts (wrappers read with their real option rules) and refuses the rest;
assignments bash evaluates, the action's env and cwd, paths as resolved (``Where``), oh's own files and
deciding commands, unclassified kinds and commands too long to show. Real effects: tests/security/
test_consent_battery.py and test_consent_bash_trace.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from oh.protocol import shellparse
from oh.protocol.consent import LEVELS, Policy, Where, decide, git_starts, moves, normalize, parse_rules, places

WS = "/home/u/proj"
STATE = "/home/u/.local/state/oh"
SRC = Path(__file__).resolve().parents[2] / "src" / "oh" / "protocol"


def policy(level="commands", allow=(), ask=(), deny=()):
    return Policy(level, parse_rules(allow, ask, deny), WS, "/home/u", (STATE, "/home/u/.config/oh"))


def run(p, command, where=None, **args):
    return decide(p, "run", {"command": command, **args}, None, where)


# ---------------------------------------------------------------------- the parser: refused (fail closed)
@pytest.mark.parametrize(
    "line",
    [
        "cat <<$'E'\nE\nrm x\n$'E'\n",  # bash's delimiter is E
        'cat <<$"E"\nE\n',
        "cat <<E\nx\\\nE\nE\n",  # a continued line in an unquoted heredoc
        "env -iS'rm x'",
        "env -S 'rm x'",
        "env --split-string='rm x'",
        "env --spl='rm x'",  # GNU getopt takes unique prefixes of long options
        "env $OPT rm x",
        "env --frobnicate rm",
        "nohup -x rm",
        "xargs --frobnicate rm",
        "sudo -s",
        "sudo -iu root",
        "bash --rcfile evil -ic 'ls'",
        "bash --init-file evil -c ls",
        "echo ${!x}",
        "echo ${x@P}",
        "echo ${a[x]}",
        "echo ${#a[i]}",
        "echo ${s:x}",
        "echo ${s:x:1}",
        ": ${PATH:=/tmp}",
        "a[x]=1",
        "a[$i]=1 ls",
        "declare -i x=1",
        "declare -n r=x",
        "local -a a",
        "typeset -A m",
        "printf -v 'a[$(rm x)]' %s 1",
        "read 'a[x]' <<< 1",
        "unset 'a[i]'",
        "test -v 'a[i]'",
        "[[ x -eq 1 ]]",
        "[[ $x -lt 2 ]] && ls",
        "[[ -v a ]]",
        "[[ $x =~ ^(a|b) ]]",
        "[[ a\n]]",
        "fc -s",
        "compgen -C 'rm x' y",
        "complete -C 'rm x' y",
        "bind -x '\"a\": rm x'",
        "hash -p /tmp/evil ls",
        "mapfile -C 'rm x' a",
        "readarray -C f a",
        "x=(1 2)",
        "{rm,-rf,x}",
        "$CMD x",
        "sh <<< 'rm x'",
        "python3 - <<< 'import os'",
    ],
)
def test_what_the_parser_refuses(line):
    parsed = shellparse.parse(line)
    assert parsed.unknown is not None, parsed.parts
    assert run(policy("risky", allow=["run: ls *", "run: cat *"]), line).verdict == "ask"


# ---------------------------------------------------------------------- the parser: followed as bash does
@pytest.mark.parametrize(
    "line, argvs",
    [
        ("echo | xargs -e rm -rf x", [["echo"], ["rm", "-rf", "x"]]),  # -e takes its value attached only
        ("xargs -eEOF rm x", [["rm", "x"]]),
        ("xargs --eof rm x", [["rm", "x"]]),
        ("xargs --eof=E rm x", [["rm", "x"]]),
        ("xargs -0rn 1 rm", [["rm"]]),
        ("xargs -I{} -P 2 rm {}", [["rm", "{}"]]),
        ("bash -O extglob -c 'rm x'", [["rm", "x"]]),
        ("bash +O extglob -c 'rm x'", [["rm", "x"]]),
        ("bash -o pipefail -ec 'rm x'", [["rm", "x"]]),
        ("nohup -- rm x", [["rm", "x"]]),
        ("timeout -k 1 5 rm x", [["rm", "x"]]),
        ("timeout --kill-after=1 --signal KILL 5 rm x", [["rm", "x"]]),
        ("nice --adj 1 rm x", [["rm", "x"]]),
        ("nice -10 rm x", [["rm", "x"]]),
        ("command -- rm x", [["rm", "x"]]),
        ("command -v rm", []),
        ("time -p rm x", [["rm", "x"]]),
        ("(exec -a z rm x)", [["rm", "x"]]),
        ("stdbuf -oL -e0 rm x", [["rm", "x"]]),
        ("env -u X -C /tmp A=1 rm x", [["rm", "x"]]),
        ("env -i0v -- rm x", [["rm", "x"]]),
        ("env - A=1 rm x", [["rm", "x"]]),
        ("setsid -f rm x", [["rm", "x"]]),
        ("ionice -c 3 rm x", [["rm", "x"]]),
        ("[[ -n $x && a < b ]] && rm x", [["rm", "x"]]),
        ("[ -f x ] && rm x", [["[", "-f", "x", "]"], ["rm", "x"]]),
        ("x=1", [["x=1"]]),
        ("PATH=./t:$PATH", [["PATH=./t:$PATH"]]),
        ("a[1]=2", [["a[1]=2"]]),
    ],
)
def test_what_the_parser_follows(line, argvs):
    parsed = shellparse.parse(line)
    assert parsed.unknown is None, parsed.unknown
    assert [list(p.argv) for p in parsed.parts] == argvs


@pytest.mark.parametrize("shell", ["sh /dev/stdin", "sh -s", "bash -", "sh /dev/fd/0", "bash /proc/self/fd/0", "sh"])
def test_a_shell_reading_its_program_from_a_pipe(shell):
    (_, part) = shellparse.parse(f"echo 'rm x' | {shell}").parts
    assert part.stdin_code
    assert run(policy("risky"), f"echo 'rm x' | {shell}").verdict == "ask"


def test_redirections_and_their_places():
    (part,) = shellparse.parse("cat < in.txt > $OUT").parts
    assert part.reads == ("in.txt",) and part.writes == () and part.blind_writes == ("$OUT",)
    parsed = shellparse.parse("cd .git && echo x > config; echo y > /abs")
    assert parsed.moves and parsed.parts[1].blind_writes == ("config",) and parsed.parts[2].writes == ("/abs",)
    assert moves("cd sub") and moves("eval x") and not moves("ls")


# ---------------------------------------------------------------------- assignments bash evaluates
@pytest.mark.parametrize(
    "line",
    [
        "x='a[$(touch M)]'; OPTIND=x",
        "RANDOM=x",
        "SRANDOM=x",
        "HISTCMD=x",
        "MAILCHECK=x",
        "PROMPT_COMMAND+='touch M;'",
        "PS0='$(touch M)'",
        "PS1='$(touch M)'",
        "PS4='$(touch M)'",
        "BASH_ENV=./s.sh",
        "ENV=./s.sh",
        "PATH=./tools:$PATH",
        "IFS=/",
        "LD_PRELOAD=./x.so",
        "GIT_DIR=evil",
        "SHELLOPTS=xtrace",
        "BASHOPTS=extdebug",
        "HISTFILE=~/.bashrc",
        "BASH_CMDS[ls]=/tmp/evil",
        "export PATH=./tools",
        "readonly PROMPT_COMMAND=x",
        "read PATH <<< /tmp",
        "printf -v PATH %s /tmp",
        "PATH=./tools git status",
        "env PATH=./tools git status",
        # redteam: options and programs other tools read from the environment
        "TAR_OPTIONS='--to-command=sh' git status",
        "LESS='+!touch M' git status",
        "SYSTEMD_PAGER='touch M' git status",
        "MANOPT='-P touch' git status",
        "RSYNC_RSH=./x git status",
        "GH_PAGER=./x git status",
    ],
)
@pytest.mark.parametrize("level", ["risky", "commands", "changes", "all"])
def test_assignments_bash_evaluates_are_asked_never_allowed(line, level):
    p = policy(level, allow=["run: git status", "run: export *", "run: readonly *", "run: read *", "run: printf *"])
    d = run(p, line)
    assert d.verdict == "ask" and not d.suggest, (d.reason, line)


def test_plain_variables_are_data_and_never_keeps_quiet():
    assert run(policy("commands", allow=["run: git status"]), "x=1; git status").verdict == "allow"
    assert run(policy("never"), "OPTIND=x").verdict == "allow"
    # the rm that runs may not be the rm the deny rule means: asked rather than guessed (never allowed)
    assert run(policy("never", deny=["run: rm *"]), "PATH=./t:$PATH rm x").verdict == "ask"


# ---------------------------------------------------------------------- the action's env and cwd
@pytest.mark.parametrize("name", ["PATH", "LD_PRELOAD", "BASH_ENV", "GIT_SSH_COMMAND", "PYTHONPATH", "HOME", "OH_HOME"])
def test_the_env_field_is_part_of_the_decision(name):
    p = policy("commands", allow=["run: git status"])
    assert run(p, "git status", env={"LANG": "C"}).verdict == "allow"
    d = run(p, "git status", env={name: "/ws/tools"})
    assert d.verdict == "ask" and name in d.reason
    assert run(policy("risky"), "ls", env={name: "x"}).verdict == "ask"


def test_the_cwd_is_where_relative_paths_start():
    p = policy("never", allow=["run: echo *"], deny=["write: docs/secret.md"])
    at_docs = Where(WS + "/docs", {}, WS + "/docs")
    assert run(p, "echo x > secret.md", at_docs, cwd="docs").verdict == "deny"
    assert run(p, "echo x > secret.md").verdict == "allow"  # from the workspace it is another file
    assert run(policy("commands", allow=["run: ls *"]), "ls", Where(STATE, {}, STATE), cwd=STATE).verdict == "ask"


# ---------------------------------------------------------------------- paths as the kernel opens them
@pytest.mark.parametrize("typed", ["./.env", "//home/u/proj/.env", "sub/../.env", "/home/u/proj//.env", ".env/"])
def test_path_rules_match_the_normalized_path(typed):
    assert decide(policy("never", deny=["write: .env"]), "write", {"path": typed, "content": ""}).verdict == "deny"
    assert normalize("//x//y/../z", "/", policy()) == "/x/z"


def test_path_rules_match_the_resolved_path():
    p = policy("commands", allow=["write: docs/**", "read: docs/**"], deny=["read: secret.txt"])
    hook = Where(WS, {"docs/notes.md": (WS + "/.git/hooks/pre-commit",)})
    d = decide(p, "write", {"path": "docs/notes.md", "content": ""}, None, hook)
    assert d.verdict == "ask" and ".git" in d.reason and not d.suggest
    link = Where(WS, {"docs/link": (WS + "/secret.txt",)})
    assert decide(p, "read", {"path": "docs/link"}, None, link).verdict == "deny"
    outside = Where(WS, {"docs/x": ("/etc/passwd",)})
    assert decide(p, "write", {"path": "docs/x", "content": ""}, None, outside).verdict == "ask"
    assert decide(p, "write", {"path": "docs/x", "content": ""}).verdict == "allow"


def test_a_program_writing_a_tilde_or_run_time_path_is_placed_or_asked():
    """`cp x ~/.bashrc` writes the file a `write: ~/.bashrc` deny rule names: the `~` word is placed like a
    redirection's; `cp x $HOME/.bashrc` (known only at run time) is asked like `> $F` (redteam)."""
    p = policy("never", deny=["write: ~/.bashrc"])
    for line in ("cp x ~/.bashrc", "tee ~/.bashrc < f", "ln -sf x ~/.bashrc", "cp x ~//.bashrc"):
        assert run(p, line).verdict == "deny", line
    for line in ("cp x $HOME/.bashrc", "tee ~+/../.bashrc", "install x $D/.bashrc"):
        assert run(p, line).verdict == "ask", line
    assert run(p, "cp x ~/notes").verdict == "allow"
    assert run(policy("risky"), "cp x ~/.bashrc").verdict == "ask"  # outside the workspace


def test_redirects_resolve_through_symlinks_and_write_rules_hold_for_commands():
    p = policy("commands", allow=["run: echo *"], deny=["write: .env"])
    assert run(p, "echo x > ./.env").verdict == "deny"
    assert run(p, "echo x > out", Where(WS, {"out": (WS + "/.git/hooks/pre-commit",)})).verdict == "ask"
    assert run(p, "echo x > out").verdict == "allow"
    assert run(p, "echo x > $F").verdict == "ask"  # where it writes is known only at run time
    assert run(p, "echo x > out", Where(WS, {}, None, True)).verdict == "ask"  # an earlier cd, unknown cwd


@pytest.mark.parametrize(
    "action",
    [
        ("write", {"path": ".git/config", "content": ""}),
        ("write", {"path": "sub/.git/hooks/post-checkout", "content": ""}),
        ("edit", {"path": ".git/hooks/pre-commit", "command": "create", "file_text": ""}),
        ("write", {"path": "/etc/profile.d/x.sh", "content": ""}),
        ("run", {"command": "git config core.fsmonitor 'touch M'"}),
        ("run", {"command": "git -c core.fsmonitor='touch M' status"}),
        ("run", {"command": "git --git-dir=elsewhere status"}),
        ("run", {"command": "echo x > .git/config"}),
        ("run", {"command": "echo x | tee .git/hooks/pre-commit"}),
        ("run", {"command": "cp x .git/hooks/pre-commit"}),
    ],
)
def test_under_commands_writes_into_git_are_asked(action):
    p = policy("commands", allow=["run: git *", "run: echo *", "run: tee *", "run: cp *"])
    assert decide(p, *action).verdict == "ask"


# ---------------------------------------------------------------------- no self-approval
@pytest.mark.parametrize(
    "line",
    [
        "python -m oh approve c1",
        "python3 -moh approve c1",
        "python3 -m oh.cli review accept --all",
        "python3 /venv/lib/python3.11/site-packages/oh/__main__.py approve c1",
        "/venv/bin/oh approve c1",
        "uv run oh approvals allow c1",
        "python3 -c 'import oh.cli; oh.cli.app()' approve c1",
        "python3 -c 'from oh.backend import consentctl'",
        'python3 -c \'__import__("o"+"h")\'',
        "cat ~/.local/state/oh/sessions/x.json",
        "cat /home/u/.local/state/oh/sessions/x.json",
        "cat < /home/u/.config/oh/config.toml",
        "cat $HOME/.local/state/oh/sessions/x.json",
        "cat /proc/$PPID/cmdline",
        "cat /proc/1234/environ",
        "grep -r token $OH_HOME",
        "cat /proc/1234/task/1234/environ",
        "cat /proc/thread-self/cmdline",
        "cat /proc/*/environ",
        "cat /dev/fd/5",
        "cat ~u/.local/state/oh/sessions/x.json",
        "cat ~-/x.json",
        "grep -r decider_token /home/u",
        "grep -r decider_token ~",
        "grep -r decider_token /home/u/.local",
        "tar -cf docs/x.tar /home/u/.local/state",
    ],
)
@pytest.mark.parametrize("level", ["risky", "commands", "all"])
def test_self_approval_is_asked_however_invoked(line, level):
    p = policy(level, allow=["run: python *", "run: python3 *", "run: cat *", "run: uv *", "run: oh *", "run: grep *"])
    p = Policy(p.level, p.rules + parse_rules(["run: /venv/bin/oh *"]), WS, "/home/u", p.protected)
    d = run(p, line)
    assert d.verdict == "ask" and not d.suggest, (line, d)


def test_listing_above_oh_state_is_not_reading_it():
    p = policy("commands", allow=["run: ls *", "run: cd *", "run: cat *", "run: du *"])
    for line in ("ls ~", "ls -la /home/u/.local", "cd ~", "du -sh /home/u", "cat /proc/cpuinfo", "cat /dev/fd/1"):
        assert run(p, line).verdict == "allow", line


# Programs that write files or run commands through their options or scripts (find -fprint, sed w/e, tar):
# no allow rule for the program covers that part; write rules see the files they name. The real effects:
# the battery rows "find -fprint ...", "sed ...", "tar ...", "sort -o ...".
@pytest.mark.parametrize(
    "line, verdict",
    [
        ("find . -fprint .git/hooks/x", "ask"),
        ("find . -fls .env", "deny"),
        ("find . -fprintf .env %p", "deny"),
        ("sort -o .env f", "deny"),
        ("sort --output=.env f", "deny"),
        ("tar -cf .env src", "deny"),
        ("tar cf .env src", "deny"),
        ("tar --create --file=.env src", "deny"),
        ("tar -xf a.tar", "ask"),
        ("tar xf a.tar", "ask"),
        ("tar -xf a.tar --to-command=sh", "ask"),
        ("tar -cf x.tar src --checkpoint-action=exec=sh", "ask"),
        ("tar -cf x.tar -I 'sh -c x' src", "ask"),
        ("tar -cf", "ask"),
        ("sed -n '1e id' f", "ask"),
        ("sed -n '1w .env' f", "ask"),
        ("sed -n 'W out' f", "ask"),
        ("sed 's/a/b/w out' f", "ask"),
        ("sed 's/a/b/e' f", "ask"),
        ("sed -e p -e '$w out' f", "ask"),
        ("sed -nf s.sed f", "ask"),
        ("sed --file=s.sed f", "ask"),
        ("sed $S f", "ask"),
        ("find . -name x -delete", "allow"),  # like `rm` under `run: rm *`; risky without a rule (below)
        ("sed 's/hello/world/g' f", "allow"),
        ("sed -n '/we/p;2d' f", "allow"),
        ("sed -i.bak 's/a/b/' f", "allow"),
        ("sed --sandbox -n '1w x' f", "allow"),
        ("tar -tvf a.tar", "allow"),
        ("tar -cf out.tar src", "allow"),
        ("find . -name '*.py' -print", "allow"),
        # redteam: programs that run a command given in their arguments, or write where only run time says
        ("git rebase --exec 'rm -rf x' HEAD", "ask"),
        ("git rebase -x 'rm -rf x' HEAD", "ask"),
        ("git submodule foreach 'rm -rf x'", "ask"),
        ("git bisect run rm -rf x", "ask"),
        ("git difftool -x 'rm -rf x'", "ask"),
        ("git grep -O'rm -rf x' x", "ask"),
        ("git grep --open-files-in-pager='rm -rf x' x", "ask"),
        ("git fetch --upload-pack='rm -rf x' .", "ask"),
        ("git clone -u 'rm -rf x' a b", "ask"),
        ("git push --receive-pack='rm -rf x' o", "ask"),
        ("git clone 'ext::sh -c rm% -rf% x' y", "ask"),
        ("git filter-branch --tree-filter 'rm -rf x'", "ask"),
        ("awk 'BEGIN{system(\"rm -rf x\")}'", "ask"),
        ("awk 'BEGIN{print | \"rm -rf x\"}'", "ask"),
        ("awk '{print > \".env\"}' f", "ask"),
        ("awk -f s.awk f", "ask"),
        ("vim -c '!rm -rf x' f", "ask"),
        ("vim '+!rm -rf x' f", "ask"),
        ("less '+!rm -rf x' f", "ask"),
        ("cp x $PWD/.env", "ask"),
        ("cp x ~/.env", "ask"),  # in the home: outside the workspace
        ("tee $D/.env < f", "ask"),
        ("git status", "allow"),
        ("git add -u", "allow"),
        ("git cherry-pick -x abc", "allow"),
        ("awk '{print $1}' f", "allow"),
        ("awk '$1 >= 5' f", "allow"),
        ("vim f", "allow"),
        ("less +G f", "allow"),
        ("cp x y", "allow"),
        ("git log --format=x --output=.git/hooks/pre-commit", "ask"),
        ("git log --output=.env", "deny"),
        ("git diff --output .env", "deny"),
        ("git archive -o .env HEAD", "deny"),
        ("git format-patch -o .git/hooks HEAD~1", "ask"),
        ("git bundle create .env HEAD", "deny"),
        ("git init .git/hooks", "ask"),
        ("git clone . .git/hooks/x", "ask"),
        ("git worktree add .git/hooks", "ask"),
        ("git checkout-index -a --prefix=.git/hooks/", "ask"),
        ("cp -t .git/hooks f", "ask"),
        ("cp --target-directory=.git/hooks f", "ask"),
        ("cp -vt.git/hooks f", "ask"),
        ("cp -t . .env", "deny"),
        ("git log --oneline -5", "allow"),
        ("cp -t out f", "allow"),
    ],
)
def test_programs_that_write_or_run_through_their_arguments(line, verdict):
    allow = ["run: find *", "run: sed *", "run: tar *", "run: sort *", "run: git *", "run: awk *", "run: vim *"]
    allow += ["run: less *", "run: cp *", "run: tee *"]
    assert run(policy("commands", allow=allow, deny=["write: .env"]), line).verdict == verdict, line
    if verdict == "ask" or "-delete" in line:
        assert run(policy("risky"), line).verdict == "ask", line


@pytest.mark.parametrize(
    "line",
    [
        "set -o history",
        "set -H",
        "set -euH",
        "set -o histexpand",
        "shopt -o -s history",
        "set -o $X",
        "history -s 'rm -rf x'",
        ". /dev/stdin <<< 'rm x'",
        "echo 'rm x' | source /dev/stdin",
        "source /proc/self/fd/0",
        "source - < s.sh",
        "set -k",  # redteam: later NAME=value arguments become the command's environment
        "set -ek",
        "set -o keyword",
        "shopt -o -s keyword",
    ],
)
def test_a_shell_history_and_sourced_stdin_are_refused(line):
    """An editor's terminal reads commands as typed (readline): with history on, `!!:1-2` runs words the gate
    saw only as data. And `. /dev/stdin` runs its input, like `sh` reading a pipe."""
    assert shellparse.parse(line).unknown is not None, line
    assert run(policy("risky"), line).verdict == "ask"


def test_git_is_allowed_only_on_a_repository_named_dot_git():
    """git's discovery takes any directory holding HEAD, objects/ and refs/ as a repository: files written
    under an allowed path (docs/config with core.fsmonitor) would make an allowed `git status` run a program.
    The runtime fills Where.git_dirs from the file system (battery: "a directory made a git repository")."""
    p = policy("commands", allow=["run: git *", "run: cd *"])
    good = Where(WS, git_dirs={"": WS + "/.git", "sub": WS + "/.git"})
    bare = Where(WS, git_dirs={"": WS + "/docs", "docs": WS + "/docs"})
    assert run(p, "git status", good).verdict == "allow"
    assert run(p, "git -C sub status", good).verdict == "allow"
    assert run(p, "git status", bare).verdict == "ask"
    assert run(p, "git -C docs status", Where(WS, git_dirs={"": WS + "/.git", "docs": WS + "/docs"})).verdict == "ask"
    assert run(p, "cd sub && git status", good).verdict == "ask"  # where git starts is known only at run time
    assert run(p, "git -C $D status", good).verdict == "ask"
    assert run(p, "git -C a -C b status", good).verdict == "ask"
    assert run(p, "git -C elsewhere status", good).verdict == "ask"  # a start the runtime did not look at
    assert run(p, "git status", Where(WS, git_dirs={"": WS + "/.git"}, base_unknown=True)).verdict == "ask"
    assert git_starts("run", {"command": "git -c a=b -C sub status; ls"}) == ("", "sub")
    assert git_starts("run", {"command": "ls"}) == ()


def test_a_write_through_a_hard_link_is_not_placed():
    """A file with other hard links is written under all its names: a write into it is asked when write rules
    deny or ask, and at `risky` and above (battery: "append through a hard link ..."). Making the link is a
    write of its source (`ln .env x`, `cp -l .env x`)."""
    p = policy("commands", allow=["run: echo *", "run: cp *", "run: ln *"], deny=["write: .env"])
    linked = Where(WS, {"docs/e": (WS + "/docs/e",)}, linked=frozenset({WS + "/docs/e"}))
    assert run(p, "echo x >> docs/e").verdict == "allow"
    assert run(p, "echo x >> docs/e", linked).verdict == "ask"
    assert run(policy("risky", allow=["run: echo *"]), "echo x >> docs/e", linked).verdict == "ask"
    assert run(policy("never"), "echo x >> docs/e", linked).verdict == "allow"
    for line in (
        "ln .env docs/e",
        "cp -l .env docs/e",
        "cp -al .env docs/e",
        "cp -s .env x",
        "cp --symbolic-link .env x",
        "cp --link .env x",
    ):
        assert run(p, line).verdict == "deny", line
    assert run(p, "cp .env docs/e").verdict == "allow"  # a copy is a new file: .env is only read
    assert run(p, "ln -s ../.env docs/e").verdict == "ask"  # a symlink: writes through it are resolved anyway


def test_case_and_moves_do_not_escape_the_rules():
    """On a case-insensitive file system `.GIT/hooks` is `.git/hooks` and `.ENV` is `.env`: deny and ask rules
    and the sensitive places match in any case. `mv .git g` changes .git (then `g/hooks` is no .git)."""
    p = policy("commands", allow=["run: echo *", "run: mv *"], deny=["write: .env"])
    assert run(p, "echo x > .ENV").verdict == "deny"
    assert decide(p, "write", {"path": ".Env", "content": "x"}).verdict == "deny"
    assert run(p, "echo x > .GIT/hooks/pre-commit").verdict == "ask"
    assert run(p, "echo x > sub/.Git/config").verdict == "ask"
    assert run(p, "mv .git g").verdict == "ask"
    assert run(p, "mv .env x").verdict == "deny"
    assert run(p, "mv a b").verdict == "allow"


def test_a_path_built_at_run_time_is_not_covered_by_an_allow_rule_under_commands():
    """`cat $a$b$c` (or `cat "$(printf ...)"`) may read oh's session file whatever the pieces look like: under
    `commands`/`all` an allow rule covers such a word only for a program that never opens it (echo, printf,
    test...). Without protected places or read/write rules there is nothing to guard (the bash-trace policy)."""
    allow = ["run: cat *", "run: printf *", "run: echo *"]
    for level in ("commands", "all"):
        p = policy(level, allow=allow)
        assert run(p, "a=/x; cat $a$b").verdict == "ask"
        assert run(p, 'cat "$(printf %s/y /x)"').verdict == "ask"
        assert run(p, "a=1; echo $a").verdict == "allow"
        assert run(p, "cat README.md").verdict == "allow"
    assert run(policy("risky", allow=allow), "cat $a$b").verdict == "allow"  # residual at risky (§8)
    assert run(Policy("commands", parse_rules(allow), WS, "/home/u", ()), "cat $a").verdict == "allow"


def test_arguments_resolving_into_oh_state_are_asked():
    p = policy("commands", allow=["run: cat *"])
    assert run(p, "cat notes.json").verdict == "allow"
    assert run(p, "cat notes.json", Where(WS, {"notes.json": (STATE + "/sessions/x.json",)})).verdict == "ask"
    assert "notes.json" in places("run", {"command": "cat notes.json > out < in"})


# ---------------------------------------------------------------------- kinds and what the user sees
@pytest.mark.parametrize("kind", ["editors", "symbols", "definition", "references", "stat", "diagnostics", "open"])
def test_content_revealing_kinds_are_asked_under_all(kind):
    args = {"path": "src/x.py"} if kind == "stat" else {}
    assert decide(policy("all"), kind, args).verdict == "ask"
    assert decide(policy("commands"), kind, args).verdict == "allow"


@pytest.mark.parametrize("level", LEVELS)
def test_an_unclassified_kind_is_asked_at_every_level(level):
    assert decide(policy(level), "teleport", {}).verdict == "ask"


def test_ensure_is_decided_by_its_runs_and_jobs_ask_nothing():
    # ensure is answered outside the gate (runtimes/stack.py: outermost): its installs are runs through it
    assert decide(policy("commands"), "ensure", {}).verdict == "allow"
    assert run(policy("commands"), "npm ci --no-audit").verdict == "ask"
    assert decide(policy("all"), "job", {"op": "list"}).verdict == "allow"


def test_a_command_too_long_to_show_is_refused_not_asked():
    line = "touch M; : " + "a" * (64 * 1024)
    d = run(policy("commands", allow=["run: touch *", "run: : *"]), line)
    assert d.verdict == "deny" and d.refused and "command too long to show for consent" in d.reason
    assert run(policy("never"), line).verdict == "allow"
    short = run(policy("commands"), "eval 'x'\n" + "echo y\n" * 100)
    assert short.verdict == "ask" and short.parts == ("eval 'x'\n" + "echo y\n" * 100,)  # the whole line


def test_shellparse_functions_stay_short():
    tree = ast.parse((SRC / "shellparse.py").read_text())
    long = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.end_lineno - n.lineno >= 80]
    assert long == []


def test_security_md_names_real_tests():
    """docs/security.md §8: every test it names exists (P::name, B[row], path::name), and every bullet and
    table row of it names at least one."""
    import importlib.util
    import re
    import sys

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("consent_battery", root / "tests" / "security" / "consent_battery.py")
    assert spec is not None and spec.loader is not None
    battery = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("consent_battery", battery)  # dataclasses look their module up while defining
    spec.loader.exec_module(battery)
    CASES = battery.CASES
    text = (root / "docs" / "security.md").read_text()
    section = text[text.index("## 8. Consent") :]
    section = section[: section.index("\n## ", 5)] if "\n## " in section[5:] else section
    rows = {c.name for c in CASES}
    for name in re.findall(r"B\[([^\]]+)\]", section):
        assert name in rows, f"§8 names battery row {name!r}, which tests/security/consent_battery.py lacks"
    for name in re.findall(r"`P::(\w+)`", section):
        assert f"def {name}(" in Path(__file__).read_text(), name
    for path, name in re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", section):
        assert f"def {name}(" in (root / path).read_text(), f"{path}::{name}"
    claims = [line for line in section.splitlines() if line.startswith(("- **", "| `"))]
    for line in claims:
        block = section[section.index(line) :].split("\n- ", 1)[0] if line.startswith("- ") else line
        assert re.search(r"`(P::|tests/)|B\[", block), f"§8 says something without a test: {line[:80]}"
