"""Workspace bootstrap (docs/protocol.md §3.14): the ``ensure`` action's rules, pure.

``plan(facts)`` says what to run for a project directory given what is on disk (the input files'
hashes, the tools found, the environments' health, the stamps they carry): for each target
(``python`` -> ``.venv``, ``node`` -> ``node_modules``) nothing (the stamp matches and the environment
is healthy), one shell command to run as a job, or a refusal saying why. The stamp written after a
successful run holds two hashes: ``env`` (what the environment itself depends on: the interpreter,
the tool that creates it) and ``deps`` (the lockfiles / requirement files, the installer and its
command). A changed ``env`` rebuilds the environment; a changed ``deps`` re-runs only the install.
No stamp, or a broken environment (missing interpreter), is never trusted.

Also here: argument checks, the stamp's shape, the text the agent reads. The I/O (reading files,
finding tools, running jobs, writing stamps) is ``oh.runtimes.ensure``.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .errors import ErrorId, ProtocolError

TARGETS = ("python", "node")
STAMP_NAME = ".oh-ensure.json"
STAMP_VERSION = 1
VENV = ".venv"
NODE_MODULES = "node_modules"
SETUP_SCRIPTS = (".oh/setup.sh", ".openhands/setup.sh")  # the first one found runs (once per backend)

PYTHON_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "uv.lock", "poetry.lock", ".python-version")
NODE_LOCKS = ("package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock", "bun.lockb")
NODE_FILES = ("package.json", ".yarnrc.yml", *NODE_LOCKS)
# Detected and reported, not installed: (file, what it is, what to do instead).
OTHER_FILES = {
    "Pipfile": (
        "Pipenv (Pipfile): not handled by ensure; add a requirements.txt or a pyproject.toml, or run `pipenv "
        "install` yourself"
    ),
    "environment.yml": "conda (environment.yml): not handled by ensure; run `conda env create` yourself",
    "Cargo.toml": "Rust (Cargo.toml): not handled by ensure; `cargo build` fetches the dependencies itself",
    "go.mod": "Go (go.mod): not handled by ensure; `go build` / `go mod download` fetch the dependencies",
    "Gemfile": "Ruby (Gemfile): not handled by ensure; run `bundle install` yourself",
    "composer.json": "PHP (composer.json): not handled by ensure; run `composer install` yourself",
    "pom.xml": "Maven (pom.xml): not handled by ensure",
    "build.gradle": "Gradle (build.gradle): not handled by ensure",
    "build.gradle.kts": "Gradle (build.gradle.kts): not handled by ensure",
}
TOOLS = ("uv", "poetry", "npm", "yarn", "pnpm", "bun", "node")


def is_requirements(name: str) -> bool:
    """``requirements.txt``, ``requirements-dev.txt``, ``requirements_test.txt``... at the project's top."""
    return name.startswith("requirements") and name.endswith(".txt") and "/" not in name


def is_input(name: str) -> bool:
    """Whether a top-level file name is one ``plan`` looks at (the I/O side hashes exactly these)."""
    return name in PYTHON_FILES or name in NODE_FILES or name in OTHER_FILES or is_requirements(name)


# --------------------------------------------------------------------------- arguments
def check_ensure_args(args: dict[str, Any], cause: int | None) -> None:
    """Validate an ``ensure`` action's args; ProtocolError(BAD_REQUEST) says what to send."""
    targets = args.get("targets")
    if targets is not None:
        ok = isinstance(targets, list) and bool(targets) and all(isinstance(t, str) and t in TARGETS for t in targets)
        _require(
            ok,
            f"args.targets must be a non-empty list of {', '.join(TARGETS)} (or absent: every target detected).",
            cause,
        )
    for key in ("wait", "force"):
        v = args.get(key)
        _require(v is None or isinstance(v, bool), f"args.{key} must be a boolean.", cause)
    path = args.get("path")
    _require(
        path is None or (isinstance(path, str) and path != "" and "\x00" not in path),
        "args.path must be a non-empty string (the project directory; default: the agent's working directory).",
        cause,
    )


def _require(cond: bool, msg: str, cause: int | None) -> None:
    if not cond:
        raise ProtocolError(ErrorId.BAD_REQUEST, msg, cause)


# --------------------------------------------------------------------------- facts and plan
@dataclass(frozen=True)
class Facts:
    """What the I/O side found in one project directory (all it needs to decide, nothing else).

    ``files``: top-level input file -> sha256 of its content (``is_input`` names only).
    ``pyproject``: ``project`` / ``build`` (it has a [project] / [build-system] table), ``poetry``.
    ``python``: the base interpreter's absolute path (None: none found); ``python_id`` its identity
    (real path and version), ``node_id`` node's. ``tools``: tool -> absolute path of those found.
    ``venv``: ``missing`` | ``broken`` (no working interpreter inside) | ``ok``; ``node_modules``: it exists.
    ``stamps``: target -> the stamp read from the environment (None: none, or unreadable).
    """

    files: Mapping[str, str] = field(default_factory=dict)
    pyproject: Mapping[str, bool] = field(default_factory=dict)
    python: str | None = None
    python_id: str = ""
    node_id: str = ""
    tools: Mapping[str, str] = field(default_factory=dict)
    venv: str = "missing"
    node_modules: bool = False
    stamps: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    """One target's verdict. ``action``: ``noop`` | ``install`` | ``refuse``."""

    target: str
    action: str
    why: str
    command: str = ""
    stamp: Mapping[str, Any] = field(default_factory=dict)
    ready: Mapping[str, str] = field(default_factory=dict)  # interpreter / bin, relative to the project
    check: str = ""  # what must exist after a successful run (else it did not really work); "" = nothing
    inputs: tuple[str, ...] = ()
    installer: str = ""


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    other: tuple[tuple[str, str], ...] = ()  # (file, why it is not handled)

    def step(self, target: str) -> Step | None:
        return next((s for s in self.steps if s.target == target), None)


def digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]


def stamp_of(target: str, env: str, deps: str) -> dict[str, Any]:
    return {"oh_ensure": STAMP_VERSION, "target": target, "env": env, "deps": deps}


def _stamp_matches(stamp: Mapping[str, Any] | None, target: str) -> bool:
    return isinstance(stamp, Mapping) and stamp.get("oh_ensure") == STAMP_VERSION and stamp.get("target") == target


def plan(facts: Facts, *, targets: tuple[str, ...] = TARGETS, force: bool = False) -> Plan:
    steps = []
    if "python" in targets:
        step = _python(facts, force)
        if step is not None:
            steps.append(step)
    if "node" in targets:
        step = _node(facts, force)
        if step is not None:
            steps.append(step)
    other = tuple((name, why) for name, why in OTHER_FILES.items() if name in facts.files)
    return Plan(tuple(steps), other)


def _q(path: str) -> str:
    return shlex.quote(path)


def _python_installer(files: Mapping[str, str], uv: str | None, poetry: str | None) -> tuple[str, str]:
    """(how the project is installed, a note when a lock file cannot be honoured)."""
    if "uv.lock" in files and uv:
        return "uv-sync", ""
    if "poetry.lock" in files and poetry:
        return "poetry", ""
    kind = "uv-pip" if uv else "pip"
    for lock, tool in (("uv.lock", "uv"), ("poetry.lock", "poetry")):
        if lock in files:
            return kind, (
                f" ({lock} found but {tool} is not installed: the lock is not honoured, the project is "
                "installed with pip)"
            )
    return kind, ""


def _python_commands(f: Facts, kind: str, rebuild: bool, reqs: list[str], installable: bool) -> list[str]:
    """The shell commands that (re)build the virtual environment and install the project into it."""
    uv, poetry = f.tools.get("uv"), f.tools.get("poetry")
    parts: list[str] = []
    if rebuild and f.venv != "missing":
        parts.append(f"rm -rf {VENV}")
    if kind == "uv-sync":
        parts.append(f"{_q(uv)} sync --frozen" + (f" --python {_q(f.python)}" if f.python and rebuild else ""))  # type: ignore[arg-type]
        return parts
    if rebuild:
        parts.append(
            f"{_q(uv)} venv --python {_q(f.python)} {VENV}"  # type: ignore[arg-type]
            if kind == "uv-pip"
            else f"{_q(f.python)} -m venv {VENV}"  # type: ignore[arg-type]
        )
    if kind == "poetry":
        parts.append(f'VIRTUAL_ENV="$PWD/{VENV}" {_q(poetry)} install --no-interaction')  # type: ignore[arg-type]
        return parts
    what = [f"-r {_q(r)}" for r in reqs] + (["-e ."] if installable else [])
    if kind == "uv-pip":
        parts.append(f"{_q(uv)} pip install --python {VENV}/bin/python " + " ".join(what))  # type: ignore[arg-type]
    else:
        parts.append(f"{VENV}/bin/python -m pip install --disable-pip-version-check " + " ".join(what))
    return parts


def _python(f: Facts, force: bool) -> Step | None:
    files = f.files
    reqs = sorted(n for n in files if is_requirements(n))
    pp = f.pyproject
    installable = bool(pp.get("project") or pp.get("build")) or "setup.py" in files
    uv, poetry = f.tools.get("uv"), f.tools.get("poetry")
    if not (reqs or installable or "uv.lock" in files or "poetry.lock" in files):
        return None  # not a Python project (a pyproject.toml holding only tool settings is not one)
    ready = {"interpreter": f"{VENV}/bin/python", "bin": f"{VENV}/bin"}
    kind, note = _python_installer(files, uv, poetry)
    inputs = tuple(sorted(n for n in files if n in PYTHON_FILES or is_requirements(n)))
    if f.python is None and kind != "uv-sync":
        return Step(
            "python",
            "refuse",
            "no Python interpreter found (python3 on PATH): install one, then call ensure again",
            ready=ready,
            inputs=inputs,
            installer=kind,
        )
    creator = "uv" if kind in ("uv-sync", "uv-pip") else "venv"
    env = digest("python", f.python_id, creator, files.get(".python-version"))
    deps = digest(kind, sorted((n, files[n]) for n in inputs), pp.get("project"), pp.get("build"))
    stamp = f.stamps.get("python")
    trusted = _stamp_matches(stamp, "python")
    # A healthy .venv without our stamp (made by hand, or by an install we did not finish) is kept and
    # installed into; a stamp for another interpreter, or no working interpreter, means a new one.
    rebuild = force or f.venv != "ok" or (trusted and stamp.get("env") != env)  # type: ignore[union-attr]
    if not rebuild and trusted and stamp.get("deps") == deps:  # type: ignore[union-attr]
        return Step("python", "noop", "up to date", ready=ready, inputs=inputs, installer=kind)
    parts = _python_commands(f, kind, rebuild, reqs, installable)
    if rebuild:
        why = (
            "new environment"
            if f.venv == "missing"
            else (
                "the environment is broken (no working interpreter)"
                if f.venv == "broken"
                else "forced"
                if force
                else "the interpreter changed"
            )
        )
    elif not trusted:
        why = "no stamp: the environment was never completed by ensure (or an install was interrupted)"
    else:
        why = "inputs changed: " + ", ".join(inputs)
    return Step(
        "python",
        "install",
        why + note,
        " && ".join(parts),
        stamp_of("python", env, deps),
        ready,
        f"{VENV}/bin/python",
        inputs,
        kind,
    )


def _node(f: Facts, force: bool) -> Step | None:
    files = f.files
    if "package.json" not in files:
        return None
    lock = next(
        (
            n
            for n in (
                "pnpm-lock.yaml",
                "yarn.lock",
                "bun.lock",
                "bun.lockb",
                "package-lock.json",
                "npm-shrinkwrap.json",
            )
            if n in files
        ),
        None,
    )
    tool = {"pnpm-lock.yaml": "pnpm", "yarn.lock": "yarn", "bun.lock": "bun", "bun.lockb": "bun"}.get(lock or "", "npm")
    ready = {"bin": f"{NODE_MODULES}/.bin"}
    inputs = tuple(n for n in ("package.json", lock) if n)
    path = f.tools.get(tool)
    if path is None:
        hint = " (`corepack enable` provides it)" if tool in ("yarn", "pnpm") else ""
        return Step(
            "node",
            "refuse",
            f"{lock or 'package.json'} needs {tool}, which is not installed{hint}",
            ready=ready,
            inputs=inputs,
            installer=tool,
        )
    if tool == "npm":
        command = (
            f"{_q(path)} ci --no-audit --no-fund"
            if lock
            else f"{_q(path)} install --no-audit --no-fund --no-package-lock"
        )
    elif tool == "yarn":
        command = f"{_q(path)} install " + ("--immutable" if ".yarnrc.yml" in files else "--frozen-lockfile")
    else:
        command = f"{_q(path)} install --frozen-lockfile"
    env = digest("node", f.node_id, tool)
    deps = digest(
        command.split(" ", 1)[1], sorted((n, files[n]) for n in inputs if n in files), files.get(".yarnrc.yml")
    )
    stamp = f.stamps.get("node")
    trusted = _stamp_matches(stamp, "node")
    if not force and f.node_modules and trusted and stamp.get("env") == env and stamp.get("deps") == deps:  # type: ignore[union-attr]
        return Step("node", "noop", "up to date", ready=ready, inputs=inputs, installer=tool)
    if force:
        why = "forced"
    elif not f.node_modules:
        why = "no node_modules"
    elif not trusted:
        why = "no stamp: node_modules was never completed by ensure (or an install was interrupted)"
    elif stamp.get("env") != env:  # type: ignore[union-attr]
        why = "node or the installer changed"
    else:
        why = "inputs changed: " + ", ".join(inputs)
    if lock is None:
        why += " (no lockfile: versions are not pinned; nothing is written to the repository)"
    # No check: a package without dependencies gets no node_modules from npm ci (the backend creates it for the stamp).
    return Step("node", "install", why, command, stamp_of("node", env, deps), ready, "", inputs, tool)


# --------------------------------------------------------------------------- answers
def target_line(t: Mapping[str, Any]) -> str:
    """One line of the answer's text for a target's result (``extras.targets`` item)."""
    name, state = t["target"], t["state"]
    where = ", ".join(f"{k} {v}" for k, v in (t.get("ready") or {}).items())
    job = f" as job {t['job_id']}" if t.get("job_id") else ""
    took = f", {t['duration_s']:g} s" if isinstance(t.get("duration_s"), (int, float)) else ""
    if state == "ready" and t.get("did") == "nothing":
        return f"{name}: ready, nothing to do ({t.get('why', 'up to date')}); {where}"
    if state == "ready":
        return f"{name}: ready: ran `{t.get('command', '')}`{job}{took} ({t.get('why', '')}); {where}"
    if state == "running":
        return (
            f"{name}: still installing{job} (`{t.get('command', '')}`): follow it with the job action (op "
            "wait, poll, output, "
            f'cancel; args.job_id "{t.get("job_id")}"), or call ensure again to wait for it'
        )
    if state == "refused":
        return f"{name}: not installed: {t.get('why', '')}"
    code = f" (exit code {t['exit_code']})" if t.get("exit_code") is not None else ""
    tail = (t.get("output_tail") or "").rstrip()
    out = (
        f"{name}: {state.upper()}{code}: `{t.get('command', '')}`{job}{took}; the environment is not trusted and "
        "will be redone by the next ensure"
    )
    if t.get("error"):
        out += f". {t['error']}"
    return out + (f"\n--- last output of {t.get('job_id') or 'the install'} ---\n{tail}" if tail else "")


def answer_text(
    path: str, results: Sequence[Mapping[str, Any]], other: Sequence[Mapping[str, str]], took: float
) -> str:
    if not results and not other:
        return (
            f"Nothing to set up in {path}: no Python (pyproject.toml, requirements*.txt, setup.py, uv.lock, "
            "poetry.lock) or Node (package.json) project found there. Pass args.path to name the project directory."
        )
    states = {t["state"] for t in results}
    head = (
        "Environment ready"
        if states <= {"ready"}
        else "Environment still being installed"
        if "running" in states
        else "Environment NOT ready"
    )
    lines = [f"{head} in {path} ({took:.3f} s):"]
    lines += ["  " + target_line(t).replace("\n", "\n  ") for t in results]
    lines += [f"  detected, not handled: {o['file']}: {o['why']}" for o in other]
    return "\n".join(lines)


def overall(results: Sequence[Mapping[str, Any]]) -> str:
    """``ready`` (every target ready), ``running``, or ``failed`` (a target failed, was cancelled or refused)."""
    states = {t["state"] for t in results}
    if states <= {"ready"}:
        return "ready"
    if "running" in states and not states & {"failed", "cancelled", "lost"}:
        return "running"
    return "failed"


def setup_note(script: str, record: Mapping[str, Any] | None, tail: str = "", *, error: str = "") -> str:
    """What the first action's observation says about the workspace's setup script."""
    if error:
        return f"[Workspace setup script {script} could not run: {error}. It is not retried in this backend.]"
    rec = record or {}
    jid, state, code = rec.get("job_id"), rec.get("state"), rec.get("exit_code")
    if state == "RUNNING":
        return (
            f"[Workspace setup script {script} is still running as job {jid}: follow it with the job action "
            f'(args.job_id "{jid}"; op wait, output, cancel).]'
        )
    if state == "SUCCEEDED":
        return f"[Workspace setup script {script} ran as job {jid} (exit code 0, {rec.get('duration_s', 0):g} s).]"
    text = tail.rstrip()[-2000:]
    return (
        f"[Workspace setup script {script} FAILED as job {jid} ({state}, exit code {code}); it is not retried "
        "in this backend. "
        f'Its full output: the job action op output, args.job_id "{jid}".'
        + (f" Last output:\n{text}\n" if text else "")
        + "]"
    )
