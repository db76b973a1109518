"""Programs that work on files: delete, copy, link, write, archive, list."""

from __future__ import annotations

import re

from oh.protocol import progargs
from oh.protocol.programs.record import Program

_CP_LINKS = re.compile(r"--link|--symbolic-link|-[a-zA-Z]*[ls][a-zA-Z]*")  # cp -l / -s: links, not copies


def _files(args: list[str]) -> list[str]:
    return [a for a in args if not a.startswith("-")]


def _every_file(base: str, args: list[str]) -> tuple[str, ...]:
    return tuple(_files(args))


def _into(args: list[str]) -> tuple[str, ...] | None:
    """cp -t DIR a b: DIR/a, DIR/b (the sources keep their names)."""
    into = progargs.target_directory(args)
    if into is None:
        return None
    return (into[0], *(into[0].rstrip("/") + "/" + f.rstrip("/").rsplit("/", 1)[-1] for f in into[1]))


def _cp_writes(base: str, args: list[str]) -> tuple[str, ...]:
    files = _files(args)
    if any(_CP_LINKS.fullmatch(a) for a in args) and files:
        return tuple(files)  # a link is a second name to write the source through: it counts as written
    into = _into(args)
    return into if into is not None else tuple(files[-1:])


def _mv_writes(base: str, args: list[str]) -> tuple[str, ...]:
    files = _files(args)  # mv .git g and ln: the sources change too (they go away, or get a second name)
    return tuple(files) if files else (_into(args) or ())


def _install_writes(base: str, args: list[str]) -> tuple[str, ...]:
    into = _into(args)
    return into if into is not None else tuple(_files(args)[-1:])


def _last_file(base: str, args: list[str]) -> tuple[str, ...]:
    return tuple(_files(args)[-1:])


def _sed_writes(base: str, args: list[str]) -> tuple[str, ...]:
    return tuple(_files(args)) if any(a.startswith(("-i", "--in-place")) for a in args) else ()


def _dd_writes(base: str, args: list[str]) -> tuple[str, ...]:
    return tuple(a[3:] for a in args if a.startswith("of="))


def _zip_writes(base: str, args: list[str]) -> tuple[str, ...]:
    """zip ARCHIVE FILES...: the archive (-O/--output-file too); -m deletes the files it adds."""
    out = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-O", "--output-file", "-b", "--temp-path")]
    files = _files([a for i, a in enumerate(args) if i == 0 or args[i - 1] not in ("-O", "--output-file", "-b")])
    moved = any(a in ("-m", "--move") or re.fullmatch(r"-[a-zA-Z]*m[a-zA-Z]*", a) for a in args)
    return tuple(out + (files if moved else files[:1]))


def _zip_runs(base: str, args: list[str]) -> str | None:
    """zip -TT CMD / --unzip-command CMD: the test command runs a program."""
    if any(a.startswith(("-TT", "--unzip-command")) for a in args):
        return "zip -TT runs the command given in its arguments"
    return None


_DELETES = "deletes files"
_DISKS = "writes disks or devices"
_PERMS = "changes permissions or owners"

FILES = (
    Program(("rm",), risky=_DELETES, input_args_risky=True, match=("rm -rf build", "rm x"), not_match=()),
    Program(("rmdir", "shred", "unlink"), risky=_DELETES, match=("rmdir d", "shred f", "unlink f")),
    Program(("dd",), risky=_DISKS, writes=_dd_writes, match=("dd if=/dev/zero of=/dev/sda",)),
    Program(
        ("mkfs", "fdisk", "sfdisk", "parted", "wipefs", "mkswap"),
        risky=_DISKS,
        prefixes=("mkfs.",),
        match=("mkfs.ext4 /dev/sdb1", "wipefs -a /dev/sda"),
    ),
    Program(("truncate",), risky=_DELETES, writes=_every_file, match=("truncate -s 0 log",)),
    Program(("chmod", "chown", "chgrp", "chattr", "setfacl"), risky=_PERMS, match=("chmod +x a", "chown u f")),
    Program(("tee", "touch"), writes=_every_file, match=("tee out.txt", "touch a b"), not_match=("tee",)),
    Program(("cp",), writes=_cp_writes, match=("cp a b", "cp -t dir a"), not_match=("cp --help",)),
    Program(("mv",), writes=_mv_writes, match=("mv a b",)),
    Program(("ln",), writes=_mv_writes, match=("ln -s a b",)),
    Program(("install",), writes=_install_writes, match=("install -m 644 a /usr/local/a",)),
    Program(
        ("sed",),
        writes=_sed_writes,
        runs=progargs.sed_runs,
        dynamic_runs=True,
        match=("sed -i s/a/b/ f", "sed 'e rm x' f", "sed 'w out' f"),
        not_match=("sed s/a/b/ f", "sed -n 1,5p f"),
    ),
    Program(
        ("find",),
        writes=progargs.find_writes,
        risky_subcommands=(("-delete",),),  # removes files, like rm
        exec_options=("-exec", "-execdir", "-ok", "-okdir"),  # their words up to ; or + run as a command
        match=("find . -delete", "find . -fprint out"),
        not_match=("find . -name '*.py'",),
    ),
    Program(
        ("sort",), writes=progargs.sort_writes, match=("sort -o out in", "sort --output=o in"), not_match=("sort f",)
    ),
    Program(
        ("tar",),
        writes=progargs.tar_writes,
        blind=progargs.tar_blind,
        runs=progargs.tar_runs,
        dynamic_runs=True,
        match=("tar -xf a.tar", "tar -cf out.tar src", "tar --to-command=sh -xf a.tar", "tar -I zstd -cf o f"),
        not_match=("tar -tf a.tar",),
    ),
    Program(
        ("rsync",),
        risky="talks to the network, deletes files",
        network=True,
        writes=_last_file,
        match=("rsync -a src/ host:dst/", "rsync -a a b"),
    ),
    Program(
        ("unzip", "cpio", "patch", "7z", "7za", "bsdtar", "ar"),
        blind=progargs.unpacks,
        match=("unzip a.zip", "patch -p1", "7z x a.7z"),
    ),
    Program(
        ("zip",),
        writes=_zip_writes,
        runs=_zip_runs,
        match=("zip out.zip a b", "zip -T -TT 'sh -c id' out.zip a", "zip -m out.zip a", "zip --unzip-command=x o.zip"),
        not_match=("zip -h",),
    ),
    Program(
        ("ls", "pwd", "stat", "du", "df", "realpath", "readlink", "file", "mkdir", "tree"),
        role="lister",
        not_match=("ls -la ~", "du -sh .", "mkdir -p a/b"),
    ),
    Program(("basename", "dirname"), role="lister", opens_args=False, not_match=("basename /a/b",)),
)
