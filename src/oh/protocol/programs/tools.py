"""Developer tools: git, package managers, editors and pagers, awk, interpreters, shells, oh itself."""

from __future__ import annotations

from oh.protocol import progargs
from oh.protocol.programs.record import Program

_PUBLISH = (("publish",), ("unpublish",))

TOOLS = (
    Program(
        ("git",),
        role="lister",  # given a directory, git names it (its files are read only through the repository)
        subcommands=True,
        risky_subcommands=(
            ("push",),
            ("reset", "--hard"),
            ("clean",),
            ("branch", "-D"),
            ("checkout", "--"),
            ("restore",),
            ("filter-branch",),
            ("update-ref",),
            ("reflog", "expire"),
            ("gc", "--prune"),
            ("stash", "drop"),
            ("stash", "clear"),
            ("config",),
            ("-c",),
        ),
        global_values=("-C",),
        writes=progargs.git_writes,
        runs=progargs.git_runs,
        match=(
            "git push",
            "git -C sub reset --hard",
            "git log --output=.git/hooks/x",
            "git rebase -x 'rm -rf ~' main",
            "git config core.pager less",
            "git init newrepo",
        ),
        not_match=("git status", "git -C sub log -5", "git diff", "git show HEAD"),
    ),
    Program(("npm",), subcommands=True, risky_subcommands=_PUBLISH, match=("npm publish",), not_match=("npm test",)),
    Program(("pnpm",), subcommands=True, risky_subcommands=(("publish",),), match=("pnpm publish",)),
    Program(
        ("yarn",), subcommands=True, risky_subcommands=(("publish",), ("npm", "publish")), match=("yarn npm publish",)
    ),
    Program(("cargo",), subcommands=True, risky_subcommands=(("publish",),), not_match=("cargo build",)),
    Program(("twine",), risky_subcommands=(("upload",),), match=("twine upload dist/*",)),
    Program(
        ("gh",),
        subcommands=True,
        risky_subcommands=(("release",), ("repo", "delete"), ("secret",), ("auth",)),
        match=("gh auth token", "gh repo delete x"),
        not_match=("gh pr list",),
    ),
    Program(
        ("pip", "pip3"), subcommands=True, risky_subcommands=(("uninstall",),), match=("pip uninstall -y requests",)
    ),
    # oh's own decisions and secrets: an agent answering for itself (issue 19 §3)
    Program(
        ("oh",),
        subcommands=True,
        risky_subcommands=(("approve",), ("reject",), ("approvals",), ("review",), ("token",), ("config",), ("stop",)),
        match=("oh approve c1", "oh token"),
        not_match=("oh status",),
    ),
    Program(
        ("npx", "go", "uv", "poetry", "pipenv", "conda", "make", "just", "dotnet", "mvn", "gradle", "bundle"),
        subcommands=True,
        not_match=("make test", "go build ./..."),
    ),
    Program(
        ("rake", "composer", "apt", "apt-get", "brew", "rustup", "hatch", "tox", "nox", "helm"),
        subcommands=True,
        not_match=("tox -e py",),
    ),
    Program(
        ("vim", "vi", "nvim", "view", "ex", "vimdiff", "gvim", "rvim", "evim"),
        runs=progargs.vim_runs,
        match=("vim -c '!rm x' f", "vi +'!id' f"),
        not_match=("vim f",),
    ),
    Program(("less", "more"), runs=progargs.less_runs, match=("less '+!rm x' f",), not_match=("less +G f",)),
    Program(
        ("awk", "gawk", "mawk", "nawk", "busybox-awk"),
        runs=progargs.awk_runs,
        match=("awk 'BEGIN{system(\"id\")}'", "awk -f prog.awk f"),
        not_match=("awk '{print $1}' f",),
    ),
    Program(("sh", "bash"), role="shell", input_args_risky=True, not_match=("bash script.sh",)),
    Program(
        ("python", "pypy"),
        role="interpreter",
        pattern=r"python[0-9.]*|pypy[0-9.]*",
        inline=progargs.inline_runs,
        code=progargs.inline_code,
        match=("python3 -c 'import os; os.system(\"id\")'",),
        not_match=("python3 -c 'print(1+1)'", "python3 script.py"),
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
        ("deno", "bun"),
        role="interpreter",
        subcommands=True,
        inline=progargs.inline_runs,
        code=progargs.inline_code,
        match=("deno eval 'Deno.remove(\"x\")'",),
        not_match=("deno run app.ts",),
    ),
)
