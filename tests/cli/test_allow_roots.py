"""`oh start --allow DIR` and the `allowed_roots` setting, through real `oh` processes."""

from __future__ import annotations

import json


def test_start_allow_reaches_the_session_and_status(oh, tmp_path):
    extra = tmp_path / "scratch"
    extra.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    info = oh.start("local", None, "--allow", str(extra))
    session = oh.session(info["instance_id"])
    assert session["allowed_roots"] == [str(oh.workspace), str(extra)]
    (extra / "x.txt").write_text("from scratch\n")
    proc = oh("read", str(extra / "x.txt"))
    assert proc.returncode == 0 and "from scratch" in proc.stdout, proc.stderr
    proc = oh("read", str(other / "nope.txt"))
    assert proc.returncode != 0 and "PATH_DENIED" in (proc.stdout + proc.stderr)
    status = oh.json("status", "--json")
    assert str(extra) in json.dumps(status)
    oh("stop", check=0)


def test_setting_and_env_roots(oh, tmp_path):
    extra = tmp_path / "from-env"
    extra.mkdir()
    info = oh.start("local", None)
    assert oh.session(info["instance_id"])["allowed_roots"] == [str(oh.workspace)]  # default: workspace only
    oh("stop", check=0)
    proc = oh(
        "start",
        "--detach",
        "--json",
        "--runtime",
        "local",
        "--workspace",
        str(oh.workspace),
        env={"OH_ALLOWED_ROOTS": str(extra)},
        timeout=40,
    )
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    oh.started.append(info)
    assert oh.session(info["instance_id"])["allowed_roots"] == [str(oh.workspace), str(extra)]
    oh("stop", check=0)


def test_bad_allow_is_refused_before_starting(oh, tmp_path):
    for bad, words in ((str(tmp_path / "missing"), "does not exist"), ("/", "file system root")):
        proc = oh("start", "--detach", "--runtime", "local", "--allow", bad, timeout=40)
        assert proc.returncode == 2, (proc.returncode, proc.stderr)
        assert words in proc.stderr and "Traceback" not in proc.stderr
    assert not list((oh.home / "sessions").glob("*.json")) if (oh.home / "sessions").exists() else True
