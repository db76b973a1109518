"""`oh doctor` tells what `oh start` would hit (issue 41): an OH_HOME that cannot be created fails its check (it
passed, then `oh start` failed), and a broken config.toml is never sent to `oh config unset`, which cannot parse
it either."""

from __future__ import annotations


def test_an_oh_home_that_cannot_be_created_fails_doctor_as_it_fails_start(oh, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    env = {"OH_HOME": str(blocker / "oh")}
    doctor = oh("doctor", env=env)
    assert doctor.returncode != 0, doctor.stdout
    assert "cannot be created" in doctor.stdout and f"{blocker} is not a directory" in doctor.stdout, doctor.stdout
    start = oh("start", "--detach", "--no-open", env=env)
    assert start.returncode != 0  # what doctor predicted


def test_a_broken_config_file_is_not_sent_to_config_unset(oh):
    oh.home.mkdir(parents=True, exist_ok=True)
    (oh.home / "config.toml").write_text("port = [\n")
    doctor = oh("doctor")
    assert doctor.returncode != 0
    assert "oh config unset" not in doctor.stdout + doctor.stderr, doctor.stdout
    assert "oh config edit" in doctor.stdout
