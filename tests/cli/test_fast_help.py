"""Issue 30 item 16: the commands people type start without typer/rich, and say the same as typer would.

`oh --help` is drawn from a table cached by scripts/gen-help (oh.fastpath.help); `oh config get KEY` runs
in oh.commands.quick. Real `oh` processes; typer's own output (OH_NO_FASTPATH=1) is the reference.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("typer", "click", "rich")
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
    assert _heavy_loaded(oh, env=_tab("--")) != []  # options: typer answers


def test_bare_logs_without_typer_prints_what_typer_prints(oh):
    assert oh("logs").returncode == oh("logs", env={"OH_NO_FASTPATH": "1"}).returncode == 3  # no trace yet
    oh.start("local")
    oh("run", "--", "echo hi", check=0)
    fast, slow = oh("logs", check=0), oh("logs", env={"OH_NO_FASTPATH": "1"}, check=0)
    assert fast.stdout == slow.stdout and "echo hi" in fast.stdout
    assert _heavy_loaded(oh, "logs") == []
