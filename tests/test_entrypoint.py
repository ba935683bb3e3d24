"""The program runs the way Pulumi runs it, and the offline engine is deterministic."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from infra.offline.__main__ import main as offline_main
from tests.conftest import example_path

ROOT = Path(__file__).resolve().parents[1]


def test_pulumi_style_entry_point_imports_components(tmp_path):
    """runpy.run_path('infra') from another directory, with only infra/ on sys.path, as the
    language host does: `components` must import, and resources must register."""
    config = yaml.safe_load(example_path("dev").read_text())["config"]
    flat = {k: (json.dumps(v) if isinstance(v, (dict, list)) else str(v).lower() if isinstance(v, bool) else str(v)) for k, v in config.items()}
    script = textwrap.dedent(f"""
        import json, runpy, sys
        sys.path = [p for p in sys.path if p not in ("", {str(ROOT)!r})]
        import pulumi
        from pulumi.runtime import settings
        from pulumi.runtime.stack import run_in_stack
        from pulumi.runtime.sync_await import _sync_await

        class M(pulumi.runtime.Mocks):
            def new_resource(self, args):
                return args.name + "-id", {{**args.inputs, "email": "sa@example.iam.gserviceaccount.com",
                                          "endpoint": "203.0.113.10", "masterAuth": {{"clusterCaCertificate": "x"}},
                                          "url": "gs://b"}}
            def call(self, args):
                return {{}}
        types = []
        class Monitor(pulumi.runtime.mocks.MockMonitor):
            def RegisterResource(self, request):
                types.append(request.type)
                return super().RegisterResource(request)
        pulumi.runtime.set_all_config(json.loads({json.dumps(json.dumps(flat))}))
        m = M()
        pulumi.runtime.set_mocks(m, project="pathways", stack="dev", preview=False, monitor=Monitor(m))
        settings.ROOT.set(None)
        _sync_await(run_in_stack(lambda: runpy.run_path({str(ROOT / "infra")!r}, run_name="__main__")))
        assert "components" in sys.modules and sys.modules["components"].__file__.startswith({str(ROOT)!r})
        print(json.dumps(sorted(set(types))))
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    types = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "gcp:container/cluster:Cluster" in types and "gcp:container/nodePool:NodePool" in types


def test_plan_json_shape(capsys):
    assert offline_main(["plan", "--config", str(example_path("dev")), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"resources", "outputs", "policyViolations", "criticalPath", "summary", "projectQuota", "deployTime"}
    assert doc["projectQuota"] is None  # no other stack file of pathways-dev-123 beside it
    assert doc["policyViolations"] == []
    assert set(doc["deployTime"]) == {"expectedMinutes", "worstCaseMinutes", "expectedMinutesAtLegacyQuota", "nodePoolConcurrency", "chain", "expectedChain"}
    assert doc["criticalPath"] == doc["deployTime"]["chain"]
    for r in doc["resources"]:
        assert set(r) == {"urn", "type", "name", "parent", "custom", "inputs", "dependencies", "options"}
        assert set(r["options"]) >= {"protect", "deleteBeforeReplace", "replaceOnChanges", "ignoreChanges", "customTimeouts", "provider"}
    assert doc["outputs"]["kubeconfig"] == "[secret]"


def test_same_config_planned_twice_gives_identical_json(capsys):
    outputs = []
    for _ in range(2):
        assert offline_main(["plan", "--config", str(example_path("prod")), "--json"]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]


def test_text_plan_shows_tree_and_summary(capsys):
    assert offline_main(["plan", "--config", str(example_path("dev"))]) == 0
    out = capsys.readouterr().out
    assert "+ pathways:gcp:GkeCluster  cluster" in out
    assert "  + gcp:container/cluster:Cluster  cluster" in out
    assert "Resources: 53 to create, grouped under " in out and "Resource counts: 53 resources" in out
    assert "nodeConfig.machineType: ct6e-standard-4t" in out
    # summary first: the stack's shape, cost and outputs come before the tree
    assert out.index("Slice groups:") < out.index("Outputs (in full") < out.index("Deploy time:") < out.index("+ pathways:gcp:GkeCluster")
    assert "interactive.notebook.clientEnv: JAX_PLATFORMS=proxy JAX_BACKEND_TARGET=grpc://notebook-pathways-head-0-0." in out
    assert "      replicatedJobs: pathways-head x1, worker x1" in out
    # key inputs beyond the essential ones only with --verbose
    assert "privateClusterConfig.enablePrivateNodes" not in out
    assert offline_main(["plan", "--config", str(example_path("dev")), "--verbose"]) == 0
    assert "privateClusterConfig.enablePrivateNodes: true" in capsys.readouterr().out


def test_the_verbose_plan_shows_every_key_input_and_no_unset_one(capsys):
    assert offline_main(["plan", "--config", str(example_path("prod")), "--verbose"]) == 0
    out = capsys.readouterr().out
    # names as GCP shows them, beside the Pulumi resource names, and the zone every node lives in
    assert ("  + gcp:compute/subnetwork:Subnetwork  network-subnet\n      name: pathways-prod\n      region: us-east5\n"
            "      ipCidrRange: 10.0.0.0/20\n      privateIpGoogleAccess: true\n") in out
    assert ("  + gcp:container/nodePool:NodePool  slices-train-0  [delete-before-replace; ignore:maxPodsPerNode; timeouts:create=180m,update=120m,delete=90m]\n"
            "      name: tpu-train-0\n      nodeLocations: [\"us-east5-a\"]\n      nodeCount: 16\n") in out
    assert "      name: pathways-prod\n      location: us-east5\n      nodeLocations: [\"us-east5-a\"]\n" in out  # the regional cluster
    # the buckets: their names and the artifacts bucket's lifecycle rules (the TTL)
    assert "  + gcp:storage/bucket:Bucket  scratch-artifacts  [protect]\n      name: pathways-prod-123-prod-pathways-artifacts\n" in out
    assert '      lifecycleRules: [{"action":{"type":"Delete"},"condition":{"age":14,"matchesPrefixes":["artifacts/"]}},' in out
    # the JobSet's shape: 4 slices of 16 hosts, one pod each
    assert "      replicatedJobs: pathways-head x1, worker x4 (16 pods each)\n" in out
    # an input the stack leaves unset is left out, never printed as null
    assert not [line for line in out.splitlines() if line.endswith(": null")]


def test_config_file_outside_stacks_dir(tmp_path, capsys):
    path = tmp_path / "candidate.yaml"
    path.write_text(example_path("staging").read_text())
    assert offline_main(["plan", "--config", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["outputs"]["clusterName"] == "pathways-candidate"


def test_render_writes_one_file_per_kubernetes_object(committed_stack, tmp_path, capsys):
    name, plan = committed_stack
    assert offline_main(["render", "--stack", name, "--out", str(tmp_path / "out")]) == 0
    from infra.offline.charts import chart_objects

    # (render writes no Secret: their values exist only in Pulumi state)
    k8s = [r for r in plan.resources if r.custom and r.type.startswith("kubernetes:") and not r.type.startswith("kubernetes:helm")
           and r.type != "kubernetes:core/v1:Secret"]
    # and what the controllers' charts create, but their Secrets
    charts = [c.obj for c in chart_objects(plan) if c.obj["kind"] != "Secret"]
    files = sorted((tmp_path / "out").glob("*.yaml"))
    assert len(files) == len(k8s) + len(charts)
    docs = [yaml.load(f.read_text(), Loader=yaml.CSafeLoader) for f in files]  # libyaml: the CRDs are megabytes
    assert sorted(d["kind"] for d in docs) == sorted([r.inputs["kind"] for r in k8s] + [o["kind"] for o in charts])
    assert all(list(d)[:3] == ["apiVersion", "kind", "metadata"] for d in docs)


def test_rendered_yaml_reads_like_a_hand_written_manifest(tmp_path):
    # apiVersion, kind, metadata, name, namespace, spec first, the rest alphabetical, at every level and in every
    # list item: each container, env entry, port and replicatedJob starts with its name
    assert offline_main(["render", "--config", str(example_path("dev")), "--out", str(tmp_path)]) == 0
    first = ("apiVersion", "kind", "metadata", "name", "namespace", "spec")

    def check(node, path):
        if isinstance(node, dict):
            keys = list(node)
            assert keys == sorted(keys, key=lambda k: (first.index(k) if k in first else len(first), k)), (path, keys)
            for k, v in node.items():
                check(v, f"{path}.{k}")
        elif isinstance(node, list):
            for i, item in enumerate(node):
                check(item, f"{path}[{i}]")

    for f in tmp_path.glob("*.yaml"):
        check(yaml.load(f.read_text(), Loader=yaml.CSafeLoader), f.name)
    text = (tmp_path / "jobset-pathways-notebook.yaml").read_text()
    assert "\n  replicatedJobs:\n  - name: pathways-head\n" in text
    assert "\n            containers:\n            - name: pathways-rm\n              args:\n" in text
    assert "\n              env:\n              - name: " in text


def test_every_made_stack_plans(made_stack):
    name, plan = made_stack
    assert plan.resources and plan.outputs["clusterName"] == f"pathways-{name}"


def test_invokes_that_would_call_gcp_get_deterministic_stand_ins():
    import pytest
    from pulumi.runtime.mocks import MockCallArgs

    from infra.offline.engine import PROJECT_NUMBER, StandInMocks

    mocks = StandInMocks("p-123456")
    project, failures = mocks.call(MockCallArgs("gcp:organizations/getProject:getProject", {}, ""))
    assert failures == []
    assert project["number"] == PROJECT_NUMBER and project["projectId"] == "p-123456"
    client, _ = mocks.call(MockCallArgs("gcp:organizations/getClientConfig:getClientConfig", {}, ""))
    assert client["project"] == "p-123456"
    with pytest.raises(NotImplementedError, match="no stand-in for invoke gcp:compute/getZones"):
        mocks.call(MockCallArgs("gcp:compute/getZones:getZones", {}, ""))


def test_secure_values_in_stack_files_become_secret_markers():
    from infra.offline.stackfile import flatten

    config, secrets = flatten({"gcp:project": "p-123456", "pathways:token": {"secure": "v1:abc"}, "protected": True})
    assert config == {"gcp:project": "p-123456", "pathways:token": "[secret]", "pathways:protected": "true"}
    assert secrets == ("pathways:token",)


def test_plan_json_is_identical_across_processes_and_hash_seeds():
    """No set order, hash seed or clock leaks into a plan (a real `pulumi up` would show a perpetual diff)."""
    import os

    outs = []
    for seed in ("1", "2"):
        proc = subprocess.run(
            [sys.executable, "-m", "infra.offline", "plan", "--config", str(example_path("staging")), "--json"],
            cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout)
    assert outs[0] == outs[1]


def test_the_offline_engine_answers_the_invokes_it_stands_in_for(tmp_path):
    # a program that looks its project up (gcp.organizations.get_project) plans offline too
    from infra.offline.engine import PROJECT_NUMBER, run

    program = tmp_path / "__main__.py"
    program.write_text("import pulumi, pulumi_gcp as gcp\n"
                       "p = gcp.organizations.get_project()\n"
                       "pulumi.export('number', p.number)\n")
    plan = run({"gcp:project": "test-proj-123"}, "invoke", program_dir=tmp_path)
    assert plan.outputs["number"] == PROJECT_NUMBER
