"""Consent follows package runners into the program they run (npx X, npm exec -- X, uv run X, poetry run X,
...) and asks at `risky` for inline interpreter code that runs programs, deletes or overwrites files, or
hides what it calls (python -c, node -e, perl -e, ...). Pure decisions here, plus the followed part checked
against what the real runner execs (npx and uv, where installed). Real effects through a real backend:
tests/security/consent_battery.py (rows "npx runs a risky program", "python -c runs a program", ...)."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from oh.protocol import progargs, programs, shellparse
from oh.protocol.consent import Policy, decide, parse_rules

WS = "/home/u/proj"


def policy(level="risky", allow=(), ask=(), deny=()):
    return Policy(level, parse_rules(allow, ask, deny), WS, "/home/u", ("/home/u/.local/state/oh",))


def verdict(p, command):
    return decide(p, "run", {"command": command}, None, None).verdict


def followed(line):
    parsed = shellparse.parse(line)
    assert parsed.unknown is None, parsed.unknown
    return [list(p.argv) for p in parsed.parts if p.via]


@pytest.mark.parametrize(
    "line, argvs",
    [
        ("npx rm -rf x", [["rm", "-rf", "x"]]),
        ("npx --yes -- rm -rf x", [["rm", "-rf", "x"]]),
        ("npx --no rm x", [["rm", "x"]]),  # npx-cli gives --no the next word, npm's parser makes it a flag
        ("npx -p cowsay cowsay hi", [["cowsay", "hi"]]),
        ("npx cowsay@1.2 hi", [["cowsay", "hi"]]),
        ("npx -c 'rm x; echo y'", [["rm", "x"], ["echo", "y"]]),
        ("npm exec -- rm -v x", [["rm", "-v", "x"]]),
        ("npm x --offline -- rm x", [["rm", "x"]]),
        ("npm --offline exec rm x", [["rm", "x"]]),
        ("npm exec --offline true rm x", [["rm", "x"]]),  # npm's parser gives `true` to --offline
        ("npx --offline true rm x", [["true", "rm", "x"]]),  # npx-cli puts its -- before `true`
        ("pnpm dlx cowsay hi", [["cowsay", "hi"]]),
        ("pnpm exec rm x", [["rm", "x"]]),
        ("pnpm -c exec 'rm x && ls'", [["rm", "x"], ["ls"]]),
        ("pnpm jest --ci", [["jest", "--ci"]]),  # an unknown word: a script or the project's program
        ("yarn dlx -p cowsay cowsay", [["cowsay"]]),
        ("yarn exec rm x", [["rm", "x"]]),
        ("bunx cowsay", [["cowsay"]]),
        ("bun x --bun rm x", [["rm", "x"]]),
        ("uvx ruff@0.3 check", [["ruff", "check"]]),
        ("uvx --from ruff==0.3 ruff", [["ruff"]]),
        ("uv tool run --with x rm y", [["rm", "y"]]),
        ("uv tool -q run rm y", [["rm", "y"]]),  # uv's global options go after a subcommand too
        ("uv tool uvx rm y", [["rm", "y"]]),
        ("uv run pytest -x", [["pytest", "-x"]]),
        ("uv run -m pytest", [["python", "-m", "pytest"]]),
        ("uv --directory d run --with foo -- rm x", [["rm", "x"]]),
        ("pipx run --spec cowsay cowsay hi", [["cowsay", "hi"]]),
        ("poetry run pytest -v", [["pytest", "-v"]]),
        ("poetry -C d run rm x", [["rm", "x"]]),
        ("pdm run -p d rm x", [["rm", "x"]]),
        ("hatch run test:rm x", [["rm", "x"]]),
        ("conda run -n env rm x", [["rm", "x"]]),
        ("mamba run -p /e rm x", [["rm", "x"]]),
        ("pixi run rm x", [["rm", "x"]]),
        ("mise exec node@20 -- rm x", [["rm", "x"]]),
        ("rye run rm x", [["rm", "x"]]),
        ("pipenv run rm x", [["rm", "x"]]),
        ("npx bash -c 'rm x'", [["rm", "x"]]),  # what the runner runs is unwrapped like any command
        ("uv run env A=1 rm x", [["rm", "x"]]),
        ("npm install x", []),
        ("npm test", []),
        ("pnpm install", []),
        ("uv pip install x", []),
        ("poetry install", []),
    ],
)
def test_package_runners_are_followed(line, argvs):
    assert followed(line) == argvs
    parts = shellparse.parse(line).parts
    assert parts[0].argv == tuple(shellparse.parse(line).parts[0].argv) and not parts[0].via  # the runner stays


@pytest.mark.parametrize(
    "line",
    [
        "npx --frobnicate rm x",
        "npx $OPT rm x",
        "npm exec --script-shell ./x -- rm",
        "npm exec",
        "uv run --frobnicate rm x",
        "uvx --frob rm",
        "poetry run --weird rm x",
        "conda run --weird rm x",
        "hatch run +py=3.11 rm x",
        "mise exec node@20",  # no command: mise starts a shell
        "yarn exec 'rm x; ls'",
        "pnpm exec -r rm x",  # pnpm exec's options go in front of `exec`
        "npm exec --yes $X rm",  # $X may be `true`, which npm's parser gives to --yes
        "npx $CMD",
    ],
)
def test_runner_options_not_known_are_asked(line):
    assert shellparse.parse(line).unknown is not None
    assert verdict(policy("risky"), line) == "ask"


def test_the_program_a_runner_runs_is_decided_as_its_own():
    assert verdict(policy("risky"), "npx rm -rf x") == "ask"
    assert verdict(policy("risky"), "uv run rm -rf x") == "ask"
    assert verdict(policy("never", deny=["run: rm *"]), "npm exec -- rm -rf x") == "deny"
    assert verdict(policy("never", deny=["run: rm *"]), "poetry run rm -rf x") == "deny"
    assert verdict(policy("never", deny=["run: npx *"]), "npx eslint .") == "deny"  # a rule on the runner holds
    assert verdict(policy("risky"), "uv run oh approve c1") == "ask"
    # the workspace's own programs ask nothing new at `risky`
    for line in ("uv run pytest -x", "poetry run pytest", "npx eslint .", "uv run script.py", "pnpm jest"):
        assert verdict(policy("risky"), line) == "allow", line


def test_a_rule_on_the_runner_line_covers_its_program_unless_risky():
    assert verdict(policy("commands", allow=["run: uv run pytest *"]), "uv run pytest -x") == "allow"
    assert verdict(policy("commands", allow=["run: npx *"]), "npx eslint .") == "allow"
    assert verdict(policy("commands", allow=["run: npx *"]), "npx rm -rf x") == "ask"
    assert verdict(policy("risky", allow=["run: npx *"]), "npx rm -rf x") == "ask"
    assert verdict(policy("commands", allow=["run: npx *", "run: rm *"]), "npx rm -rf x") == "allow"
    assert verdict(policy("commands", allow=["run: pytest *"]), "uv run pytest") == "ask"  # uv itself unallowed


@pytest.mark.parametrize(
    "line",
    [
        "python3 -c 'import shutil; shutil.rmtree(\"x\")'",
        "python -c 'import os; os.system(\"rm x\")'",
        'python3 -Ic \'import subprocess; subprocess.run(["rm", "x"])\'',
        "python3 -c 'import pathlib; pathlib.Path(\"x\").unlink()'",
        'python3 -c \'open("x", "w").write("y")\'',
        'node -e \'require("child_process").execSync("rm x")\'',
        'node -e \'require("fs").rmSync("x")\'',
        'node --eval=\'require("fs").writeFileSync("x", "")\'',
        "perl -e 'system(\"rm x\")'",
        "perl -ne 'unlink $_'",
        "perl -e '`rm x`'",
        "ruby -e 'File.delete(\"x\")'",
        "ruby -e 'system(\"rm x\")'",
        "php -r 'unlink(\"x\");'",
        "php -r 'shell_exec(\"rm x\");'",
        "deno eval 'Deno.remove(\"x\")'",
        'bun -e \'Bun.spawn(["rm", "x"])\'',
        # what hides a name: asked too
        'python3 -c \'import os; getattr(os, "sys" + "tem")("rm x")\'',
        'python3 -c \'__import__("o" + "s").popen("x")\'',
        "python3 -c 'exec(\"print(1)\")'",
        "python3 -c 'import base64'",
        "python3 -c 'print(chr(114) + chr(109))'",
        'node -e \'const m = "child_" + "process"; require(m)\'',
        "node -e 'eval(\"1\")'",
        'node -e \'Buffer.from("cm0=", "base64")\'',
        'php -r \'$f = "sys" . "tem"; $f("rm x");\'',
        "perl -e 'eval \"1\"'",
        "uv run python -c 'import shutil; shutil.rmtree(\"x\")'",  # through a runner too
        'python3 -c "$CODE"',  # code only known at run time
        "python3 -c 'import os as o; o.system(\"x\")'",  # an alias hides the module
        "python3 -c 'from os import system; system(\"x\")'",
        "python3 -c 'import posix; posix.system(\"x\")'",
        'python3 -c \'import pathlib; pathlib.Path("x").open("w")\'',
        'python3 -c \'open("x", mode="a")\'',
        "python3 -c 'from os import *'",
        'node -e \'require("fs").promises.rm("x")\'',
        'node -e \'import("child_" + "process")\'',
        'perl -e \'open(my $f, ">", "x")\'',
        "ruby -e '%x(rm x)'",
        'ruby -e \'File.open("x", "w")\'',
        'node -e "$(cat x.js)"',
    ],
)
def test_inline_code_that_runs_or_changes_files_is_asked_at_risky(line):
    assert verdict(policy("risky"), line) == "ask"
    assert verdict(policy("never"), line) == "allow"  # at never the sandbox is the wall


@pytest.mark.parametrize(
    "line",
    [
        "python3 -c 'print(1+1)'",
        "python -c 'import sys; print(sys.version)'",
        "python3 -c 'import json; print(json.dumps({\"a\": 1}))'",
        "python3 -c 'print(open(\"x\").read())'",
        "python3 -c 'import os; print(os.getcwd(), os.path.exists(\"x\"))'",
        "python3 -c 'from os import path; print(path.sep)'",
        "python3 -c 'import pathlib; print(pathlib.Path(\"x\").read_text())'",
        "node -e 'console.log(process.version)'",
        "node -p '1 + 1'",
        "perl -ne 'print if /x/' f",
        "ruby -e 'puts 1'",
        "php -r 'echo 1;'",
        "deno eval 'console.log(1)'",
        "python3 script.py -c 'os.system(x)'",  # a file runs, -c is its own argument
    ],
)
def test_plain_inline_code_is_not_asked_at_risky(line):
    assert verdict(policy("risky"), line) == "allow"


def test_inline_code_extraction():
    assert progargs.inline_code("python3", ["-W", "ignore", "-c", "x", "-c", "y"]) == ["x"]
    assert progargs.inline_code("perl", ["-lne", "a", "-e", "b"]) == ["a", "b"]
    assert progargs.inline_code("node", ["--eval=a"]) == ["a"]
    # node: a word is not taken for the script (it may be a long option's value: --title x -e CODE), read on
    assert progargs.inline_code("node", ["script.js", "-e", "a"]) == ["a"]
    assert progargs.inline_code("node", ["--title", "x", "-e", "a"]) == ["a"]
    assert progargs.inline_code("node", ["-pe", "a"]) == ["a"]  # node's -pe alias, not -p with code "e"
    assert progargs.inline_code("python3", ["--check-hash-based-pycs", "always", "-c", "a"]) == ["a"]
    assert progargs.inline_code("deno", ["eval", "a"]) == ["a"]
    assert progargs.inline_code("ls", ["-e", "a"]) == []


# ------------------------------------------------------------------ against the real runners (fuzzed)
PROG = '#!/bin/sh\n: > "$LOG"\nfor a; do printf "%s\\n" "$a" >> "$LOG"; done\n'
ARGS = ["a", "-v", "--call", "x y", "-y", "--", "--yes", "-c", "rm"]


def _runs(cmd: list[str], cwd: Path, env: dict[str, str]) -> list[str] | None:
    log = cwd / "log"
    log.unlink(missing_ok=True)
    subprocess.run(cmd, cwd=cwd, env=env, timeout=60, capture_output=True)
    return log.read_text().splitlines() if log.exists() else None


def _check(line: list[str], got: list[str] | None) -> None:
    import shlex

    (part,) = [p for p in shellparse.parse(shlex.join(line)).parts if p.via]
    if Path(part.argv[0]).name == "prog":
        assert list(part.argv[1:]) == got, (line, part.argv, got)
    else:  # the checker says another program runs: then prog must not have run
        assert got is None, (line, part.argv, got)


@pytest.mark.skipif(shutil.which("npx") is None, reason="npx not installed")
def test_npx_and_npm_exec_follow_what_npm_really_runs(tmp_path):
    """Random option orders for npx / npm exec: the followed part is what npm execs (a program of the local
    project, so nothing is fetched; --offline too)."""
    (tmp_path / "package.json").write_text('{"name": "t", "version": "1.0.0"}')
    bin_ = tmp_path / "node_modules" / ".bin"
    bin_.mkdir(parents=True)
    (bin_ / "prog").write_text(PROG)
    (bin_ / "prog").chmod(0o755)
    env = {**os.environ, "LOG": str(tmp_path / "log"), "npm_config_update_notifier": "false"}
    rng = random.Random(25)
    opts = ["--yes", "-y", "-q", "--quiet", "--no", "--prefer-offline", "--ignore-scripts", "-s", "--silent"]
    opts += ["true", "false", "--no-yes", "--yes=true"]  # npm's parser: a boolean takes a following true/false
    for _ in range(16):
        mine = rng.sample(opts, rng.randint(0, 3)) + ["--offline"]
        rng.shuffle(mine)
        args = rng.sample(ARGS, rng.randint(0, 4))
        if rng.random() < 0.5:
            line = ["npx", *mine, *(["--"] if rng.random() < 0.5 else []), "prog", *args]
        else:
            line = ["npm", "exec", *mine, "--", "prog", *args]
        _check(line, _runs(line, tmp_path, env))


def _uv() -> str | None:
    here = Path(sys.executable).parent / "uv"
    return str(here) if here.exists() else shutil.which("uv")


@pytest.mark.skipif(_uv() is None, reason="uv not installed")
def test_uv_run_follows_what_uv_really_runs(tmp_path):
    uv = _uv()
    assert uv is not None
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "prog").write_text(PROG)
    (bin_ / "prog").chmod(0o755)
    env = {**os.environ, "LOG": str(tmp_path / "log"), "PATH": f"{bin_}:{os.environ['PATH']}"}
    env.pop("VIRTUAL_ENV", None)
    rng = random.Random(26)
    opts = ["-q", "--no-config", "--isolated", "--no-sync", "--no-cache", "--no-progress", "--frozen"]
    for _ in range(10):
        mine = rng.sample(opts, rng.randint(0, 3)) + ["--no-project", "--offline"]
        rng.shuffle(mine)
        args = rng.sample(ARGS, rng.randint(0, 4))
        line = [uv, "run", *mine, *(["--"] if rng.random() < 0.5 else []), "prog", *args]
        _check(line, _runs(line, tmp_path, env))


def test_runner_option_tables_are_consistent():
    """An option both a flag and a value-taker would be read as a flag: its value would become the program."""
    specs = [shellparse._SHELL]
    for rec in programs.RECORDS:
        specs += [rec.wrapper.options] if rec.wrapper else []
        if rec.launcher is not None:
            ln = rec.launcher
            specs += [x for x in (ln.globals, ln.direct) if x is not None] + [o for _, o in ln.subcommands]
    assert len(set(specs)) > 20
    with pytest.raises(programs.TableError):
        programs.Options(flags="ab", req="b")
    for spec in specs:
        assert not set(spec.flags) & set(spec.req + spec.opt), spec
        assert not set(spec.long_flags) & set(spec.long_req + spec.long_opt), spec
    assert followed("uv run -w foo rm x") == [["rm", "x"]]
    assert followed("uvx -p 3.12 -c c.txt rm") == [["rm"]]
    assert followed("bunx -p cowsay cowsay") == [["cowsay"]]


# Shapes that made the inline-code patterns scan to the end of the code from every start (quadratic): a 64 KB
# line of them took seconds to decide, in the backend's event loop. Each pattern now looks a bounded distance.
ADVERSARIAL = {
    "perl open": ("perl", "-e", "open(x " * 9000),
    "node quotes": ("node", "-e", "['" * 30000),
    "python open(": ("python3", "-c", "open(" * 12000),
    "python import": ("python3", "-c", "import a " * 7000),
    "npx then node": ("npx", "--yes", "--", "node", "-e", "+'" * 30000),
}


def test_inline_code_past_the_limit_is_asked_unread():
    code = "print(1)\n" * (progargs.INLINE_MAX // 9 + 1)
    why = progargs.inline_runs("python3", ["-c", code])
    assert why is not None and "too long for the gate to read" in why
    assert progargs.inline_runs("python3", ["-c", "print(1)\n" * 100]) is None


def test_adversarial_inline_code_is_decided_without_hanging():
    """Every shape above, as a line as long as consent shows (64 KB), is decided in a fresh process within a
    generous bound (a hang guard, not a speed figure)."""
    script = (
        "import shlex, sys, json\n"
        "from oh.protocol.consent import Policy, decide, parse_rules\n"
        "p = Policy('risky', parse_rules((), (), ()), '/home/u/proj', '/home/u', ())\n"
        "for argv in json.load(sys.stdin):\n"
        "    part = ' '.join(shlex.quote(a) for a in argv)\n"
        "    line = ' ; '.join([part] * max(1, 60000 // len(part)))\n"
        "    print(decide(p, 'run', {'command': line}, None, None).verdict, flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(list(ADVERSARIAL.values())),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.split()) == len(ADVERSARIAL)


@pytest.mark.parametrize("runner", ["npx ", "uv run ", "npm exec -- ", "poetry run ", "env npx ", "timeout 1 uv run "])
def test_runners_nested_past_the_depth_limit_are_asked_not_a_crash(runner):
    """`npx npx … true` was followed by recursion: 3,000 levels raised RecursionError out of the decision."""
    for n in (3000, 15000):
        assert verdict(policy(), (runner * n)[:60000] + "true") == "ask"
    # within the limit the program at the end is still followed (a deny rule on it holds)
    assert verdict(policy(deny=["run: touch *"]), runner * 3 + "touch M") == "deny"
