"""Developer tools: git, package managers, editors and pagers, awk, oh itself."""

from __future__ import annotations

from oh.protocol import progargs
from oh.protocol.programs.record import Program

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
        global_values=("-C", "-c"),
        loading_globals=(
            "-c",
            "--config-env",
            "--exec-path",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--super-prefix",
        ),
        directory_options=("-C",),
        writes=progargs.git_writes,
        runs=progargs.git_runs,
        match=(
            "git push",
            "git -C sub reset --hard",
            "git log --output=.git/hooks/x",
            "git rebase -x 'rm -rf ~' main",
            "git config core.pager less",
            "git init newrepo",
            "git --git-dir=/tmp/x status",
        ),
        not_match=("git status", "git -C sub log -5", "git diff", "git show HEAD"),
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
        ("go", "make", "just", "dotnet", "mvn", "gradle", "bundle"),
        subcommands=True,
        not_match=("make test", "go build ./..."),
    ),
    Program(
        ("rake", "composer", "apt", "apt-get", "brew", "rustup", "tox", "nox", "helm"),
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
)
