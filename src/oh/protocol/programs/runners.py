"""Programs that run another program: wrappers the parser peels off (sudo, env, nice, xargs...), runners it
does not follow (flock, chroot...: their part says so), shells and interpreters, and package runners whose
grammar finds the program they run (npx X, uv run X, poetry run X)."""

from __future__ import annotations

from oh.protocol import progargs
from oh.protocol.programs.record import Launcher, Options, Program, Wrapper

# ------------------------------------------------------------------------------------------ wrappers
_SUDO = Options(
    flags="AbEHKklnPSVvBN",
    req="CDghprRtTUu",
    long_flags=(
        "askpass",
        "background",
        "set-home",
        "remove-timestamp",
        "reset-timestamp",
        "list",
        "non-interactive",
        "preserve-groups",
        "stdin",
        "version",
        "validate",
        "bell",
        "no-update",
    ),
    long_req=(
        "close-from",
        "chdir",
        "group",
        "host",
        "prompt",
        "chroot",
        "role",
        "type",
        "command-timeout",
        "other-user",
        "user",
    ),
    long_opt=("preserve-env",),
)
_ENV = Options(
    flags="i0v",
    req="uCSa",
    long_flags=("ignore-environment", "null", "list-signal-handling", "debug"),
    long_req=("unset", "chdir", "split-string", "argv0"),
    long_opt=("block-signal", "default-signal", "ignore-signal"),
)
_NOHUP = Options()
_SETSID = Options(flags="cfw", long_flags=("ctty", "fork", "wait"))
_TIME = Options(
    flags="pavq", req="fo", long_flags=("append", "verbose", "quiet", "portability"), long_req=("format", "output")
)
_EXEC = Options(flags="cl", req="a")
_COMMAND = Options(flags="pvV")
_NICE = Options(req="n", long_req=("adjustment",))
_IONICE = Options(flags="t", req="cnpPu", long_flags=("ignore",), long_req=("class", "classdata", "pid", "pgid", "uid"))
_STDBUF = Options(req="ioe", long_req=("input", "output", "error"))
_TIMEOUT = Options(
    flags="fpv", req="sk", long_flags=("foreground", "preserve-status", "verbose"), long_req=("signal", "kill-after")
)
_XARGS = Options(
    flags="0prtx",
    req="aEIdLnPs",
    opt="eil",
    long_flags=("null", "interactive", "no-run-if-empty", "verbose", "exit", "open-tty", "show-limits"),
    long_req=("arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"),
    long_opt=("eof", "replace", "max-lines"),
)

# uv 0.13's own `--help` (uv run, uv tool run / uvx), and hidden flags it still takes (--native-tls, --preview)
_UV_COMMON_FLAGS = tuple(
    "no-cache managed-python no-managed-python no-python-downloads quiet verbose system-certs offline no-progress "
    "no-config help native-tls preview no-preview".split()
)
_UV_COMMON_REQ = ("cache-dir", "color", "allow-insecure-host", "directory", "project", "config-file")
_UV_GLOBAL = Options(flags="qvnhV", long_flags=_UV_COMMON_FLAGS + ("version",), long_req=_UV_COMMON_REQ)
_UV_RESOLVE_FLAGS = tuple(
    "no-env-file isolated no-index upgrade no-sources reinstall compile-bytecode no-build-isolation no-build "
    "no-binary require-build-hashes no-require-build-hashes refresh".split()
)
_UV_RESOLVE_REQ = tuple(
    "env-file with with-editable with-requirements python-platform index default-index index-url "
    "extra-index-url find-links index-strategy keyring-provider upgrade-package upgrade-group resolution "
    "prerelease prerelease-package fork-strategy exclude-newer exclude-newer-package no-sources-package "
    "reinstall-package link-mode config-setting config-settings-package no-build-isolation-package "
    "no-build-package no-binary-package refresh-package python".split()
)
_UV_RUN = Options(
    flags="msUnqvh",
    req="wifPCp",
    long_flags=_UV_COMMON_FLAGS
    + _UV_RESOLVE_FLAGS
    + tuple(
        "all-extras no-dev only-dev no-default-groups all-groups module no-editable exact active no-sync locked "
        "frozen script gui-script all-packages no-project dev inexact no-active".split()
    ),
    long_req=_UV_COMMON_REQ
    + _UV_RESOLVE_REQ
    + ("extra", "no-extra", "group", "no-group", "only-group", "no-editable-package", "package"),
)
_UV_TOOL_RUN = Options(
    flags="UnqvhV",
    req="wcbifPCp",
    long_flags=_UV_COMMON_FLAGS + _UV_RESOLVE_FLAGS + ("lfs", "version"),
    long_req=_UV_COMMON_REQ
    + _UV_RESOLVE_REQ
    + ("from", "constraints", "build-constraints", "overrides", "torch-backend"),
)
_PIPX_RUN = Options(
    flags="hevq",
    req="i",
    long_flags=("help", "no-cache", "pypi", "path", "editable", "verbose", "quiet", "fetch-missing-python"),
    long_req=("index-url", "pip-args", "python", "spec"),
)
_POETRY = Options(
    flags="qvnhV",
    req="CP",
    long_flags=("quiet", "verbose", "no-interaction", "no-plugins", "no-cache", "ansi", "no-ansi", "help", "version"),
    long_req=("directory", "project"),
)
_PDM_RUN = Options(
    flags="hvqglsj",
    req="p",
    long_flags=("help", "verbose", "quiet", "global", "list", "site-packages", "json", "recreate"),
    long_req=("project", "venv", "skip"),
)
_HATCH = Options(
    flags="hvq",
    req="ep",
    long_flags=("help", "verbose", "quiet", "color", "no-color", "interactive", "no-interactive"),
    long_req=("env", "project", "data-dir", "cache-dir", "config"),
)
_CONDA_RUN = Options(
    flags="hvsd",
    req="npare",
    long_flags=("help", "verbose", "dev", "debug-wrapper-scripts", "no-capture-output", "live-stream", "detach")
    + ("clean-env",),
    long_req=("name", "prefix", "cwd", "attach", "env", "label", "root-prefix"),
)
_PIXI_RUN = Options(
    flags="hvqx",
    req="e",
    long_flags=("help", "verbose", "quiet", "frozen", "locked", "clean-env", "force-activate", "no-install")
    + ("revalidate", "skip-deps", "executable", "tls-no-verify", "no-progress"),
    long_req=("manifest-path", "environment", "auth-file", "pypi-keyring-provider", "color", "concurrent-solves"),
)
_PIXI_EXEC = Options(
    flags="hvq",
    req="scpw",
    long_flags=("help", "verbose", "quiet", "force-reinstall", "list", "tls-no-verify", "no-progress"),
    long_req=("spec", "channel", "platform", "with", "auth-file", "color"),
)
_RYE_RUN = Options(flags="hlvq", long_flags=("help", "list", "verbose", "quiet"), long_req=("pyproject",))
_PIPENV_RUN = Options(
    flags="hvq", long_flags=("help", "verbose", "quiet", "system", "site-packages"), long_req=("python", "pypi-mirror")
)
_BUNX = Options(
    flags="h",
    req="p",
    long_flags=("help", "bun", "no-install", "verbose", "silent"),
    long_req=("package",),
)
_PNPM = Options(
    flags="hrwsc",
    req="CF",
    long_flags=("help", "recursive", "workspace-root", "silent", "stream", "parallel", "aggregate-output", "color")
    + ("no-color", "reverse", "report-summary", "shell-mode", "no-reporter-hide-prefix", "if-present"),
    long_req=("dir", "filter", "filter-prod", "reporter", "loglevel", "workspace-concurrency", "resume-from"),
)
_PNPM_DLX = Options(
    flags="hcs", long_flags=("help", "shell-mode", "silent"), long_req=("package", "allow-build", "reporter")
)
_YARN_DLX = Options(flags="hq", req="p", long_flags=("help", "quiet"), long_req=("package",))
_MISE = Options(
    flags="hqvy",
    req="Cjc",
    long_flags=("help", "quiet", "verbose", "yes", "raw", "no-prepare", "fresh-env"),
    long_req=("cd", "jobs", "command"),
)
# pnpm's own commands: `pnpm WORD` with any other word runs a script or a program of the project
_PNPM_COMMANDS = frozenset(
    (
        "add i install it install-test update up upgrade remove rm uninstall un link ln unlink import rebuild rb "
        "prune fetch patch patch-commit patch-remove audit list ls outdated why licenses run run-script test t "
        "start create publish pack recursive server store root bin env setup init deploy doctor config c get set "
        "cat-file cat-index find-hash self-update approve-builds ignored-builds dedupe view info login logout "
        "whoami owner dist-tag search docs help version stop restart prepack"
    ).split()
)

_PRIVILEGES = "changes users or runs as another"
_PUBLISH = (("publish",), ("unpublish",))

WRAPPERS = (
    Program(
        ("sudo", "doas"),
        role="wrapper",
        risky=_PRIVILEGES,
        wrapper=Wrapper(_SUDO, as_user=True),
        match=("sudo -u bob ls",),
    ),
    Program(
        ("env",),
        role="wrapper",
        wrapper=Wrapper(_ENV, sets_env=True),
        match=("env LD_PRELOAD=x.so ls",),
        not_match=("env FOO=1 make",),
    ),
    Program(("nohup",), role="wrapper", wrapper=Wrapper(_NOHUP), match=("nohup rm -rf x",), not_match=("nohup make",)),
    Program(("setsid",), role="wrapper", wrapper=Wrapper(_SETSID), not_match=("setsid make",)),
    Program(
        ("time",),
        role="wrapper",
        wrapper=Wrapper(_TIME, output_options=("-o", "--output")),
        not_match=("time -o t.txt make",),
    ),
    Program(("exec",), role="wrapper", wrapper=Wrapper(_EXEC), not_match=("exec ls",)),
    Program(
        ("command",),
        role="wrapper",
        wrapper=Wrapper(_COMMAND, runs_nothing_with=("-v", "-V")),
        not_match=("command -v rm",),
    ),
    Program(
        ("nice",),
        role="wrapper",
        wrapper=Wrapper(_NICE, number_first=True),
        not_match=("nice -10 make", "nice -n 5 make"),
    ),
    Program(
        ("ionice",),
        role="wrapper",
        wrapper=Wrapper(_IONICE, runs_nothing_with=("-p", "-P", "-u", "--pid", "--pgid", "--uid")),
        not_match=("ionice -p 1",),
    ),
    Program(("stdbuf",), role="wrapper", wrapper=Wrapper(_STDBUF), not_match=("stdbuf -oL make",)),
    Program(
        ("timeout",),
        role="wrapper",
        wrapper=Wrapper(_TIMEOUT, skip_words=1),
        match=("timeout 5 rm x",),
        not_match=("timeout -s KILL 5 make",),
    ),
    Program(
        ("xargs",),
        role="wrapper",
        wrapper=Wrapper(_XARGS, feeds_input=True),
        match=("xargs sh", "xargs -0 rm"),
        not_match=("xargs grep x",),
    ),
)

# Programs that run a command given in their arguments, with option rules of their own: not unwrapped;
# their part says so (runs_args), so deny/ask rules look at every argument and `risky` asks.
RUNNERS = (
    Program(("su",), role="runner", risky=_PRIVILEGES, match=("su -c id bob",)),
    Program(
        tuple(
            (
                "flock chroot watch script runuser sg setpriv prlimit chrt taskset numactl unshare nsenter strace "
                "ltrace valgrind gdb firejail bwrap systemd-run pkexec busybox toybox parallel tmux screen unbuffer "
                "faketime eatmydata fakeroot proot torsocks proxychains proxychains4 dbus-run-session dbus-launch "
                "xvfb-run entr catchsegv sem cpulimit trickle ssh-agent daemonize start-stop-daemon run-parts chpst "
                "setarch linux32 linux64 ccache nix-shell direnv sudoedit caffeinate systemd-inhibit cgexec ip "
                "lxc-attach"
            ).split()
        ),
        role="runner",
        match=("flock /tmp/l make", "watch ls", "strace -f true"),
    ),
)

# -------------------------------------------------------------------------------- shells, interpreters
SHELLS = (
    Program(("sh", "bash"), role="shell", input_args_risky=True, not_match=("bash script.sh",)),
    Program(("zsh", "dash", "ksh", "mksh", "ash", "busybox-sh"), role="shell", not_match=("zsh x.zsh",)),
    Program(
        ("python", "pypy"),
        role="interpreter",
        pattern=r"python[0-9.]*|pypy[0-9.]*",
        runs_python=True,
        inline=progargs.inline_runs,
        code=progargs.inline_code,
        match=("python3 -c 'import os; os.system(\"id\")'",),
        not_match=("python3 -c 'print(1+1)'", "python3 script.py", "python2 x.py"),
    ),
    Program(
        ("node", "nodejs", "perl", "ruby", "irb", "php", "osascript"),
        role="interpreter",
        inline=progargs.inline_runs,
        code=progargs.inline_code,
        match=("node -e 'require(\"child_process\")'", "perl -e 'system q(id)'"),
        not_match=("node app.js", "perl -ne 'print' f"),
    ),
    Program(
        ("fish", "csh", "tcsh", "lua", "luajit", "tclsh", "Rscript", "pwsh", "powershell", "jshell"),
        role="interpreter",
        not_match=("lua x.lua",),
    ),
)

# ------------------------------------------------------------------------------------ package runners
# Package runners run a program named in their arguments (npx X, uv run X, poetry run X): that program is a
# part of its own, decided like any other (rules, risky names), beside the runner's own part (a rule on
# `npx` still holds). Each runner's options are read with its real grammar; an option not listed is
# refused (fail closed), as for the wrappers.
_HELP = Options(flags="h", long_flags=("help",))
_SHELL_MODE = ("-c", "--shell-mode", "--command")
_CONDA = Launcher(_CONDA_RUN, (("run", _CONDA_RUN),))

LAUNCHERS = (
    Program(
        ("npm",),
        subcommands=True,
        risky_subcommands=_PUBLISH,
        launcher=Launcher(nopt=True, exec_subcommands=("exec", "x")),
        match=("npm publish", "npm unpublish x"),
        not_match=("npm test", "npm exec -- jest"),
    ),
    Program(("npx",), subcommands=True, launcher=Launcher(nopt=True), not_match=("npx jest",)),
    Program(
        ("pnpm",),
        subcommands=True,
        risky_subcommands=(("publish",),),
        launcher=Launcher(
            _PNPM, (("dlx", _PNPM_DLX), ("exec", _HELP)), ("dlx",), own_commands=_PNPM_COMMANDS, shell_mode=_SHELL_MODE
        ),
        match=("pnpm publish",),
        not_match=("pnpm install",),
    ),
    Program(("pnpx",), launcher=Launcher(direct=_PNPM_DLX, shell_mode=_SHELL_MODE), not_match=("pnpx cowsay hi",)),
    Program(
        ("yarn",),
        subcommands=True,
        risky_subcommands=(("publish",), ("npm", "publish")),
        launcher=Launcher(_YARN_DLX, (("dlx", _YARN_DLX), ("exec", _HELP)), ("dlx",), shell_words=True),
        match=("yarn npm publish",),
        not_match=("yarn install",),
    ),
    Program(("bunx",), launcher=Launcher(direct=_BUNX), not_match=("bunx cowsay",)),
    Program(
        ("deno",),
        role="interpreter",
        subcommands=True,
        inline=progargs.inline_runs,
        code=progargs.inline_code,
        match=("deno eval 'Deno.remove(\"x\")'",),
        not_match=("deno run app.ts",),
    ),
    Program(
        ("bun",),
        role="interpreter",
        subcommands=True,
        inline=progargs.inline_runs,
        code=progargs.inline_code,
        launcher=Launcher(_BUNX, (("x", _BUNX),), ("x",)),
        match=("bun -e 'require(\"child_process\")'",),
        not_match=("bun test",),
    ),
    Program(("uvx",), runs_python=True, launcher=Launcher(direct=_UV_TOOL_RUN), not_match=("uvx ruff check",)),
    Program(
        ("uv",),
        runs_python=True,
        subcommands=True,
        launcher=Launcher(
            _UV_GLOBAL,
            (("run", _UV_RUN), ("tool run", _UV_TOOL_RUN), ("tool uvx", _UV_TOOL_RUN)),
            ("tool run",),
            module_options=("-m", "--module"),
        ),
        not_match=("uv sync",),
    ),
    Program(
        ("pipx",),
        runs_python=True,
        launcher=Launcher(
            Options(flags="hvq", long_flags=("help", "verbose", "quiet")), (("run", _PIPX_RUN),), ("run",)
        ),
        not_match=("pipx list",),
    ),
    Program(
        ("poetry",),
        runs_python=True,
        subcommands=True,
        launcher=Launcher(_POETRY, (("run", _POETRY),)),
        not_match=("poetry lock",),
    ),
    Program(("pdm",), runs_python=True, launcher=Launcher(_PDM_RUN, (("run", _PDM_RUN),)), not_match=("pdm lock",)),
    Program(
        ("hatch",),
        runs_python=True,
        subcommands=True,
        launcher=Launcher(_HATCH, (("run", _HELP),), env_scripts=True),
        not_match=("hatch build",),
    ),
    Program(("conda",), runs_python=True, subcommands=True, launcher=_CONDA, not_match=("conda list",)),
    Program(("mamba", "micromamba"), launcher=_CONDA, not_match=("mamba list",)),
    Program(
        ("pixi",),
        launcher=Launcher(_PIXI_RUN, (("run", _PIXI_RUN), ("exec", _PIXI_EXEC)), ("exec",)),
        not_match=("pixi list",),
    ),
    Program(("rye",), runs_python=True, launcher=Launcher(_RYE_RUN, (("run", _RYE_RUN),)), not_match=("rye sync",)),
    Program(
        ("pipenv",),
        runs_python=True,
        subcommands=True,
        launcher=Launcher(_PIPENV_RUN, (("run", _PIPENV_RUN),)),
        not_match=("pipenv lock",),
    ),
    Program(
        ("mise",),
        launcher=Launcher(
            _MISE, (("exec", _MISE), ("x", _MISE)), ("x",), command_options=("-c", "--command"), after_dashdash=True
        ),
        not_match=("mise ls",),
    ),
)
