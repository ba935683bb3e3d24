"""#75.6: the bootstrap's own state moves from the operator's machine into the state bucket in one command
(`python -m bootstrap.move_state`), with the real Pulumi CLI (v3.274.1, built from the Go module proxy) between two
DIY backends: the same code path (pulumi/pulumi pkg/backend/diy over gocloud blob) as a gs:// bucket, which this
machine cannot reach. A seeded bootstrap state (the stack, its provider and the state bucket) is exported, imported
and read back; a second move is refused without touching the target; an empty source is refused."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from bootstrap.move_state import main
from tools.pulumi_real.run import BIN

STACK = "test-proj-123"
PRE = f"urn:pulumi:{STACK}::pathways-bootstrap::"


def _cli(backend: Path, project: Path, *args: str) -> str:
    env = {**os.environ, "PULUMI_BACKEND_URL": f"file://{backend}", "PULUMI_CONFIG_PASSPHRASE": "",
           "PULUMI_SKIP_UPDATE_CHECK": "true", "PULUMI_HOME": str(project.parent / "home")}
    proc = subprocess.run([str(BIN / "pulumi"), "--cwd", str(project), "--non-interactive", *args],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_bootstrap_state_moves_into_the_bucket_once_and_reads_back_the_same(tmp_path, monkeypatch, capsys):
    project, source, target = tmp_path / "bootstrap", tmp_path / "laptop", tmp_path / "bucket"
    for d in (project, source, target):
        d.mkdir()
    (project / "Pulumi.yaml").write_text("name: pathways-bootstrap\nruntime: python\n")
    (project / f"Pulumi.{STACK}.yaml").write_text(f"config:\n  gcp:project: {STACK}\n")
    monkeypatch.setenv("PULUMI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PULUMI_SKIP_UPDATE_CHECK", "true")
    args = [STACK, "--from", f"file://{source}", "--to", f"file://{target}", "--pulumi", str(BIN / "pulumi"), "--project-dir", str(project)]

    _cli(source, project, "stack", "init", STACK, "--secrets-provider", "passphrase")
    assert main(args) == 1  # nothing there yet: refused, nothing made in the target
    assert "holds no resource: nothing to move" in capsys.readouterr().err
    assert not list(target.rglob("*.json"))

    seed = json.loads(_cli(source, project, "stack", "export", "--stack", STACK))
    provider = f"{PRE}pulumi:providers:gcp::default_8_0_0"
    seed["deployment"]["resources"] = [
        {"urn": f"{PRE}pulumi:pulumi:Stack::pathways-bootstrap-{STACK}", "custom": False, "type": "pulumi:pulumi:Stack"},
        {"urn": provider, "custom": True, "id": "0b2f3c1e-0000-4000-8000-000000000001", "type": "pulumi:providers:gcp",
         "inputs": {"project": STACK}, "outputs": {"project": STACK}},
        {"urn": f"{PRE}gcp:storage/bucket:Bucket::state", "custom": True, "id": f"{STACK}-pulumi-state",
         "type": "gcp:storage/bucket:Bucket", "inputs": {"name": f"{STACK}-pulumi-state"}, "outputs": {"name": f"{STACK}-pulumi-state"},
         "parent": f"{PRE}pulumi:pulumi:Stack::pathways-bootstrap-{STACK}", "provider": f"{provider}::0b2f3c1e-0000-4000-8000-000000000001"},
    ]
    (tmp_path / "seed.json").write_text(json.dumps(seed))
    _cli(source, project, "stack", "import", "--stack", STACK, "--file", str(tmp_path / "seed.json"))
    salt = (project / f"Pulumi.{STACK}.yaml").read_text()

    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"moved bootstrap stack {STACK}: 3 resources, from file://{source} to file://{target}"), out
    assert f"export PULUMI_BACKEND_URL=file://{target}" in out
    moved = json.loads(_cli(target, project, "stack", "export", "--stack", STACK))
    assert [r["urn"] for r in moved["deployment"]["resources"]] == [r["urn"] for r in seed["deployment"]["resources"]]
    assert moved["deployment"]["secrets_providers"] == seed["deployment"]["secrets_providers"]  # the same passphrase salt
    assert (project / f"Pulumi.{STACK}.yaml").read_text() == salt
    # the project's own path in the DIY layout, beside (never among) the main stacks' (identities.stack_state_condition)
    assert (target / ".pulumi" / "stacks" / "pathways-bootstrap" / f"{STACK}.json").is_file()
    # the laptop's copy is left as it was
    assert len(json.loads(_cli(source, project, "stack", "export", "--stack", STACK))["deployment"]["resources"]) == 3

    assert main(args) == 1  # a second move: refused, the target untouched
    assert f"holds a bootstrap stack {STACK} already: nothing moved" in capsys.readouterr().err
    assert json.loads(_cli(target, project, "stack", "export", "--stack", STACK))["deployment"]["resources"] == moved["deployment"]["resources"]
