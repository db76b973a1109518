"""The option grammars of programs whose arguments do what their name does not say (consent, issue 25).

Pure, no I/O. An allow rule names a program (``run: find *``, ``run: sed *``, ``run: tar *``); these
programs also write files named in their options or scripts, or run commands, and the gate must see that
to keep its promises (a write into ``.git/`` or a ``deny write:`` path is asked or denied whatever allows
the program). ``*_writes`` name the files written, ``*_blind`` say when the files written are only known at
run time, ``*_runs`` when the program runs commands or scripts the gate cannot see. What is not understood
is treated as running code (fail closed). Which program uses which is the registry's (``protocol.programs``).
"""

from __future__ import annotations

import re
import unicodedata

_FIND_WRITES = ("-fprint", "-fprint0", "-fls", "-fprintf")
# tar options that run a program (a command string, a script, a compressor)
_TAR_RUNS = (
    "--to-command",
    "--checkpoint-action",
    "--use-compress-program",
    "--rsh-command",
    "--info-script",
    "--new-volume-script",
    "--rmt-command",
    "--index-file",
)
_TAR_MODES = {"x": "extract", "c": "create", "r": "append", "u": "update", "A": "catenate", "t": "list", "d": "diff"}
_TAR_VALUE = "fCbgHIKLNTVX"  # short options that take a value (the next word, or the rest of a cluster)


def find_writes(base: str, args: list[str]) -> tuple[str, ...]:
    """find -fprint FILE...: the files its options name."""
    return tuple(args[i + 1] for i, a in enumerate(args[:-1]) if a in _FIND_WRITES)


def sort_writes(base: str, args: list[str]) -> tuple[str, ...]:
    """sort -o FILE / --output=FILE."""
    out = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-o"]
    return tuple(out + [a.split("=", 1)[1] for a in args if a.startswith("--output=")] + _attached(args, "-o"))


def tar_writes(base: str, args: list[str]) -> tuple[str, ...]:
    """The archive tar -c/-r/-u/-A writes."""
    got = _tar_or_none(args)
    if got is not None and got[0] in ("create", "append", "update", "catenate"):
        return tuple(got[1].get("f", ()))
    return ()


# git subcommands whose -o names the file or directory written (log/diff/show: --output; archive: the archive;
# format-patch: the directory of patches)
_GIT_DASH_O = ("log", "diff", "show", "whatchanged", "format-patch", "archive", "range-diff", "diff-tree")
# git subcommands that create a repository or a work tree at their last argument (`git init .git/hooks`)
_GIT_MAKES = ("init", "clone", "worktree", "bundle")


def git_writes(base: str, args: list[str]) -> tuple[str, ...]:
    """Files git writes that its arguments name (redteam: `git log --format=... --output=.git/hooks/x`
    rewrote an existing hook at risky and under `run: git *`)."""
    out = [a.split("=", 1)[1] for a in args if a.startswith(("--output=", "--output-directory=", "--prefix="))]
    out += [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("--output", "--output-directory")]
    if any(sub in args for sub in _GIT_DASH_O):
        out += [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-o"] + _attached(args, "-o")
    plain = [a for a in args if not a.startswith("-")]
    if plain and plain[0] in _GIT_MAKES:
        # init DIR, clone SRC DIR, worktree add DIR, bundle create FILE: every word after counts (an option's
        # value among them is over-asked, never missed)
        out += plain[2:] if plain[1:2] in (["add"], ["create"]) else plain[1:]
    if plain[:1] == ["mv"] and len(plain) > 2:
        out += plain[1:]
    if "config" in args:  # git config: the file it changes (not when it only reads)
        rest = args[args.index("config") + 1 :]
        if not any(r in ("--get", "--get-all", "--get-regexp", "--list", "-l", "get", "list") for r in rest):
            return ("~/.gitconfig",) if "--global" in rest else (".git/config",)
        return ()
    return tuple(out)


def target_directory(args: list[str]) -> tuple[str, list[str]] | None:
    """cp/mv/ln/install ``-t DIR`` / ``--target-directory=DIR`` (GNU: the files named are sources, written
    into DIR): (DIR, the sources), or None."""
    for i, a in enumerate(args):
        if a == "--":
            break
        if a in ("-t", "--target-directory", "--target", "--targe", "--targ", "--tar", "--ta") and i + 1 < len(args):
            return args[i + 1], [x for x in args[:i] + args[i + 2 :] if not x.startswith("-")]
        if a.startswith("--ta") and "=" in a and "--target-directory".startswith(a.split("=", 1)[0]):
            return a.split("=", 1)[1], [x for x in args if not x.startswith("-")]
        if re.fullmatch(r"-[a-zA-Z]*t.+", a) and not a.startswith("--"):  # -tDIR, -vtDIR
            return a[a.index("t") + 1 :], [x for x in args if not x.startswith("-")]
    return None


def _attached(args: list[str], flag: str) -> list[str]:
    return [a[len(flag) :] for a in args if a.startswith(flag) and len(a) > len(flag) and not a.startswith("--")]


def tar_blind(base: str, args: list[str]) -> str | None:
    """Why the files tar writes are only known at run time (an archive's members), or None."""
    got = _tar_or_none(args)
    if got is None:
        return "tar with options the command checker does not follow"
    if got[0] == "extract":
        return "tar -x writes the files the archive names (known only at run time)"
    return None


def unpacks(base: str, args: list[str]) -> str | None:
    """unzip, cpio, patch, 7z, ar: the files they write are named by their input."""
    return f"{base} writes the files its input names (known only at run time)"


# git options and subcommands whose argument is a shell command git runs (`git rebase -x 'rm -rf ~'`), and
# transports that run one (`ext::cmd`): the part the gate sees is `git`, what runs is that command.
_GIT_RUNS_OPTS = re.compile(
    r"(--exec|--extcmd|--upload-pack|--receive-pack|--open-files-in-pager|--[a-z-]*-filter)(=.*)?"
)
_GIT_RUNS_SHORT = {"rebase": "-x", "difftool": "-x", "clone": "-u", "grep": "-O"}  # short forms, per subcommand
_GIT_RUNS_SUBS = ({"submodule", "foreach"}, {"bisect", "run"}, {"filter-branch"}, {"filter-repo"})


def vim_runs(base: str, args: list[str]) -> str | None:
    if any(a in ("-c", "--cmd", "-S", "-u", "-s", "-W", "-w") or a.startswith("+") for a in args):
        return f"{base} runs the editor commands given on its command line (`:!cmd` runs a program)"
    return None


def less_runs(base: str, args: list[str]) -> str | None:
    if any(_less_runs(a) for a in args):
        return f"{base} runs the commands given with + (`+!cmd` runs a program)"
    return None


def tar_runs(base: str, args: list[str]) -> str | None:
    for a in args:
        if a.split("=", 1)[0] in _TAR_RUNS or (a.startswith("-") and not a.startswith("--") and "I" in a[1:2]):
            return f"tar {a.split('=', 1)[0]} runs a program"
    try:
        _tar(args)
    except ValueError as exc:
        return f"tar: {exc}"
    return None


def _tar_or_none(args: list[str]) -> tuple[str | None, dict[str, list[str]]] | None:
    try:
        return _tar(args)
    except ValueError:
        return None


def _tar(args: list[str]) -> tuple[str | None, dict[str, list[str]]]:
    """tar's mode and the values of its short options (old style ``cf x``, clusters ``-cf x``, long)."""
    mode: str | None = None
    values: dict[str, list[str]] = {}
    rest = list(args)
    first = True
    while rest:
        a = rest.pop(0)
        if a == "--":
            break
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            if name in _TAR_MODES.values() or name == "get":
                mode = "extract" if name == "get" else name
            elif name in ("file", "directory") and not eq:
                if not rest:
                    raise ValueError(f"--{name} without its value")
                value = rest.pop(0)
            if name in ("file", "directory"):
                values.setdefault("f" if name == "file" else "C", []).append(value)
            continue
        if not (a.startswith("-") or first):
            continue
        cluster = a[1:] if a.startswith("-") else a
        for j, c in enumerate(cluster):
            if c in _TAR_MODES:
                mode = _TAR_MODES[c]
            elif c in _TAR_VALUE:
                attached = cluster[j + 1 :] if a.startswith("-") else ""
                if attached:
                    values.setdefault(c, []).append(attached)
                elif rest:
                    values.setdefault(c, []).append(rest.pop(0))
                else:
                    raise ValueError(f"-{c} without its value")
                if attached:
                    break
        first = False
    return mode, values


_SED_ADDR = re.compile(r"[0-9$,~+!\s]*")


def sed_runs(base: str, args: list[str]) -> str | None:
    """Whether a sed script writes files (w, W, s///w) or runs commands (e, s///e); -f (a script file) and
    what this reader does not follow are treated as doing both."""
    scripts: list[str] = []
    rest = list(args)
    explicit = False
    sandbox = "--sandbox" in rest
    while rest:
        a = rest.pop(0)
        if a == "--":
            break
        if a in ("-e", "--expression") and rest:
            scripts.append(rest.pop(0))
            explicit = True
        elif a.startswith("--expression="):
            scripts.append(a.split("=", 1)[1])
            explicit = True
        elif a.startswith("-e") and len(a) > 2:
            scripts.append(a[2:])
            explicit = True
        elif re.match(r"--fil?e?(=|\Z)", a) or _short_cluster_has(a, "f", stop="ilse"):
            return None if sandbox else "sed -f runs a script file the gate cannot see"
        elif not a.startswith("-") and not explicit:
            scripts.append(a)
            explicit = True
    if sandbox:
        return None  # GNU sed --sandbox refuses e, w and r
    for script in scripts:
        why = _sed_script(script)
        if why is not None:
            return why
    return None


def _short_cluster_has(a: str, letter: str, stop: str) -> bool:
    """Whether a short option cluster (``-nf``) holds ``letter`` before an option that takes the rest."""
    if not a.startswith("-") or a.startswith("--"):
        return False
    for c in a[1:]:
        if c == letter:
            return True
        if c in stop:
            return False
    return False


def _sed_script(script: str) -> str | None:
    i, n = 0, len(script)
    while i < n:
        i = _SED_ADDR.match(script, i).end()  # type: ignore[union-attr]
        if i < n and script[i] in "/\\":  # an address regex: /re/ or \cREc
            delim = script[i] if script[i] == "/" else script[i + 1 : i + 2]
            i = _skip_delimited(script, i + (1 if script[i] == "/" else 2), delim)
            continue
        if i >= n:
            return None
        c = script[i]
        if c in ";{}\n":
            i += 1
        elif c in "wWeFrR":
            if c in "wWe":
                return f"the sed script's `{c}` command {'runs a command' if c == 'e' else 'writes a file'}"
            i = _line_end(script, i)
        elif c in "sy":
            delim = script[i + 1 : i + 2]
            if not delim or delim in "\n\\":
                return "a sed script this reader does not follow"
            j = _skip_delimited(script, i + 2, delim)
            j = _skip_delimited(script, j, delim)
            flags = re.compile(r"[^;\n}]*").match(script, j).group(0)  # type: ignore[union-attr]
            if c == "s" and re.search(r"[we]", flags):
                return "the sed script's s///w or s///e writes a file or runs a command"
            i = j + len(flags)
        elif c in "aic:#":
            i = _line_end(script, i)
        elif c in "btT":
            i = re.compile(r"[^;\n]*").match(script, i + 1).end()  # type: ignore[union-attr]
        elif c in "=dDgGhHlnNpPqQxzu":
            i += 1
        else:
            return "a sed script this reader does not follow"
    return None


def _skip_delimited(s: str, i: int, delim: str) -> int:
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s[i] == delim:
            return i + 1
        i += 1
    return len(s)


def _line_end(s: str, i: int) -> int:
    end = s.find("\n", i)
    return len(s) if end < 0 else end + 1


def git_runs(base: str, args: list[str]) -> str | None:
    words = set(args)
    for a in args:
        short = next((f for sub, f in _GIT_RUNS_SHORT.items() if sub in words and a.startswith(f)), None)
        if a.startswith("ext::") or "::ext::" in a or (a.startswith("-") and _GIT_RUNS_OPTS.fullmatch(a)) or short:
            return f"git {a.split('=', 1)[0][:40]} runs a command given in its arguments"
    for sub in _GIT_RUNS_SUBS:
        if sub <= words:
            return f"git {' '.join(sorted(sub))} runs a command given in its arguments"
    return None


def awk_runs(base: str, args: list[str]) -> str | None:
    """awk's program runs commands (`system()`, `|` pipes, `|&`) or writes files (`print > "f"`), or is read
    from a file or extension: fail closed on any of those; a plain filter (`awk '{print $1}'`) is data."""
    for a in args:
        if a in ("-f", "-E", "-i", "-l") or a.startswith(("--file", "--exec", "--include", "--load", "-f", "-l")):
            return "awk reads its program from a file or loads an extension"
    program = next((a for a in args if not a.startswith("-")), "")
    if re.search(r"system\s*\(|\||>(?![0-9=\s]*[0-9=])|@load|@include", program):
        return "awk's program runs commands (system, |) or writes files (>)"
    return None


def _less_runs(arg: str) -> bool:
    """``+cmd`` other than a line number, G/F or a search (``+!cmd`` runs a program), or a lesskey file."""
    if arg.startswith(("-k", "--lesskey")):
        return True
    return arg.startswith("+") and not re.fullmatch(r"\+\+?(?:[0-9]*[GgFpP%]?|/[^!|]*)", arg)


# ------------------------------------------------------------------------------------ inline code
# Code given on an interpreter's command line (`python -c`, `node -e`, `perl -e`, ...) is opaque to the gate:
# at `risky` it is asked when it holds a call that runs a program or deletes or overwrites files, or any of
# the ways code hides a name (getattr, eval, decoding, chr(...)). A speed bump, not a wall: a name can still
# be built in ways no list foresees; the sandbox is the wall.
_PY = (
    r"\bos\s*\.\s*(?:system|popen|exec\w*|spawn\w*|posix_spawn\w*|fork\w*|kill\w*|remove\w*|unlink|rmdir|"
    r"rename\w*|replace|truncate|chmod|chown|lchown|link|symlink|mkfifo|write|open|fdopen|dup2)\b|"
    r"subprocess|\bpty\b|\bshutil\b|\bcommands\b|\bmultiprocessing\b|\.\s*(?:unlink|rmdir|write_text|"
    r"write_bytes|rename|symlink_to|hardlink_to|chmod)\s*\(|(?:\bopen\s*\([^)]{0,400},|\.\s*open\s*\()\s*(?:mode\s*=\s*)?"
    r"['\"][rbtwax+U]{0,3}[wax+][rbtwax+]{0,3}['\"]|\b(?:posix|nt|_posixsubprocess|_winapi)\s*\.|"
    r"\bfrom\s+(?:os|posix|nt|subprocess|shutil|pty)\s+import\s+(?!path\b)"
)
_PY_HIDE = (
    r"getattr|setattr|__import__|importlib|\beval\b|\bexec\b|\bcompile\s*\(|base64|codecs|b(?:16|32|64|85)|"
    r"\bchr\s*\(|fromhex|\.decode\s*\(|globals\s*\(|locals\s*\(|\bvars\s*\(|__builtins__|__dict__|__class__|"
    r"__subclasses__|__globals__|\bctypes\b|\bmarshal\b|\bpickle\b|\brunpy\b|sys\s*\.\s*modules|\\x[0-9a-fA-F]|"
    r"\\[0-7]{3}|\\u[0-9a-fA-F]{4}|\\N\{|\bbreakpoint\b|\boperator\b|\bimport\s+[\w., ]{1,400}\bas\b|import\s*\*"
)
_JS = (
    r"child_process|\bexecSync\b|\bexecFile\w*|\bspawn\w*|\bfork\s*\(|\b(?:rm|rmSync|rmdir|rmdirSync|unlink|"
    r"unlinkSync|writeFile|writeFileSync|appendFile|appendFileSync|rename|renameSync|truncate|truncateSync|"
    r"copyFile|copyFileSync|cp|cpSync|createWriteStream|symlink|symlinkSync|chmod|chmodSync|open|openSync)\s*\(|"
    r"Deno\s*\.\s*(?:run|Command|remove|writeFile|writeTextFile|rename|truncate|symlink|chmod|open|create)|"
    r"Bun\s*\.\s*(?:spawn\w*|\$|write|file)|\bworker_threads\b"
)
_JS_HIDE = (
    r"\beval\b|\bFunction\b|\bimport\s*\(|\brequire\s*\(\s*(?!['\"][\w:/.@-]{0,400}['\"]\s*\))|atob|btoa|Buffer|"
    r"fromCharCode|fromCodePoint|\\x[0-9a-fA-F]|\\u|\\[0-7]|process\s*\.\s*(?:binding|dlopen|mainModule|env)|"
    r"module\s*\.\s*constructor|constructor|globalThis|\bglobal\b|\bthis\s*\[|\bprocess\s*\[|\bvm\b|"
    r"Reflect|Proxy|\[\s*['\"`][^\]]{0,400}['\"`]\s*\+|\+\s*['\"`][^\]]{0,400}\]|String\s*\.\s*raw|\bwasi?\b|WebAssembly"
)
_PERL_RUBY = (
    r"\bsystem\b|\bexec\b|`|\bqx\b|%x|\bspawn\b|\bfork\b|\bkill\b|\bunlink\b|\brmdir\b|\brmtree\b|"
    r"remove_tree|File::|\bFile\s*\.\s*(?:delete|unlink|write|rename|open|symlink|chmod|truncate)|"
    r"FileUtils|IO\s*\.\s*(?:popen|write|sysopen)|Open3|\bpopen\b|\bopen\s*\(?[^;]{0,400}[|>+]|\brename\b|"
    r"\bsyscall\b|\bpipe\b|\btruncate\b|\bchmod\b|\bchown\b|\bsymlink\b|\blink\b|Kernel|Process|%[xX]\{"
)
_PERL_RUBY_HIDE = (
    r"\beval\b|\bpack\b|\bunpack\b|\bchr\b|\bord\b|\bsprintf\b|decode|Base64|MIME|\bsend\b|public_send|"
    r"__send__|instance_eval|class_eval|module_eval|const_get|method\s*\(|\bdo\s+['\"$]|\brequire\s+[$(]|"
    r"\\x[0-9a-fA-F]|\\[0-7]{3}|\\c|&\{|&\$|\$\w+\s*->\s*\(|\bsub\s*\{.{0,400}\}\s*->|\bSymbol\b|\bbinding\b"
)
_PHP = (
    r"\b(?:system|exec|shell_exec|passthru|proc_open|popen|pcntl_exec|pcntl_fork|unlink|rmdir|rename|"
    r"file_put_contents|fopen|fwrite|fputs|copy|symlink|link|chmod|chown|truncate|ftruncate|mail|"
    r"fsockopen|stream_socket_client|curl_exec|putenv|dl|mb_send_mail|error_log)\s*\(|`"
)
_PHP_HIDE = (
    r"\beval\b|\bassert\b|create_function|base64|str_rot13|gzinflate|gzuncompress|hex2bin|\bchr\s*\(|"
    r"\bpack\s*\(|call_user_func|array_map|array_filter|usort|preg_replace|\$\w+\s*\(|\$\{|\\x[0-9a-fA-F]|"
    r"\\[0-7]{3}|\binclude\b|\brequire\b|ReflectionFunction|\bnew\s+\$|::\s*\$|\bextract\s*\(|\bget_defined"
)
_AS = r"do\s+shell\s+script|\bdelete\b|\bmove\b|\bduplicate\b|\bwrite\b|\bopen\s+for\s+access|run\s+script|\brm\b"
_INLINE = {
    "python": (re.compile(_PY), re.compile(_PY_HIDE)),
    "node": (re.compile(_JS), re.compile(_JS_HIDE)),
    "perl": (re.compile(_PERL_RUBY), re.compile(_PERL_RUBY_HIDE)),
    "php": (re.compile(_PHP, re.IGNORECASE), re.compile(_PHP_HIDE, re.IGNORECASE)),
    "osascript": (re.compile(_AS, re.IGNORECASE), re.compile(r"run\s+script|character\s+id|ASCII", re.IGNORECASE)),
}
_LANG = {"nodejs": "node", "deno": "node", "bun": "node", "ruby": "perl", "irb": "perl", "pypy": "python"}
# Bounds that keep a decision linear in the command's size (an adversarial 1 MB line is decided in well under a
# second): each pattern looks at most 400 characters past where it starts, and inline code past INLINE_MAX bytes
# (per part) is not read at all but asked. Real one-liners are far shorter; a longer one is a script.
INLINE_MAX = 64 * 1024
# the options whose value is the program: per interpreter (`-e` also ends a cluster: perl -ne CODE)
_CODE_OPTS = {
    "python": ("c",),
    "node": ("e", "p", "-eval", "-print"),
    "perl": ("e", "E"),
    "ruby": ("e",),
    "php": ("r", "B", "R", "E", "F"),
    "bun": ("e", "p", "-eval", "-print"),
    "osascript": ("e",),
}
# options that take the next word as their value (so it is no program file): python -W x, -X y
_VALUE_OPTS = {"python": "WXQ", "perl": "IMmdDx", "ruby": "IrCEFTxWK", "node": "r", "php": "cdzt"}


def inline_language(base: str) -> str | None:
    """The interpreter family of a program name (python3.12 is python), or None."""
    if re.fullmatch(r"python[0-9.]*|pypy[0-9.]*", base):
        return "python"
    if base in _CODE_OPTS or base in ("nodejs", "deno", "irb"):
        return base if base in _CODE_OPTS else {"nodejs": "node", "deno": "node", "irb": "ruby"}[base]
    return None


def inline_code(base: str, args: list[str]) -> list[str]:
    """The code given on an interpreter's command line (``python -c CODE``, ``perl -ne CODE``, ``deno eval
    CODE``), in order; [] when it runs a file or reads stdin."""
    lang = inline_language(base)
    if lang is None:
        return []
    if base == "deno":
        return [a for a in args[1:] if not a.startswith("-")][:1] if args[:1] == ["eval"] else []
    opts = _CODE_OPTS["bun" if base == "bun" else lang]
    code: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--" or a == "-":
            break
        if not a.startswith("-"):
            if lang not in ("node", "bun"):
                break
            i += 1  # node: a long option's separate value (--title x) is no program file; read on (fail closed)
            continue
        if a.startswith("--"):
            name, eq, value = a[1:].partition("=")
            if name == "-check-hash-based-pycs" and not eq:
                i += 1  # python's one long option with a separate value
            if name in opts:
                if eq:
                    code.append(value)
                elif i + 1 < len(args):
                    code.append(args[i + 1])
                    i += 1
            i += 1
            continue
        for j, c in enumerate(a[1:], 1):
            if c in opts:
                if a[j + 1 :] and not (lang in ("node", "bun") and a[j + 1 :] in ("e", "p")):  # node -pe CODE
                    code.append(a[j + 1 :])
                elif i + 1 < len(args):
                    code.append(args[i + 1])
                    i += 1
                break
            if c in _VALUE_OPTS.get(lang, ""):
                i += 0 if a[j + 1 :] else 1
                break
        i += 1
        if lang == "python" and code:
            break  # python -c CODE: the rest are sys.argv
    return code


def inline_runs(base: str, args: list[str]) -> str | None:
    """Why the inline code of an interpreter is asked at `risky` (it runs a program, deletes or overwrites
    files, or hides what it calls), or None (plain code: `python -c 'print(1+1)'`)."""
    lang = inline_language(base)
    code = inline_code(base, args)
    if lang is None or not code:
        return None
    size = sum(len(text) for text in code)
    if size > INLINE_MAX:
        return f"{base}'s inline code is {size} characters: too long for the gate to read, so it is asked"
    runs, hides = _INLINE[_LANG.get(lang, lang)]
    # NFKC first: Python reads identifiers that way (`ｏｓ.ｓｙｓｔｅｍ` is os.system)
    for text in (unicodedata.normalize("NFKC", t) for t in code):
        m = runs.search(text)
        if m is not None:
            return f"{base}'s inline code calls {m.group(0).strip()[:40]!r} (it may run a program or change files)"
        m = hides.search(text)
        if m is not None:
            return f"{base}'s inline code hides what it calls ({m.group(0).strip()[:40]!r}), so it is asked"
    return None
