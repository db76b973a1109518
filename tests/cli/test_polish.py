"""Issue 30 (what a new user hits), the CLI polish items: real ``oh`` processes (the ``oh`` fixture)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from waiting import poll_until

# Every command that writes into OH_HOME (config.toml, the token file, config edit's working copy).
WRITERS = [
    ("config", "set", "port", "0"),
    ("config", "add", "consent_allow", "run: ls *"),
    ("config", "remove", "consent_allow", "run: ls *"),
    ("config", "unset", "port"),
    ("config", "edit"),
    ("token", "rotate"),
]


def _read_only_mount_works() -> bool:
    """A read-only bind mount in a private mount namespace stops root too (chmod does not)."""
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind -o ro / /"], capture_output=True, timeout=10)
    return probe.returncode == 0


def _clean_failure(p: subprocess.CompletedProcess, args: tuple[str, ...]) -> None:
    assert p.returncode in (1, 2), (args, p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and "Error:" not in p.stderr, (args, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert lines and lines[0].startswith("oh: cannot "), (args, p.stderr)
    assert "OH_HOME" in p.stderr and len(lines) <= 2, (args, p.stderr)  # one line and its fix


@pytest.mark.parametrize("args", WRITERS, ids=" ".join)
def test_oh_home_under_a_file_is_one_clear_line(oh, args):
    """OH_HOME below a regular file (ENOTDIR: fails for root as for anyone)."""
    blocker = oh.tmp / "afile"
    blocker.write_text("not a directory\n")
    p = oh(*args, env={"OH_HOME": str(blocker / "oh"), "EDITOR": "true"}, input="")
    _clean_failure(p, args)


@pytest.mark.skipif(not _read_only_mount_works(), reason="needs unshare -m and mount (root or user namespaces)")
def test_read_only_oh_home_is_one_clear_line(oh, tmp_path):
    """OH_HOME on a read-only mount: every writer says which file and the fix, exit 1, no traceback."""
    home = tmp_path / "rohome"
    home.mkdir(mode=0o700)
    (home / "config.toml").write_text('port = 7\nconsent_allow = ["run: ls *"]\n')
    os.chmod(home / "config.toml", 0o600)
    for args in WRITERS:
        p = subprocess.run(
            ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(home)]
            + [sys.executable, "-m", "oh", *args],
            capture_output=True,
            text=True,
            input="",
            cwd=oh.workspace,
            env=dict(oh.env, OH_HOME=str(home), EDITOR="true"),
            timeout=60,
        )
        _clean_failure(p, args)
        assert p.returncode == 1 and f"cannot write {home}" in p.stderr and "Read-only file system" in p.stderr, (
            args,
            p.stderr,
        )
    assert (home / "config.toml").read_text() == 'port = 7\nconsent_allow = ["run: ls *"]\n'


# ---------------------------------------------------------------- item 12: wording
def test_help_footers_and_metavars_say_what_they_mean(oh):
    for verb in ("read", "write", "edit"):
        text = oh(verb, "--help", check=0).stdout
        assert "Exit codes:" in text and "oh run" not in text and "command's own exit code" not in text, verb
    assert "command's own exit code" in oh("run", "--help", check=0).stdout
    ensure = oh("ensure", "--help", check=0).stdout
    assert "oh ensure [OPTIONS] [DIR]" in ensure and "[[DIR]]" not in ensure
    start = " ".join(oh("start", "--help", check=0).stdout.replace("│", " ").split())
    assert "supported editor CLI" in start and "`code` is on PATH" not in start


def _command_paths() -> list[tuple[str, ...]]:
    """Every command and subcommand of the app, as argv prefixes."""
    import typer.main

    from oh.cli import app

    def walk(command, prefix):
        yield prefix
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            yield from walk(sub, (*prefix, name))

    return [p for p in walk(typer.main.get_command(app), ()) if p]


def _premature_breaks(text: str, columns: int) -> list[str]:
    """Prose lines (outside the option boxes) broken although the next word fitted: a source line break."""
    lines = [line.rstrip() for line in text.splitlines()]
    found = []
    for a, b in zip(lines, lines[1:]):
        if not a.strip() or not b.strip() or a.lstrip().startswith(("│", "╭", "╰", "Usage:")):
            continue
        if b.lstrip().startswith(("│", "╭", "╰")):
            continue
        if len(a) + 1 + len(b.split()[0]) < columns - 1:
            found.append(f"{a!r} / {b!r}")
    return found


def test_every_help_reads_at_80_columns(oh):
    """Walk 2: `oh start --help` printed "... extension watches: the window" / "whose workspace ..." (typer
    keeps a docstring's source line breaks), as did run, attach, token rotate and vscode install; and
    `oh diagnostics [[PATH]]`, `oh review accept [[ID]]` doubled the optional brackets (ensure's fix, item 12)."""
    bad = []
    for path in _command_paths():
        p = oh(*path, "--help", env={"COLUMNS": "80", "OH_NO_FASTPATH": "1"}, check=0)
        assert p.returncode == 0, (path, p.stderr)
        usage = next(line for line in p.stdout.splitlines() if "Usage:" in line)
        if "[[" in usage:
            bad.append(f"oh {' '.join(path)}: {usage.strip()}")
        bad += [f"oh {' '.join(path)}: {b}" for b in _premature_breaks(p.stdout, 80)]
    assert not bad, "\n".join(bad)


def test_readme_has_no_empty_heading():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text().splitlines()
    for above, below in zip(readme, readme[1:]):
        assert not (above.startswith("## ") and below.startswith("#")), f"empty heading: {above!r}"


def test_a_bad_value_is_explained_once(oh):
    for args in (("port", "abc"), ("runtime", "nope")):
        p = oh("config", "set", *args, check=2)
        assert len(p.stderr.strip().splitlines()) == 1 and "Allowed:" not in p.stderr, p.stderr
    p = oh("config", "add", "consent_allow", "bogus", check=2)
    assert p.stderr.count("PATTERN") == 1, p.stderr


def test_timeout_note_says_1_second_and_logs_name_the_agent(oh):
    oh.start("local")
    p = oh("run", "--timeout", "1", "--", "sleep 5")
    both = p.stdout + p.stderr
    assert "after 1 second " in both and "1 seconds" not in both, both
    oh("run", "--", "true", check=0)
    logs = oh("logs", check=0).stdout
    # the CLI's agent is "oh-cli" in the live view; its id (a1, a2, …) is an internal number
    assert "  oh-cli  " in logs and not re.search(r"  a\d+  ", logs), logs


def test_logs_elsewhere_says_whose_trace_and_an_empty_one_says_so(oh):
    """Walk 2: `oh logs` in a folder no backend serves printed another workspace's records (the newest trace)
    without saying whose, and a trace with no records yet printed nothing at all (exit 0): it looked broken."""
    info = oh.start("local")
    iid = info["instance_id"]
    elsewhere = oh.tmp / "elsewhere"
    elsewhere.mkdir()
    p = oh("logs", cwd=elsewhere, check=0)
    assert p.stdout == "" and f"backend {iid} has recorded no action yet" in p.stderr, p.stderr
    assert f"no backend serves {elsewhere}" in p.stderr and f"backend {iid}'s" in p.stderr, p.stderr
    oh("run", "--", "echo hi", check=0)
    p = poll_until(lambda: (lambda q: q if "echo hi" in q.stdout else None)(oh("logs", cwd=elsewhere)), 30, "the run")
    assert f"backend {iid}'s" in p.stderr and "no action" not in p.stderr, p.stderr
    p = oh("logs", check=0)  # in the backend's own workspace: its trace, nothing to explain
    assert "echo hi" in p.stdout and p.stderr == "", p.stderr


def test_ensure_refused_unwatched_gives_its_whole_fix_and_names_oh_watch(oh):
    """Walk 2: with nobody watching, `oh ensure`'s answer cut the refusal at 500 characters, mid-rule ('network:
    .venv/bin/python -m pip install --disable-pip-version-check -r' — the rule to copy, broken), its progress
    line stopped mid-word ("which the sandbox ke"), and the fix did not name `oh watch` (a watch view can answer)."""
    (oh.workspace / "requirements.txt").write_text("# nothing to fetch\n")
    oh.start("local")
    p = oh("ensure", "--only", "python", timeout=60, check=1)
    rule = "'network: .venv/bin/python -m pip install --disable-pip-version-check -r requirements.txt'"
    assert rule in p.stdout and "`oh watch` in another terminal" in p.stdout and "It was: " in p.stdout, p.stdout
    steps = [line for line in p.stderr.splitlines() if line.startswith("oh: python: ")]
    assert steps and all(len(line) < 320 for line in steps), p.stderr
    assert all(line.endswith(" …") or line.endswith(".") for line in steps), p.stderr


def test_logs_name_the_agent_of_jobs_and_consent_records_too(oh):
    """Item 12, re-checked: `oh logs` named the agent in its request/result lines but printed `agent_id="a2"`
    in the job and consent records, where the live view shows the agent's name."""
    oh.start("local", None, "--consent", "commands")
    agent = subprocess.Popen(
        [sys.executable, "-m", "oh", "run", "--background", "--", "sleep 0.2; echo bg"],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        (ask,) = oh.pending()
        oh("approve", ask["id"], check=0)
        out, err = agent.communicate(timeout=60)
        assert agent.returncode == 0, err
        oh("jobs", "wait", out.strip(), "--timeout", "30", check=0)
    finally:
        if agent.poll() is None:
            agent.kill()
    # The trace is written in batches: its last records come a moment after the command that made them.
    logs = poll_until(lambda: (lambda t: t if " job_finished " in t else None)(oh("logs").stdout), 30, "the job's end")
    kinds = ("job_started", "job_finished", "approval_requested", "approval_decided")
    records = {kind: [line for line in logs.splitlines() if f" {kind} " in line] for kind in kinds}
    assert all(len(lines) == 1 and " oh-cli " in lines[0] for lines in records.values()), logs
    assert "agent_id=" not in logs and not re.search(r"  a\d+  ", logs), logs


# ---------------------------------------------------------------- item 7: `oh vscode install` from a checkout
REPO = Path(__file__).resolve().parents[2]
BUILT_VSIX = REPO / "extension" / "oh-vscode.vsix"


def _install_from_checkout(oh, path_dirs: list[str], tmp_path: Path) -> tuple[subprocess.CompletedProcess, object]:
    from launcher.fake_cli import FakeClis

    clis = FakeClis(tmp_path / "clis")
    cli = clis.add("code")
    env = {"PATH": os.pathsep.join([str(clis.bin), *path_dirs])}
    return oh("vscode", "install", "--editor", str(cli), env=env, timeout=900), clis


@pytest.mark.skipif(BUILT_VSIX.exists(), reason="this checkout's extension is already built (nothing to build)")
def test_vscode_install_from_a_checkout_without_npm_names_what_to_install(oh, tmp_path):
    p, clis = _install_from_checkout(oh, [], tmp_path)  # PATH: the editor CLI only, no npm
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "needs Node 20 with npm" in p.stderr and "oh vscode install` again" in p.stderr, p.stderr
    assert not BUILT_VSIX.exists()


@pytest.mark.slow
@pytest.mark.skipif(BUILT_VSIX.exists() or not shutil.which("npm"), reason="needs npm and an unbuilt checkout")
def test_vscode_install_from_a_checkout_builds_the_extension_with_npm(oh, tmp_path):
    npm_dir = os.path.dirname(shutil.which("npm") or "")
    p, clis = _install_from_checkout(oh, [npm_dir], tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "building the extension from this checkout" in p.stderr and BUILT_VSIX.is_file()
    assert "npm run package in " in p.stderr, p.stderr[:500]  # the step it runs, named whole (not "npm run -s")
    assert "oh-dev.oh-vscode" in clis.installed("code")


# ---------------------------------------------------------------- item 15
def test_config_edit_blames_the_edit_and_keeps_the_users_text(oh):
    oh.home.mkdir(mode=0o700)
    (oh.home / "config.toml").write_text("port = 7\n")
    os.chmod(oh.home / "config.toml", 0o600)
    bad_editor = 'sh -c \'echo runtime = \\"nope\\" >> "$1"\' sh'
    p = oh("config", "edit", env={"EDITOR": bad_editor}, input="", check=2)
    first = p.stderr.splitlines()[0]
    assert first.startswith("oh: your edit of config.toml: runtime must be one of local, vscode"), p.stderr
    assert str(oh.home / "config.toml") + ":" not in p.stderr  # the unchanged file is not the culprit
    assert (oh.home / "config.toml").read_text() == "port = 7\n"
    assert 'runtime = "nope"' in (oh.home / "config.rejected.toml").read_text()
    # `oh config edit` again goes on from that text; fixed, it becomes config.toml
    fixer = "sh -c 'sed -i s/nope/local/ \"$1\"' sh"
    p = oh("config", "edit", env={"EDITOR": fixer}, input="", check=0)
    assert "going on with your last edit" in p.stderr
    assert (oh.home / "config.toml").read_text() == 'port = 7\nruntime = "local"\n'
    assert not (oh.home / "config.rejected.toml").exists()


@pytest.mark.parametrize(("module", "extra"), [("openhands", "openhands"), ("openhands_v0", "openhands-v0")])
def test_an_integration_without_its_extra_names_the_extra(oh, module, extra):
    probe = (
        "import importlib.util, sys\nif importlib.util.find_spec('openhands'): sys.exit(42)\nimport "
        f"oh.integrations.{module}"
    )
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=oh.env, timeout=60)
    if p.returncode == 42:
        pytest.skip("the OpenHands packages are installed here")
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: ") and f"pip install -e '.[{extra}]'" in last, p.stderr


# ---------------------------------------------------------------- item 13: 80 columns
def _lines_of(term) -> list[str]:
    """The lines of oh's messages on stderr ("oh: …" and their indented continuations), as the pty got them."""
    lines, inside = [], False
    for line in term.raw.replace("\r\n", "\n").split("\n"):
        inside = line.startswith("oh: ") or (inside and line.startswith("    "))
        if inside:
            lines.append(line)
    return lines


def test_warnings_and_errors_wrap_at_word_boundaries_at_80_columns(oh):
    import socket

    from cli.terminal import Term

    # sandbox off: the longest warning `oh start` gives (with the sandbox on it says nothing)
    term = Term(oh, "--detach", "--runtime", "local", "--no-open", "--sandbox", "off", cols=80)
    try:
        assert term.finish() == 0
        term.session()
    finally:
        term.kill()
    lines = _lines_of(term)
    assert all(len(line) < 80 for line in lines), lines  # the terminal never had to cut a word
    joined = " ".join(line.strip() for line in lines)
    assert "oh: warning: runtime local has NO sandbox (sandbox = off): every command an agent sends runs" in joined
    assert "Use it only with agents you trust;" in joined
    assert any(line.startswith("    ") for line in lines)  # continuation lines are indented under the message

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = str(taken.getsockname()[1])
        other = oh.tmp / "ws2"
        other.mkdir()
        term = Term(oh, "--detach", "--port", port, "--workspace", str(other), cols=80)
        try:
            assert term.finish() == 1
        finally:
            term.kill()
    finally:
        taken.close()
    lines = _lines_of(term)
    # (a path longer than the terminal, pytest's tmp here, stands alone on its line: it cannot be wrapped)
    assert all(len(line) < 80 or " " not in line.strip() for line in lines), lines
    joined = " ".join(line.strip() for line in lines)
    assert "address already in use (the port is taken: choose another with --port, or 0 for a free one)" in joined


def test_piped_messages_stay_one_line(oh):
    p = oh("config", "set", "port", "abc", env={"COLUMNS": "40"})
    assert p.stderr == "oh: port must be an integer from 0 to 65535 (got 'abc')\n"


def test_live_view_uses_200_columns_and_keeps_the_tail_of_long_paths_at_80(oh):
    from cli.terminal import Term

    long_command = "echo " + " ".join(f"word{i:03d}" for i in range(15))  # 124 characters
    deep = oh.workspace.joinpath(*(f"directory-{i}" for i in range(8)))
    deep.mkdir(parents=True)
    (deep / "the_file_name.py").write_text("x = 1\n")
    for cols in (200, 80):
        term = Term(oh, "--runtime", "local", "--no-open", cols=cols, rows=30)
        try:
            term.session()
            if cols == 200:
                oh("run", "--", long_command, check=0)
                term.see("word014 ")  # the whole command: not cut at 80 by the backend
            else:
                oh("read", str((deep / "the_file_name.py").relative_to(oh.workspace)), check=0)
                term.see("the_file_name.py")  # the workspace-relative tail stays, the head is cut
                assert "directory-0/directory-1" not in term.text()
            term.child.sendintr()
            assert term.finish() == 0
        finally:
            term.kill()


def test_one_byte_one_file_one_entry_are_said_in_the_singular(oh):
    """Issue 30 item 12 (wording), found re-walking the README: `oh write --append` said "appended 1 bytes",
    `oh diff` "write write PATH (1 files, …)" and `oh undo` "Undone entries 2: 1 files restored"."""
    subprocess.run(["git", "init", "-q", str(oh.workspace)], check=True, timeout=30)
    oh.start("local", None, "--history")
    p = oh("write", "log.txt", "--append", "--content", "x", check=0)
    assert p.stdout == f"appended 1 byte to {oh.workspace / 'log.txt'}\n", p.stdout
    oh("write", "log.txt", "--append", "--content", "yz", check=0)
    (first,) = [line for line in oh("diff", "1", check=0).stdout.splitlines() if line.startswith("entry 1:")]
    assert first == f"entry 1: oh-cli write {oh.workspace / 'log.txt'} (1 file, done)", first
    p = oh("undo", "2", check=0)
    assert p.stdout.startswith("Undone entry 2: 1 file restored (entry 3;"), p.stdout
    p = oh("undo", "--to", "1", check=0)
    assert p.stdout.startswith("Undone entries 1, 2, 3: 1 file restored"), p.stdout


def test_start_detach_on_a_terminal_wraps_between_words(oh):
    """Walk 2: `oh start -d` at 80 columns printed "… (runtime local, pid 13001" and then ")" alone: its report
    went to the terminal as long lines, which the terminal cut anywhere. On a terminal it wraps between words now,
    as the warnings above it do; piped it stays one line per fact (scripts read it)."""
    from .terminal import Term

    cols = 60
    term = Term(oh, "-d", "--no-open", "--review", cols=cols, rows=30)
    try:
        assert term.finish() == 0
        info = term.session()
        screen = term.text()
        iid = info["instance_id"]
        lines = screen.splitlines()
        assert any(f"(runtime local, pid {info['pid']})" in line for line in lines), screen
        assert any(f"`oh stop {iid}`" in line for line in lines), screen
        assert "review mode: the agent's writes and edits wait for your accept/reject" in " ".join(screen.split())
        # a path longer than the terminal cannot fit (it is never broken by oh); every other line does
        assert all(len(line) < cols for line in lines if "/tmp/" not in line), screen
    finally:
        term.kill()
    piped = oh("start", "-d", "--no-open", "-C", str(oh.tmp), check=0).stdout.splitlines()
    assert piped[0].startswith("backend ") and piped[0].endswith(")") and piped[-1].startswith("watch it live"), piped


@pytest.mark.parametrize("wait", ["sent", "at once"])
@pytest.mark.parametrize(
    "verb", [("run", "--", "touch marker"), ("run", "-b", "--", "touch marker")], ids=["run", "run -b"]
)
def test_ctrl_c_while_waiting_for_an_editor_says_nothing_ran(oh, verb, wait):
    """Walk 2: runtime vscode, no editor: Ctrl-C during `oh run`'s editor wait said "the command got Ctrl-C in the
    `oh run` shell … `oh run --reset` kills it", and `oh run -b` said "the job keeps running; `oh jobs` lists it"
    (after no note at all that it waited): no command had started. A real pty, the real Ctrl-C key."""
    from .terminal import Term

    oh.start("vscode")
    term = Term(oh, cols=120, argv=["-m", "oh", *verb], env={"OH_CODE": str(oh.tmp / "no-code")})
    try:
        term.see("no editor is connected to this backend")
        if wait == "sent":  # the backend holds the action, waiting for an editor (its trace says so)
            poll_until(lambda: " request " in oh("logs", check=0).stdout, 30, "the action in the backend")
        term.child.sendintr()
        assert term.finish() == 130
        said = " ".join(term.text().split())
        assert "nothing was run or changed." in said, said  # at once: before or after it was sent, as it falls
        assert wait != "sent" or "interrupted while waiting for an editor to connect" in said, said
        assert "keeps running" not in said and "got Ctrl-C" not in said, said
    finally:
        term.kill()
    assert not (oh.workspace / "marker").exists()


def test_jobs_labels_share_one_parenthesis(oh):
    """Walk 2: an `oh ensure` install watched from `oh watch` and allowed the network was listed by `oh jobs` as
    "SUCCEEDED (ensure) (with the network)"; now "SUCCEEDED (ensure, with the network)"."""
    from .terminal import Term

    (oh.workspace / "requirements.txt").write_text("# nothing to fetch\n")
    oh.start("local")
    view = Term(oh, cols=120, argv=["-m", "oh", "watch"])  # someone who can answer: the install is asked
    try:
        view.see("q or Ctrl-C leaves the view")
        agent = oh.agent("ensure", "--only", "python")
        (ask,) = oh.pending()
        oh("approve", ask["id"], check=0)
        out, err = agent.communicate(timeout=120)
        assert agent.returncode == 0, (out, err)
    finally:
        view.kill()
    listed = oh("jobs", check=0).stdout
    assert "SUCCEEDED (ensure, with the network)" in listed and ") (" not in listed, listed
