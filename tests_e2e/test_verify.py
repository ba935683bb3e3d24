"""`python -m infra.offline verify --live` on the stack the real `pulumi up` deployed (test_runs' stack, reused): it
runs the real CLI's `pulumi refresh --preview-only --json` against the local control plane. Untouched, five runs in a
row find nothing (no false positive: what controllers and the API server set besides the stack's fields never
shows); after three out-of-band edits (a ClusterQueue patched, a guard's binding deleted, the workload namespace's
Pod Security label lowered) each is reported with old -> new and who, and the audit names the pods the lowered
label would refuse; undone as the fix says, and `pulumi up --refresh`, the stack verifies clean again. Before the
edits, `pulumi up --refresh` of the untouched stack changes nothing, the controllers' webhook certificates included."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from tests_e2e.test_runs import CONFIG
from tools.cluster.local import ROOT, LocalCluster
from tools.pulumi_real.run import BIN


def verify(cluster: LocalCluster, deployed) -> tuple[int, dict, float]:
    """The command as the workflow runs it, in the stack's project with its backend; (exit, report, seconds)."""
    run = deployed.run
    env = {**run.env, "PULUMI": str(BIN / "pulumi"), "PYTHONPATH": str(ROOT), "KUBECONFIG": str(cluster.kubeconfig)}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "infra.offline", "verify", "--stack", run.stack, "--config", str(run.stack_file),
                           "--live", "--json"], cwd=run.project, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 3), proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout), time.monotonic() - t0


def refresh_changes_nothing(cluster: LocalCluster, deployed) -> None:
    """`pulumi preview --refresh` of the untouched stack proposes nothing, and `pulumi up --refresh` keeps the JobSet
    controller's webhook certificate Secret as its rotator wrote it (the chart's empty keys are not applied:
    components/manifests/chart_post_render.py; applied, the refresh-and-up replaced the Secret)."""
    def secret() -> dict:
        return cluster.get("secret", "jobset-webhook-server-cert", "-n", "jobset-system")

    before = secret()
    assert (before.get("data") or {}).get("tls.crt"), "the JobSet controller's rotator has not filled its Secret"
    preview = deployed.run.cli("preview", "--refresh", "--json")
    assert preview.returncode == 0, preview.output[-3000:]
    changed = [(step["op"], step["urn"].rsplit("::", 1)[-1]) for step in json.loads(preview.stdout).get("steps", [])
               if step["op"] not in ("same", "refresh", "read")]
    assert changed == [], changed
    up = deployed.run.cli("up", "--refresh", "--yes", "--skip-preview")
    assert up.returncode == 0, up.output[-3000:]
    after = secret()
    assert (after["metadata"]["uid"], after["data"]) == (before["metadata"]["uid"], before["data"])
    print(f"[verify] preview --refresh: no change; up --refresh kept the webhook Secret ({preview.seconds:.0f} s, {up.seconds:.0f} s)")


def test_verify_finds_nothing_on_an_untouched_stack_and_each_out_of_band_edit_after(cluster, stacks):
    deployed = stacks.use("runs", CONFIG)
    times = []
    for _ in range(5):
        code, report, seconds = verify(cluster, deployed)
        assert (code, report["findings"]) == (0, []), report["findings"]
        times.append(seconds)
    print(f"[verify] untouched, five runs: no finding; {[round(t) for t in times]} s each")
    refresh_changes_nothing(cluster, deployed)
    cluster.kubectl("patch", "clusterqueue", "pathways", "--type", "merge", "-p", json.dumps({"spec": {"queueingStrategy": "StrictFIFO"}}))
    cluster.kubectl("delete", "validatingadmissionpolicybinding", "pathways-nodes-reserved")
    cluster.kubectl("label", "namespace", "pathways", "pod-security.kubernetes.io/enforce=baseline", "--overwrite")
    stacks.changed()
    try:
        code, report, _ = verify(cluster, deployed)
        assert code == 3
        drift = {f["subject"]: f for f in report["findings"] if f["area"] == "drift"}
        assert set(drift) == {"ClusterQueue kueue-clusterqueue-pathways", "ValidatingAdmissionPolicyBinding guardrails-node-guard",
                              "Namespace workloads"}, drift
        assert drift["ClusterQueue kueue-clusterqueue-pathways"]["what"].startswith("spec.queueingStrategy: BestEffortFIFO -> StrictFIFO, by kubectl-patch")
        assert drift["ValidatingAdmissionPolicyBinding guardrails-node-guard"]["severity"] == "high"
        assert "privileged -> baseline, by kubectl-label" in drift["Namespace workloads"]["what"]
        audited = [f for f in report["findings"] if f["area"] == "audit"]
        assert audited and all("pathways-pod-security" in f["what"] for f in audited), audited
        print(f"[verify] after three edits: {len(drift)} drift and {len(audited)} audit finding(s)")
        targets = [f["fix"].split("--target '", 1)[1].split("'", 1)[0] for f in drift.values()]
    finally:
        # the fix as the findings say: undo the edits (their managers then hold the stack's own values), re-apply
        cluster.kubectl("patch", "clusterqueue", "pathways", "--type", "merge", "-p", json.dumps({"spec": {"queueingStrategy": "BestEffortFIFO"}}))
        cluster.kubectl("label", "namespace", "pathways", "pod-security.kubernetes.io/enforce=privileged", "--overwrite")
    up = deployed.run.cli("up", "--refresh", "--yes", "--skip-preview", *(a for t in targets for a in ("--target", t)))
    assert up.returncode == 0, up.output[-3000:]
    code, report, _ = verify(cluster, deployed)
    assert (code, report["findings"]) == (0, []), report["findings"]
    assert cluster.get("validatingadmissionpolicybinding", "pathways-nodes-reserved")["spec"]["policyName"] == "pathways-nodes-reserved"
