"""Issue 30 item 16: the commands people type start without typer/rich, and say the same as typer would.

`oh --help` is drawn from a table cached by scripts/gen-help (oh.fastpath.help); `oh config get KEY` runs
in oh.commands.quick. Real `oh` processes; typer's own output (OH_NO_FASTPATH=1) is the reference.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from waiting import poll_until

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("typer", "click", "rich", "websockets", "keyring", "psutil")
PROBE = (
    "import sys\nsys.argv = ['oh', *sys.argv[1:]]\nfrom oh.cli import main\ntry:\n    main()\nexcept SystemExit:\n    "
    "pass\nsys.stdout.flush()\nprint('LOADED', sorted({m.split('.')[0] for m in sys.modules} & {%s}), "
    "file=sys.stderr)\n" % ", ".join(repr(h) for h in HEAVY)
)


def _heavy_loaded(oh, *args: str, env: dict | None = None) -> list[str]:
    p = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env=dict(oh.env, **(env or {})),
        cwd=oh.workspace,
        timeout=60,
    )
    line = [x for x in p.stderr.splitlines() if x.startswith("LOADED ")][-1]
    return eval(line[len("LOADED ") :])  # noqa: S307 - our own repr of a list of module names


def test_cached_help_table_is_current():
    """The table oh.fastpath.help draws is what typer's app says now (else: run scripts/gen-help)."""
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen-help"), "--check"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("columns", [60, 80, 133, 200])
def test_fast_help_is_typers_help_at_every_width(oh, columns):
    env = {"COLUMNS": str(columns)}
    for args in (["--help"], ["-h"], []):
        fast = oh(*args, env=env)
        slow = oh(*args, env=dict(env, OH_NO_FASTPATH="1"))
        assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr), args
        assert (fast.stdout or fast.stderr).startswith(" " * columns + "\n Usage: oh [OPTIONS] COMMAND")
        assert fast.returncode == (0 if args else 2)


def test_help_and_config_get_load_no_typer_or_rich(oh):
    assert _heavy_loaded(oh, "--help") == []
    assert _heavy_loaded(oh, "config", "get", "port") == []
    assert _heavy_loaded(oh, "config", "list") != []  # the probe sees typer when it is loaded


def test_config_get_prints_lists_one_item_per_line_on_both_paths(oh):
    oh("config", "add", "consent_allow", "run: ls *", check=0)
    oh("config", "add", "consent_allow", "write: docs/**", check=0)
    for env in ({}, {"OH_NO_FASTPATH": "1"}):
        assert oh("config", "get", "consent_allow", env=env, check=0).stdout == "run: ls *\nwrite: docs/**\n"
        assert oh("config", "get", "consent_deny", env=env, check=0).stdout == ""
        assert oh("config", "get", "port", env=env, check=0).stdout == "0\n"
        bad = oh("config", "get", "prot", env=env, check=2)
        assert (
            bad.stderr.startswith("oh: unknown setting 'prot'. Did you mean 'port'?") and "Traceback" not in bad.stderr
        )
    listed = oh("config", "list", check=0).stdout
    assert 'consent_allow          ["run: ls *", "write: docs/**"]\n' in listed  # a TOML array, not a Python repr


def _tab(word: str) -> dict:
    return {"_OH_COMPLETE": "complete_bash", "COMP_WORDS": f"oh {word}", "COMP_CWORD": "1"}


def test_tab_on_the_first_word_answers_as_typer_without_loading_it(oh):
    """Issue 30 item 14: `oh st<TAB>` in bash takes the fast path; its answer is typer's, word for word."""
    for word in ("", "s", "st", "re", "jobs", "zzz", "--"):
        fast = oh(env=_tab(word))
        slow = oh(env=dict(_tab(word), OH_NO_FASTPATH="1"))
        assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr), word
    assert oh(env=_tab("st")).stdout.split() == ["start", "stop", "status", "stat"]
    assert _heavy_loaded(oh, env=_tab("st")) == []
    assert _heavy_loaded(oh, env=_tab("--")) == []  # option names too (the tree: test_tab_everywhere_…)
    # after `--` too (issue 41: `oh run -- <TAB>` took ~0.2 s in typer), with typer's answer (nothing: files)
    after = {"_OH_COMPLETE": "complete_bash", "COMP_WORDS": "oh run -- l", "COMP_CWORD": "3"}
    assert _heavy_loaded(oh, env=after) == []
    fast, slow = oh(env=after), oh(env=dict(after, OH_NO_FASTPATH="1"))
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)


def test_bare_logs_without_typer_prints_what_typer_prints(oh):
    assert oh("logs").returncode == oh("logs", env={"OH_NO_FASTPATH": "1"}).returncode == 3  # no trace yet
    oh.start("local")
    oh("run", "--", "echo hi", check=0)
    # The trace's result line is written after the observation is sent: wait for it, then compare the two.
    poll_until(lambda: "→" in oh("logs", check=0).stdout, 30, "the run's result line in the trace")
    fast, slow = oh("logs", check=0), oh("logs", env={"OH_NO_FASTPATH": "1"}, check=0)
    assert fast.stdout == slow.stdout and "echo hi" in fast.stdout
    assert _heavy_loaded(oh, "logs") == []


def _no_age(text: str) -> str:
    """The listing with each row's age blanked: two calls a moment apart may see different ages."""
    return re.sub(r"  \S+ ago", "  AGE ago", text)


def test_approvals_without_typer_or_websockets_prints_what_typer_prints(oh):
    """`oh approvals` asks the backend over oh.fastpath.ws with the decider credential: same listing, same JSON."""
    for env in ({}, {"OH_NO_FASTPATH": "1"}):  # no backend: the full command words it, on both paths
        gone = oh("approvals", env=env, check=3)
        assert "no running backend serves" in gone.stderr
    oh.start("local", None, "--consent", "commands")
    assert oh("approvals", check=0).stdout == "consent: commands, 0 rule(s)\nNothing waits for your consent.\n"
    command = "touch made.txt && echo " + "x" * 150 + " \x1b[31mred"  # wrapped at 100, the escape shown escaped
    agent = subprocess.Popen(
        [sys.executable, "-m", "oh", "run", command],
        cwd=oh.workspace,
        env=oh.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rows: list[dict] = []
    try:
        rows = oh.pending()
        [row] = rows
        fast, slow = oh("approvals", check=0), oh("approvals", env={"OH_NO_FASTPATH": "1"}, check=0)
        assert _no_age(fast.stdout) == _no_age(slow.stdout) and fast.stderr == slow.stderr == ""
        assert f"{row['id']}  " in fast.stdout and "\x1b" not in fast.stdout and "    $ " + "x" * 10 in fast.stdout
        json_fast = oh.json("approvals", "--json")
        json_slow = oh.json("approvals", "--json", env={"OH_NO_FASTPATH": "1"})
        for answer in (json_fast, json_slow):
            for r in answer["approvals"] + answer.get("waiting", []):
                r.pop("age_s", None)
        assert json_fast == json_slow
        assert _heavy_loaded(oh, "approvals") == [] and _heavy_loaded(oh, "approvals", "--json") == []
    finally:
        for r in rows:
            oh("reject", r["id"], check=0)
        agent.kill() if not rows else agent.wait(timeout=60)
    assert not (oh.workspace / "made.txt").exists()


def _ports_blanked(text: str) -> str:
    """`oh doctor`'s port check names the free port it just got: another one on each call."""
    return re.sub(r"\(e\.g\. \d+\)", "(e.g. PORT)", text)


def test_doctor_without_typer_prints_what_typer_prints(oh):
    """`oh doctor` runs its checks in oh.commands.doctorview: same report and exit code, text and JSON, before
    and with a backend (session, token and dependency checks); neither typer nor keyring is loaded for it."""
    for started in (False, True):
        if started:
            oh.start("local")
        for args in (["doctor"], ["doctor", "--json"]):
            fast, slow = oh(*args), oh(*args, env={"OH_NO_FASTPATH": "1"})
            assert fast.returncode == slow.returncode and fast.stderr == slow.stderr
            assert _ports_blanked(fast.stdout) == _ports_blanked(slow.stdout), args
        report = oh.json("doctor", "--json")
        checks = {c["check"]: c for c in report["checks"]}
        assert checks["dependency websockets"]["status"] == "ok" and checks["dependency websockets"]["detail"]
        assert any(name.startswith("session ") for name in checks) == started
    assert _heavy_loaded(oh, "doctor") == [] and _heavy_loaded(oh, "doctor", "--json") == []


# Standard-library modules `oh doctor` has no need of, each a slice of the interpreter's start: dataclasses (and the
# inspect it loads), socket (enum, selectors) and the IDNA codec its name lookup loads, json (re and its compiled
# patterns), zipfile (the bundled .vsix is read with zipimport), typing, subprocess (the bwrap probe is spawned).
STDLIB_UNNEEDED = (
    "dataclasses",
    "inspect",
    "socket",
    "encodings.idna",
    "json",
    "zipfile",
    "typing",
    "subprocess",
    "shutil",
    "bz2",
    "lzma",
)


STDLIB_PROBE = (
    "import sys\nsys.argv = ['oh', *sys.argv[1:]]\nfrom oh.cli import main\ntry:\n    main()\nexcept SystemExit:\n"
    "    pass\nsys.stdout.flush()\nprint('LOADED', sorted(set(sys.modules) & set(%r)), file=sys.stderr)\n"
    % (STDLIB_UNNEEDED,)
)


def _stdlib_loaded(oh, *args: str) -> list[str]:
    p = subprocess.run(
        [sys.executable, "-c", STDLIB_PROBE, *args],
        capture_output=True,
        text=True,
        env=oh.env,
        cwd=oh.workspace,
        timeout=60,
    )
    assert p.returncode in (0, 1), p.stderr  # 1: a check failed (e.g. no VS Code CLI is not one; bwrap may be)
    return eval([x for x in p.stderr.splitlines() if x.startswith("LOADED ")][-1][len("LOADED ") :])  # noqa: S307


def test_doctor_with_a_backend_loads_only_what_its_checks_need(oh):
    """`oh doctor` reads sessions, the token, the settings and the editors without dataclasses, asks the backend
    over `_socket` (one round trip when it answers /v1/status), and loads none of the modules above."""
    oh.start("local")
    report = oh.json("doctor", "--json")
    [session] = [c for c in report["checks"] if c["check"].startswith("session ")]
    assert session["status"] == "ok" and "answers on ws://127.0.0.1:" in session["detail"]
    assert _stdlib_loaded(oh, "doctor") == [] and _stdlib_loaded(oh, "doctor", "--json") == ["json"]


def _fake_bwrap(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def test_doctor_sandbox_probe_runs_beside_the_other_checks(oh, tmp_path):
    """`oh doctor` starts the bubblewrap probe before its other checks and reads its answer last: a bwrap that
    fails says why (its stderr, the fix) on both paths; one that works is named; the probe ran exactly once."""
    marks = tmp_path / "runs"
    bad = _fake_bwrap(
        tmp_path / "bwrap-bad", f'echo run >> {marks}; echo "bwrap: uid map: Permission denied" >&2; exit 1'
    )
    oh("config", "set", "sandbox_bwrap", str(bad))
    for env in ({}, {"OH_NO_FASTPATH": "1"}):
        marks.unlink(missing_ok=True)
        done = oh("doctor", "--json", env=env, check=None)
        checks = {c["check"]: c for c in __import__("json").loads(done.stdout)["checks"]}
        assert checks["sandbox"]["status"] == "fail" and "uid map: Permission denied" in checks["sandbox"]["detail"]
        assert done.returncode != 0 and marks.read_text() == "run\n"
    oh("config", "set", "sandbox_bwrap", str(_fake_bwrap(tmp_path / "bwrap-good", f"echo run >> {marks}")))
    checks = {c["check"]: c for c in oh.json("doctor", "--json")["checks"]}
    assert checks["sandbox"] == {
        **checks["sandbox"],
        "status": "ok",
        "detail": f"workspace-write with {tmp_path}/bwrap-good",
    }


def test_bwrap_probe_that_never_answers_is_killed_and_reaped(tmp_path):
    """A bwrap that hangs: the probe gives up at its timeout, says so, and leaves no process behind."""
    from oh.runtimes.bwrapcheck import start

    pidfile = tmp_path / "pid"
    probe = start(str(_fake_bwrap(tmp_path / "bwrap-hang", f"echo $$ > {pidfile}; exec sleep 60")))
    found = probe.result(timeout=1.0)
    assert not found.ok and "no answer in 1 s" in found.problem
    pid = int(pidfile.read_text())
    assert not Path(f"/proc/{pid}").exists()


def _running(cmdline: bytes) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == cmdline:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_doctor_drops_its_early_probe_when_the_settings_say_otherwise(oh, tmp_path):
    """`oh doctor` starts probing the bwrap on PATH before it reads the settings: with `sandbox = off` it reports
    the sandbox off and leaves no probe behind; with another `sandbox_bwrap` it reports that one."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_bwrap(bin_dir / "bwrap", "exec sleep 31.4159")  # a bwrap on PATH that would never answer
    env = {"PATH": f"{bin_dir}:{oh.env['PATH']}"}
    oh("config", "set", "sandbox", "off", check=0)
    for extra in ({}, {"OH_NO_FASTPATH": "1"}):
        checks = {c["check"]: c for c in oh.json("doctor", "--json", env={**env, **extra})["checks"]}
        assert checks["sandbox"]["status"] == "ok" and checks["sandbox"]["detail"].startswith("off")
    assert _running(b"sleep\x0031.4159\x00") == []  # killed and reaped, not left to the init process
    oh("config", "set", "sandbox", "workspace-write", check=0)
    oh("config", "set", "sandbox_bwrap", str(_fake_bwrap(tmp_path / "bwrap-good", "exit 0")), check=0)
    checks = {c["check"]: c for c in oh.json("doctor", "--json", env=env)["checks"]}
    assert checks["sandbox"]["status"] == "ok" and checks["sandbox"]["detail"].endswith(f"{tmp_path}/bwrap-good")
    assert _running(b"sleep\x0031.4159\x00") == []


@functools.cache
def _typer_command():
    """typer's click command for oh, built once (building it took most of the comparison's time)."""
    import typer.main

    from oh.cli import app

    return typer.main.get_command(app)


def _typer_tab(words: list[str], cword: int) -> str:
    """typer's own bash completion for COMP_WORDS/COMP_CWORD, in this process (the reference)."""
    from typer._completion_classes import BashComplete

    env = {"COMP_WORDS": " ".join(words), "COMP_CWORD": str(cword)}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return BashComplete(_typer_command(), {}, "oh", "_OH_COMPLETE").complete()
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def _cases():
    """Every command path of the tree, with option names, option values and arguments being completed."""
    from oh.fastpath.completedata import TREE

    for path, (visible, _subs, options, arguments) in TREE.items():
        words = ["oh", *path]
        for inc in ("", "-", "--", "x", *{s[:1] for s in visible}, *{s[:2] for s in visible}):
            yield [*words, inc]
        for opt in options:
            for name in (*opt[0], *opt[1]):
                yield [*words, name[:3]]
                if opt[2]:
                    for v in {"", *(x[:1] for x in (opt[5] or ()))}:
                        yield [*words, name, v]
                    yield [*words, name, "v1", "--"]
                else:
                    yield [*words, name, "-"]
                    yield [*words, name, ""]
        if arguments:
            values = arguments[0][1] or ()
            for v in {"", "a", *(x[:2] for x in values)}:
                yield [*words, v]
                yield [*words, "first", v]
                yield [*words, "first", "second", v]
            for after in (["--", ""], ["--", "-"], ["--", "first", ""], ["--", "--", "a"]):  # arguments only
                yield [*words, *after]


def test_tab_everywhere_answers_as_typer_and_only_typer_answers_the_rest(oh, monkeypatch):
    """Issue 30 item 14: every TAB in bash takes the fast path (subcommands, option names, runtimes, setting names,
    shells, choices, running instance ids), and answers what typer answers, word for word, on every path of the
    command tree; unusual words (`--opt=value`, quoting, `--` in a group) are left to typer."""
    from oh.fastpath.complete import answer

    info = oh.start("local")
    for key in ("OH_HOME", "HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):  # both answer from the fixture's backends
        monkeypatch.setenv(key, oh.env[key])
    assert answer(["stop"], "") == [info["instance_id"]]
    fast = 0
    for words in _cases():
        mine = answer(words[1:-1], words[-1])
        if mine is not None:
            fast += 1
            # typer lists its help option's two names in set order (it varies with the hash seed): as oh declares them
            assert "\n".join(mine) == _typer_tab(words, len(words) - 1).replace("--help\n-h", "-h\n--help"), words
    assert fast > 500, fast
    assert answer(["run", "--"], "") == [] and answer(["start", "--runtime=v"], "") is None
    # real `oh` processes: later words too, without typer
    for line, cword, want in (
        ("oh config set ", 3, "runtime"),
        ("oh start --runtime ", 3, "local\nvscode\n"),
        ("oh jobs ", 2, "wait\noutput\ncancel\npoll\n"),
        ("oh run --ti", 2, "--timeout\n"),
        ("oh stop ", 2, info["instance_id"] + "\n"),
    ):
        env = {"_OH_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(cword)}
        p = oh(env=env)
        assert (p.returncode, p.stderr) == (0, "") and p.stdout.startswith(want), (line, p.stdout)
        assert _heavy_loaded(oh, env=env) == [], line
