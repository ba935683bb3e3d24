"""`submit --workdir` (infra/run/workdir.py): what is shipped, that the same code is the same bytes, the limits, the
JobSet that unpacks it, the policy that lets a submitter create exactly that ConfigMap, and the unpack command run."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest
import yaml

from components.manifests import runs as runs_manifest
from components.model.config import resolve
from infra.run.workdir import (
    ARCHIVE,
    CODE_VOLUME,
    MOUNT,
    TARGET,
    UNPACK,
    UNPACK_EXIT,
    Packed,
    WorkdirError,
    config_map,
    pack,
    unpack_script,
    with_workdir,
)
from tests.conftest import GROUPS_RBAC, config_with, write_stack_file
from tests.test_runs import RUNS, VERSION, _cli, _policy_admits, _run, model


def _tree(root, files: dict[str, bytes]):
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


CODE = {"train.py": b"print('step')\n", "lib/model.py": b"X = 1\n", ".gitignore": b"data/\n*.ckpt\n", "data/shard-0": b"x" * 1000,
        "out.ckpt": b"c", ".git/config": b"[core]\n", "notes.txt": b"n"}


def test_the_same_code_is_the_same_bytes_and_gitignore_and_exclude_leave_files_out(tmp_path):
    a = pack(_tree(tmp_path / "a", CODE), ("*.txt",))
    b = pack(_tree(tmp_path / "b", CODE), ("*.txt",))
    assert [rel for rel, _ in a.files] == [".gitignore", "lib/model.py", "train.py"]
    assert a.excluded == 4 and a.sha256 == b.sha256 and a.data == b.data  # times and owners are not in it
    changed = pack(_tree(tmp_path / "c", {**CODE, "train.py": b"print('step 2')\n"}), ("*.txt",))
    assert changed.sha256 != a.sha256
    assert "3 file(s)" in a.summary() and a.sha256 in a.summary()


def test_what_cannot_be_shipped_is_said_in_one_line(tmp_path):
    with pytest.raises(WorkdirError, match=r"MiB packed, over the 900 KiB a run ships; exclude data and outputs"):
        pack(_tree(tmp_path / "big", {"weights.bin": os.urandom(1024 * 1024)}))
    link = _tree(tmp_path / "link", {"a.py": b"1"})
    (link / "b.py").symlink_to(link / "a.py")
    with pytest.raises(WorkdirError, match="b.py is a symbolic link"):
        pack(link)
    with pytest.raises(WorkdirError, match="nothing to ship"):
        pack(_tree(tmp_path / "none", {"x.txt": b"1"}), ("*.txt",))
    with pytest.raises(WorkdirError, match="not a directory"):
        pack(tmp_path / "missing")


def test_the_unpack_command_starts_the_program_in_the_shipped_tree(tmp_path):
    packed = pack(_tree(tmp_path / "code", {"train.py": b"import lib.model as m; print('ran', m.X)\n", "lib/model.py": b"X = 7\n",
                                            "lib/__init__.py": b""}))
    mount, target = tmp_path / "mount", tmp_path / "workdir"
    mount.mkdir()
    (mount / ARCHIVE).write_bytes(packed.data)
    script = unpack_script(str(mount), str(target), sys.executable)
    assert UNPACK == unpack_script() and f"'{mount}/{ARCHIVE}'" in script and f"cd {target} &&" in script
    env = {"PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin"}
    # #73.4: code other than what the run was submitted with (a teammate's ConfigMap that won the race) never runs
    other = pack(_tree(tmp_path / "theirs", {"train.py": b"print('theirs')\n"}))
    proc = subprocess.run(["/bin/sh", "-c", script, other.sha256, sys.executable, "train.py"], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == UNPACK_EXIT and proc.stdout == "" and not target.exists()
    assert proc.stderr == (f"workdir: the mounted code is sha256 {packed.sha256}, not the {other.sha256} this run was submitted "
                           "with; not running it\n")
    proc = subprocess.run(["/bin/sh", "-c", script, packed.sha256, sys.executable, "train.py"], capture_output=True, text=True, timeout=60,
                          env=env)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "ran 7\n", "")


def test_the_unpack_runs_as_an_unprivileged_user_in_a_volume_like_an_empty_dir(tmp_path):
    # #74.3: the notebook image's user is uid 1000; here `nobody`, in a directory as the kubelet makes an emptyDir
    # (mode 0777), with the archive mounted read-only by another owner
    packed = pack(_tree(tmp_path / "code", {"train.py": b"import os; print('ran as', os.getuid(), 'in', os.getcwd())\n"}))
    base = Path(tempfile.mkdtemp(prefix="unpack-"))  # pytest's tmp_path is private to root; this is traversable
    try:
        base.chmod(0o755)
        mount, target = base / "mount", base / "workdir"
        mount.mkdir(mode=0o755)
        (mount / ARCHIVE).write_bytes(packed.data)
        (mount / ARCHIVE).chmod(0o444)
        target.mkdir()
        target.chmod(0o777)
        _run_unprivileged(packed, mount, target)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run_unprivileged(packed, mount: Path, target: Path) -> None:
    # the machine's own python3 (Debian's: 3.11.2 here, without the data filter), as an image's would be
    python = "/usr/bin/python3"
    assert os.access(python, os.X_OK), f"no {python} for an unprivileged user to run"
    proc = subprocess.run(["/bin/sh", "-c", unpack_script(str(mount), str(target), python), packed.sha256, python, "train.py"],
                          capture_output=True, text=True, timeout=60, user=65534, group=65534, env={"PATH": "/usr/bin:/bin"})
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"ran as 65534 in {target}\n", "")


def test_without_tarfiles_data_filter_the_script_checks_each_member_itself(tmp_path):
    # a Python before 3.11.4 (Debian bookworm's 3.11.2): no data_filter, no filter= argument
    old = tmp_path / "old-python"
    old.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import tarfile; del tarfile.data_filter; import sys; "
                   "sys.argv.pop(1); exec(sys.argv.pop(1))' \"$@\"\n")
    old.chmod(0o755)
    mount = tmp_path / "mount"
    mount.mkdir()

    def unpack(data: bytes, target: Path) -> subprocess.CompletedProcess[str]:
        (mount / ARCHIVE).write_bytes(data)
        target.mkdir()
        return subprocess.run(["/bin/sh", "-c", unpack_script(str(mount), str(target), str(old)), hashlib.sha256(data).hexdigest(),
                               sys.executable, "train.py"], capture_output=True, text=True, timeout=60)
    packed = pack(_tree(tmp_path / "code", {"train.py": b"print('ran')\n", "lib/x.py": b""}))
    proc = unpack(packed.data, tmp_path / "ok")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "ran\n", "")
    # what pack() never writes is refused, and nothing is unpacked
    for name, member in (("up", tarfile.TarInfo("../evil.py")), ("abs", tarfile.TarInfo("/etc/evil")),
                         ("link", _link("train.py", "/etc/passwd"))):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as t:
            t.addfile(member, io.BytesIO(b"") if member.isfile() else None)
        proc = unpack(buf.getvalue(), tmp_path / name)
        assert proc.returncode == UNPACK_EXIT and list((tmp_path / name).iterdir()) == [], (name, proc.stderr)
        assert proc.stderr == f"workdir: not unpacking {member.name}: only files and directories under the run directory are shipped\n"


def _link(name: str, to: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, to
    return info


def test_submit_dry_run_shows_what_is_shipped_and_the_jobset_that_unpacks_it(tmp_path):
    path = write_stack_file(tmp_path, config_with(pathwaysVersion=VERSION, runs=RUNS, cluster=GROUPS_RBAC))
    code = _tree(tmp_path / "code", CODE)
    proc = _cli("submit", "--config", str(path), "--name", "exp", "--image", "example.com/t:1", "--workdir", str(code), "--exclude", "*.txt",
                "--dry-run", "--", "python3", "train.py")
    assert proc.returncode == 0, proc.stderr
    packed = pack(code, ("*.txt",))
    assert proc.stderr.splitlines()[0] == f"run exp: python3 train.py in example.com/t:1, code {code} (3 files)"  # the summary first
    assert f"--workdir {code} ships {packed.summary()}:" in proc.stderr.splitlines()
    assert "  train.py (14 bytes)" in proc.stderr.splitlines()
    js = yaml.safe_load(proc.stdout)
    assert js["metadata"]["annotations"]["pathways/workdir-sha256"] == packed.sha256
    head = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    program = next(c for c in head["containers"] if c["name"] == "jax-program")
    assert program["command"] == ["/bin/sh", "-c", UNPACK, packed.sha256, "python3", "train.py"]  # the digest it checks
    assert {"name": "workdir", "configMap": {"name": "exp-workdir"}} in head["volumes"]
    assert {"name": "workdir", "mountPath": MOUNT, "readOnly": True} in program["volumeMounts"]
    # unpacked into a volume of its own: the image's user may write there whoever it is (#74.3)
    assert {"name": CODE_VOLUME, "emptyDir": {}} in head["volumes"] and {"name": CODE_VOLUME, "mountPath": TARGET} in program["volumeMounts"]
    # the workers run the Pathways server: no code goes there
    workers = [rj for rj in js["spec"]["replicatedJobs"] if rj["name"] != "pathways-head"]
    assert all("workdir" not in str(rj) for rj in workers)
    # without --image: the stack's run image (the notebook recipe's jax and pathwaysutils), so the code alone ships (#74.3)
    bare = _cli("submit", "--config", str(path), "--name", "exp", "--workdir", str(code), "--dry-run", "--", "python3", "train.py")
    assert bare.returncode == 0, bare.stderr
    from infra.notebook_image import tag
    bare_head = yaml.safe_load(bare.stdout)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert next(c for c in bare_head["containers"] if c["name"] == "jax-program")["image"] == \
        f"us-east5-docker.pkg.dev/test-proj-123/pathways/notebook:{tag()}"
    for argv, error in ((["--exclude", "*.txt"], "--exclude leaves files out of --workdir"),
                        (["--workdir", str(code), "--notebook"], "--workdir ships code for a program"),
                        (["--workdir", str(code)], "--workdir needs the program's command (after --)")):
        bad = _cli("submit", "--config", str(path), "--name", "exp", "--image", "example.com/t:1", *argv, "--dry-run")
        assert bad.returncode == 2 and error in bad.stderr, bad.stderr


def _command(pod):
    next(c for c in pod["containers"] if c["name"] == "jax-program")["command"] = ["python3", "train.py"]


def test_a_submitter_creates_only_a_runs_own_code_and_a_run_mounts_only_its_own():
    stack = resolve(model())
    policy = runs_manifest.runs_only_policy(stack)[0]
    code = Packed(b"x", (("train.py", 1),), 0)
    packed_cm = config_map("exp", "pathways", code, "uid-1")
    cm = ("", "configmaps")
    assert _policy_admits(policy, "rita@example.com", [], "CREATE", packed_cm, None, cm)
    for change in (lambda o: o["metadata"].update(name="kube-root-ca.crt"), lambda o: o["metadata"].pop("ownerReferences"),
                   lambda o: o["metadata"].update(labels={}), lambda o: o.pop("immutable"), lambda o: o.update(immutable=False)):
        bad = yaml.safe_load(yaml.safe_dump(packed_cm))
        change(bad)
        assert not _policy_admits(policy, "rita@example.com", [], "CREATE", bad, None, cm), bad["metadata"]
    # no update or delete of a ConfigMap (RBAC grants create only; the policy holds if a binding is widened)
    assert not _policy_admits(policy, "rita@example.com", [], "UPDATE", packed_cm, packed_cm, cm)
    # a run's JobSet mounts its own code, never another ConfigMap
    js = with_workdir(_run(pod=_command), "jax-program", code)
    assert _policy_admits(policy, "rita@example.com", [], "CREATE", js, None)
    other = yaml.safe_load(yaml.safe_dump(js))
    next(v for v in other["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["volumes"]
         if "configMap" in v)["configMap"]["name"] = "train-env"
    assert not _policy_admits(policy, "rita@example.com", [], "CREATE", other, None)
    assert {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]} in runs_manifest.ROLE_RULES


def test_the_code_travels_in_a_configmap_the_runs_jobset_owns(tmp_path):
    import base64

    packed = pack(_tree(tmp_path / "code", {"train.py": b"print(1)\n"}))
    cm = config_map("exp", "pathways", packed, "uid-7")
    assert cm == {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "exp-workdir", "namespace": "pathways", "labels": {"pathways/workdir": "true"},
                               "annotations": {"pathways/workdir-sha256": packed.sha256},
                               "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "exp", "uid": "uid-7"}]},
                  "immutable": True, "binaryData": {ARCHIVE: base64.b64encode(packed.data).decode()}}
