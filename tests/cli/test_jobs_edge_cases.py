"""Edge cases of background jobs, write modes and stat through real `oh` processes and the Python client."""

from __future__ import annotations

import json

from oh.client import SyncClient


def test_output_from_inside_a_character_is_not_called_a_loss(oh):
    oh.start("local")
    job = oh("run", "--background", "--", r"printf 'a\xff\xfeb\n'", check=0).stdout.strip()
    assert oh("jobs", "wait", job, "--timeout", "60").returncode == 0
    whole = oh.json("jobs", "output", job, "--json")
    assert whole["content"] == "a\ufffd\ufffdb\n"  # invalid UTF-8 arrives replaced, never as a crash
    p = oh("jobs", "output", job, "--offset", "2")  # byte 2 is inside the first replacement character
    assert p.returncode == 0 and p.stdout.endswith("b\n")
    assert "no longer kept" not in p.stderr, p.stderr
    past = oh.json("jobs", "output", job, "--offset", "99999", "--json")
    assert past["content"] == "" and past["extras"]["eof"] is True


def test_jobs_of_another_agent_are_invisible(oh):
    info = oh.start("local")
    token = oh.session(info["instance_id"])["token"]
    with SyncClient.connect(info["url"], token, name="other") as c:
        mine = c.run_background("sleep 30").job_id
        try:
            assert mine
            listed = oh.json("jobs", "--json")
            assert all(
                r.get("job_id") != mine for r in (listed if isinstance(listed, list) else listed.get("jobs", []))
            )
            for verb in ("poll", "output", "cancel", "wait"):
                p = oh("jobs", verb, mine, "--json")
                assert p.returncode == 6 and json.loads(p.stdout)["extras"]["error_id"] == "NO_JOB", (
                    verb,
                    p.stdout,
                    p.stderr,
                )
            assert c.job_poll(mine).job["state"] == "RUNNING"  # untouched by those
        finally:
            c.job_cancel(mine)


def test_bad_job_arguments_are_usage_errors(oh):
    oh.start("local")
    assert oh("jobs", "output", "j1", "--offset", "-5").returncode == 2
    assert oh("jobs", "wait", "j1", "--timeout", "nan").returncode == 2
    p = oh("jobs", "poll", "j424242")
    assert p.returncode == 6 and "NO_JOB" in p.stderr and "`oh jobs`" in p.stderr  # the CLI's way to list them
    p = oh("jobs", "wait", "x y")
    assert p.returncode == 2 and "job id" in p.stderr
    p = oh("stat", "nope.txt", "--json")
    assert p.returncode == 1 and json.loads(p.stdout)["exists"] is False


def test_append_continues_a_file_with_a_byte_order_mark_without_a_second_one(oh):
    import codecs

    oh.start("local")
    cases = {
        "u8.txt": (codecs.BOM_UTF8 + "héllo\n".encode(), "utf-8"),
        "u16le.txt": (codecs.BOM_UTF16_LE + "héllo\n".encode("utf-16-le"), "utf-16-le"),
        "u16be.txt": (codecs.BOM_UTF16_BE + "héllo\n".encode("utf-16-be"), "utf-16-be"),
    }
    for name, (data, plain) in cases.items():
        (oh.workspace / name).write_bytes(data)
        oh("write", name, "--append", "--content", "wörld\n", check=0)
        assert (oh.workspace / name).read_bytes() == data + "wörld\n".encode(plain), name


def test_a_finished_job_expires_after_job_retention(oh):
    from .conftest import wait_for

    proc = oh(
        "start", "--detach", "--json", "--runtime", "local", "--no-open", env={"OH_JOB_RETENTION": "1"}, timeout=40
    )
    assert proc.returncode == 0, proc.stderr
    oh.started.append(json.loads(proc.stdout))
    job = oh("run", "--background", "--", "echo hi", check=0).stdout.strip()
    assert oh("jobs", "wait", job, "--timeout", "60").returncode == 0

    def gone():
        p = oh("jobs", "poll", job, "--json")
        return p if p.returncode == 6 else None

    p = wait_for(gone, timeout=30, interval=0.5, what="the job to expire")
    assert json.loads(p.stdout)["extras"]["error_id"] == "NO_JOB"
    assert job not in oh("jobs").stdout


def test_run_options_a_background_job_does_not_take_are_refused_not_dropped(oh):
    oh.start("local")
    for extra in (("--timeout", "5"), ("--max-output", "0"), ("--reset",)):
        p = oh("run", "--background", *extra, "--", "sleep 1")
        assert p.returncode == 2 and extra[0] in p.stderr and "--background" in p.stderr, (extra, p.stdout, p.stderr)
    assert oh.json("jobs", "--json") in ([], {"jobs": []}) or not oh("jobs").stdout.count("sleep 1")
    # the in-process (typer) path says the same
    import io as _io
    import os as _os

    from oh.commands._io import Streams
    from oh.commands.agent import run_run
    from oh.fastpath.exits import OhError

    out, err = _io.StringIO(), _io.StringIO()
    old = dict(_os.environ)
    try:
        _os.environ.update({k: v for k, v in oh.env.items() if k.startswith(("OH_", "XDG_", "HOME", "PYTHON_KEYRING"))})
        code = run_run(
            Streams(inp=_io.StringIO(), out=out, err=err),
            command=["sleep 1"],
            timeout=5.0,
            background=True,
            workspace=str(oh.workspace),
        )
    except OhError as exc:
        code = exc.code
    finally:
        _os.environ.clear()
        _os.environ.update(old)
    assert code == 2
