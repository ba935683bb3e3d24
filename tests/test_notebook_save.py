"""A notebook keeps its work (#74.9): the rendered save wrapper run for real as an unprivileged user (the notebook
image's user is uid 1000; here `nobody`), for JupyterLab's idle exit, for the kubelet's SIGTERM and for a failure;
where the files go by default and what `submit --notebook` prints and renders."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from infra.run import notebook_save
from infra.run.notebook_save import SAVE_MOUNT, wrapper
from tests.conftest import example_path

PYTHON = "/usr/bin/python3"  # the machine's own, as an image's would be
NOBODY = 65534


@pytest.fixture()
def home() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="nb-save-"))  # pytest's tmp_path is private to root; this is traversable
    try:
        base.chmod(0o755)
        for d in ("home", "bucket"):
            (base / d).mkdir()
            (base / d).chmod(0o777)  # the home is the image user's; the FUSE mount is writable by the pod's user
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _start(base: Path, program: str, mount: Path | None = None) -> subprocess.Popen[str]:
    mount = mount or base / "bucket"
    return subprocess.Popen(["/bin/sh", "-c", wrapper(str(mount), PYTHON), str(mount / "notebooks" / "nb"), "/bin/sh", "-c", program],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, user=NOBODY, group=NOBODY,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(base / "home")})


def _saved(base: Path) -> dict[str, str]:
    (stamp,) = (base / "bucket" / "notebooks" / "nb").iterdir()
    return {p.relative_to(stamp).as_posix(): p.read_text() for p in sorted(stamp.rglob("*")) if p.is_file()}


WORK = ("echo '{\"cells\": []}' > \"$HOME/analysis.ipynb\"; mkdir -p \"$HOME/src\" \"$HOME/.cache/pip\" \"$HOME/.ipynb_checkpoints\"; "
        "echo 'x = 1' > \"$HOME/src/model.py\"; echo cached > \"$HOME/.cache/pip/w\"; echo cp > \"$HOME/.ipynb_checkpoints/a\"; ")


def test_the_idle_stop_saves_the_researchers_files_and_ends_as_jupyter_did(home):
    # JupyterLab's shutdown_no_activity_timeout: the server exits 0; the JobSet then completes
    proc = _start(home, WORK + "exit 0")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert _saved(home) == {"analysis.ipynb": '{"cells": []}\n', "src/model.py": "x = 1\n"}  # no caches, no checkpoints
    assert "notebook: saved 2 file(s)" in err and str(home / "bucket" / "notebooks" / "nb") in err


def test_a_delete_or_preemption_sigterm_reaches_jupyter_and_the_files_are_saved_before_the_pod_ends(home):
    # the kubelet sends SIGTERM to the container's first process (the wrapper): JupyterLab must get it, end (saving
    # what it saves on shutdown), and only then are the files copied; the status is JupyterLab's own
    proc = _start(home, WORK + "trap 'echo late > \"$HOME/on-shutdown.txt\"; exit 143' TERM; touch \"$HOME/.started\"; "
                        "while :; do sleep 0.1; done")
    deadline = time.monotonic() + 30
    while not (home / "home" / ".started").exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert _saved(home) == {"analysis.ipynb": '{"cells": []}\n', "on-shutdown.txt": "late\n", "src/model.py": "x = 1\n"}


def test_a_failed_notebook_is_saved_too_and_keeps_its_exit_status(home):
    proc = _start(home, WORK + "exit 3")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert set(_saved(home)) == {"analysis.ipynb", "src/model.py"}


def test_a_bucket_mounted_inside_the_home_is_not_copied_into_itself(home):
    inside = home / "home" / "ckpt"
    inside.mkdir()
    inside.chmod(0o777)
    (inside / "big.bin").write_text("weights")
    proc = subprocess.Popen(["/bin/sh", "-c", wrapper(str(inside), PYTHON), str(inside / "notebooks" / "nb"), "/bin/sh", "-c", WORK + "exit 0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, user=NOBODY, group=NOBODY,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(home / "home")})
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    (stamp,) = (inside / "notebooks" / "nb").iterdir()
    assert sorted(p.relative_to(stamp).as_posix() for p in stamp.rglob("*") if p.is_file()) == ["analysis.ipynb", "src/model.py"]


@pytest.fixture()
def submit(capsys):
    from infra.run.__main__ import main

    def run(*args: str, notebook: bool = True) -> subprocess.CompletedProcess[str]:
        code = main(["submit", "--config", str(example_path("teams")), "--slice-group", "reserved", "--slices", "1", "--dry-run",
                     *(["--name", "nb", "--notebook"] if notebook else []), *args])
        out = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out.out, out.err)

    return run


def _program(out: str) -> tuple[dict, dict]:
    jobset = yaml.safe_load(out)
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    return jobset, pod


def test_a_teams_notebook_saves_to_the_first_bucket_the_team_may_write_by_default(submit):
    team = next(t for t in yaml.safe_load(example_path("teams").read_text())["config"]["pathways:teams"] if t["name"] == "pretraining")
    writable = next(b["name"] for b in team["buckets"] if b.get("readOnly") is False)  # the example's, whatever it is
    proc = submit("--team", "pretraining")
    assert proc.returncode == 0, proc.stderr
    jobset, pod = _program(proc.stdout)
    assert jobset["metadata"]["annotations"][notebook_save.SAVE_ANNOTATION] == f"gs://{writable}/notebooks/nb/"
    assert f"its files: saved to gs://{writable}/notebooks/nb/<time>/ when it stops" in proc.stderr
    program = next(c for c in pod["containers"] if c["name"] == "jax-program")
    assert program["command"][:2] == ["/bin/sh", "-c"] and program["command"][3] == f"{SAVE_MOUNT}/notebooks/nb"
    assert program["command"][4:7] == ["jupyter", "lab", "--ip=127.0.0.1"]
    (mount,) = [m for m in program["volumeMounts"] if m["mountPath"] == SAVE_MOUNT]
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["csi"]["volumeAttributes"]["bucketName"] == writable and not mount.get("readOnly")
    assert pod["terminationGracePeriodSeconds"] == notebook_save.SAVE_GRACE_SECONDS


def test_a_notebook_without_a_writable_bucket_says_its_files_are_not_kept_and_save_to_is_checked(submit):
    proc = submit("--team", "posttraining")  # the example gives posttraining no bucket
    assert proc.returncode == 0, proc.stderr
    assert "note: this notebook's files are not kept when it stops: no bucket to write (teams[posttraining].buckets" in proc.stderr
    assert "/bin/sh" not in yaml.safe_load(proc.stdout)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][-1]["command"]
    off = submit("--team", "pretraining", "--save-to", "none")
    assert off.returncode == 0 and "not kept" not in off.stderr and notebook_save.SAVE_ANNOTATION not in yaml.safe_load(off.stdout)["metadata"].get("annotations", {})
    bad = submit("--team", "pretraining", "--save-to", "my-bucket")
    assert (bad.returncode, bad.stderr.strip()) == (2, "error: --save-to 'my-bucket' is not gs://BUCKET or none (the files go under gs://BUCKET/notebooks/<run>/)")
    # a bucket the team may not write is refused by the same rule as --mount's
    other = submit("--team", "posttraining", "--save-to", "gs://pathways-research-123-pretraining-work")
    assert other.returncode == 2 and "pathways-research-123-pretraining-work" in other.stderr and "Traceback" not in other.stderr, other.stderr
    assert submit("--save-to", "none", "--team", "pretraining").returncode == 0
    plain = submit("--name", "x", "--save-to", "none", "--", "python3", "t.py", notebook=False)
    assert (plain.returncode, plain.stderr.strip()) == (2, "error: --save-to keeps a notebook's files: give it with --notebook")


def test_the_wrapper_is_posix_sh_and_names_the_mount_once():
    script = wrapper("/notebook-saves")
    assert script.count("'/notebook-saves'") == 1 and "exit $rc" in script
    proc = subprocess.run(["/bin/sh", "-n", "-c", script], capture_output=True, text=True)  # dash parses it
    assert proc.returncode == 0, proc.stderr
    assert os.access(PYTHON, os.X_OK)


def test_a_home_inside_the_save_mount_is_not_copied_into_itself(home):
    # `--mount /home/researcher=gs://work:rw`: the notebook's files are in the bucket already; a copy would nest forever
    mount = home / "home"
    proc = subprocess.Popen(["/bin/sh", "-c", wrapper(str(mount), PYTHON), str(mount / "notebooks" / "nb"), "/bin/sh", "-c", WORK + "exit 0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, user=NOBODY, group=NOBODY,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(mount)})
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "its home is in the save mount" in err, err
    assert not (mount / "notebooks").exists()


def test_a_runs_grace_period_is_bounded(submit):
    # its slices wait for a deleted or preempted run's pods to end: at most 600 s
    fits = submit("--name", "x", "--image", "example.com/t:1", "--spec", str(_spec_file({"terminationGracePeriodSeconds": 600})),
                  "--", "python3", "t.py", notebook=False)
    assert fits.returncode == 0, fits.stderr
    over = submit("--name", "x", "--image", "example.com/t:1", "--spec", str(_spec_file({"terminationGracePeriodSeconds": 3600})),
                  "--", "python3", "t.py", notebook=False)
    assert (over.returncode, over.stderr.strip()) == (2, "error: run.terminationGracePeriodSeconds: 3600 s: a run ends within 600 s "
                                                          "of a delete, preemption or time limit (its slices wait for it); give at most that")


def _spec_file(spec: dict) -> Path:
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write(yaml.safe_dump(spec))
    f.close()
    return Path(f.name)
