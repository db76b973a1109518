"""What a new user hits, round 3 (issue 41, minors), each through a real `oh` process and its effect."""

from __future__ import annotations

import json


def test_a_second_start_in_a_served_folder_offers_oh_watch(oh):
    info = oh.start("local")
    again = oh("start", "--detach", "--no-open", check=3)
    assert f"`oh watch {info['instance_id']}`" in again.stderr, again.stderr


def test_a_start_in_a_subfolder_of_a_served_workspace_warns_of_the_overlap(oh):
    outer = oh.start("local")
    sub = oh.workspace / "sub"
    sub.mkdir()
    inner = json.loads(oh("start", "--detach", "--json", "--no-open", "-C", str(sub), check=0).stdout)
    oh.started.append(inner)
    ids = [w["id"] for w in inner.get("warnings", [])]
    assert "overlap" in ids, inner
    text = next(w["message"] for w in inner["warnings"] if w["id"] == "overlap")
    assert outer["instance_id"] in text and f"oh stop {inner['instance_id']}" in text
    plain = oh("status", check=0)  # both run: the warning did not stop anything
    assert outer["instance_id"] in plain.stdout and inner["instance_id"] in plain.stdout


def test_run_in_a_directory_that_does_not_exist_says_so(oh, tmp_path):
    missing = tmp_path / "no" / "such"
    out = oh("run", "-C", str(missing), "--", "true", check=2)
    assert f"{missing} is not a directory" in out.stderr and "oh start" not in out.stderr, out.stderr


def test_share_revoke_of_an_unknown_share_ends_with_one_full_stop(oh):
    oh.start("local")
    out = oh("share", "revoke", "nosuch", check=1)
    line = out.stderr.strip().splitlines()[0]
    assert line.endswith("`oh share list`.") and not line.endswith(".."), out.stderr


def test_jobs_wait_on_a_failed_job_with_no_output_says_so(oh):
    oh.start("local")
    job = oh("run", "--background", "--", "exit 4", check=0).stdout.strip()
    out = oh("jobs", "wait", job, "--timeout", "60", check=4)
    assert f"job {job} failed (exit 4) and printed nothing" in out.stderr, out.stderr
    quiet = oh("jobs", "wait", "-q", job, check=4)
    assert quiet.stderr == "", quiet.stderr
