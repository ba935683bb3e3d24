"""What submit accepted that a researcher likely did not mean is said (#74.8): credentials shipped with --workdir, an
image with no registry (Docker Hub), a notebook image of another jax than the stack's Pathways."""

from __future__ import annotations

import subprocess
import sys

from infra.run.submit_notes import notes, registry_less, secret_files
from tests.conftest import GROUPS_RBAC, config_with, write_stack_file
from tools.cluster.local import ROOT


def test_each_note_and_what_passes_quietly():
    assert secret_files(["train.py", ".env", "conf/.env.prod", "keys/sa-key.pem", "deploy/my-service-account-123.json", "id_rsa",
                         "data/env.txt", "README.md"]) == [".env", "conf/.env.prod", "keys/sa-key.pem", "deploy/my-service-account-123.json", "id_rsa"]
    assert [registry_less(i) for i in ("trainer:1", "library/python:3.11", "us-docker.pkg.dev/p/r/t:1", "localhost/t:1",
                                       "registry:5000/t:1", "example.com/t:1")] == [True, True, False, False, False, False]
    said = notes({"image": "trainer:1"}, [".env", "train.py"], "0.9.0", False)
    assert [n.split(",")[0] for n in said] == ["note: --workdir ships .env", "note: --image trainer:1 names no registry"]
    nb = notes({"image": "us-docker.pkg.dev/p/r/notebook:jax-0.7.2-abc"}, None, "0.9.0", True)
    assert nb == ["note: the notebook image is built for jax 0.7.2, and the stack's Pathways is jax 0.9.0: its kernel would speak "
                  "another JAX to the run's proxy; use the stack's notebook image (no --image)"]
    assert notes({"image": "us-docker.pkg.dev/p/r/notebook:jax-0.9.0-abc"}, ["train.py"], "0.9.0", True) == []


def test_submit_says_them_after_the_run_is_valid_and_submits_anyway(tmp_path):
    path = write_stack_file(tmp_path, config_with(pathwaysVersion="jax-0.9.0", runs={}, cluster=GROUPS_RBAC))
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print(1)\n")
    (code / ".env").write_text("TOKEN=x\n")
    proc = subprocess.run([sys.executable, "-m", "infra.run", "submit", "--config", str(path), "--name", "exp", "--image", "trainer:1",
                           "--workdir", str(code), "--dry-run", "--", "python3", "train.py"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    # the dry run's five-line summary (#74.7), then the notes
    assert lines[0] == f"run exp: python3 train.py in trainer:1, code {code} (2 files)"
    assert lines[1] == "  where: namespace pathways, 2 slice(s) of group main (v6e-16), 32 TPU chips"  # the whole group
    assert lines[2].startswith("  cost: about $") and lines[3] == "  queue: runs-pathways, priority pathways-experiment"
    assert lines[4] == "  ends: when its program does; restarts after a failure: 0"
    assert lines[5].startswith("note: --workdir ships .env, which look like credentials") and lines[6].startswith("note: --image trainer:1")
