"""#75.4: `new-stack --from-gcluster BLUEPRINT [--gcluster-deployment FILE] [--gcluster-job LINE]` reads a Cluster
Toolkit GKE TPU blueprint as `--from-xpk` reads xpk lines: translated, already so here, or not translated with why;
the stack it writes plans OK. The blueprints here are written for the tests in the shape of Cluster Toolkit's
`examples/gke-tpu-v6e`, `gke-tpu-7x` and `gke-consumption-options/dws-flex-start*` (1047080): the modules and
settings the translator reads (vars, gke-cluster, gke-node-pool, resource-policy, vpc, service-account,
kubectl-apply, cloud-storage-bucket), not copies of those files. The job lines follow docs/gcluster_job_guide.md's
flag table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.offline.gcluster import job, translate
from infra.offline.new_stack import StackSpec
from tests.test_new_stack import new_stack, written


def _blueprint(tpu_pool: dict[str, Any], *, variables: dict[str, Any] | None = None, extra: list[dict[str, Any]] | None = None,
               cluster: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "blueprint_name": "bp",
        "vars": {"project_id": None, "deployment_name": "gke-tpu", "region": None, "zone": None, "num_slices": None,
                 "tpu_topology": None, "reservation": None, "authorized_cidr": None, "enable_pathways_for_tpus": True,
                 **(variables or {})},
        "deployment_groups": [{"group": "primary", "modules": [
            {"id": "net-0", "source": "modules/network/vpc", "settings": {
                "network_name": "$(vars.deployment_name)-net-0",
                "subnetworks": [{"subnet_name": "sub-0", "subnet_region": "$(vars.region)", "subnet_ip": "192.168.0.0/18"}],
                "secondary_ranges_list": [{"subnetwork_name": "sub-0", "ranges": [
                    {"range_name": "pods", "ip_cidr_range": "10.4.0.0/14"}, {"range_name": "services", "ip_cidr_range": "10.0.32.0/20"}]}]}},
            {"id": "net-1", "source": "modules/network/vpc", "settings": {"network_name": "$(vars.deployment_name)-net-1"}},
            {"id": "node_sa", "source": "modules/project/service-account", "settings": {"name": "gke-np-sa"}},
            {"id": "cluster", "source": "modules/scheduler/gke-cluster", "use": ["net-0"], "settings": {
                "system_node_pool_machine_type": "n2-standard-8", "enable_private_endpoint": False,
                "enable_pathways_for_tpus": "$(vars.enable_pathways_for_tpus)", "namespace": "default",
                "master_authorized_networks": [{"cidr_block": "$(vars.authorized_cidr)", "display_name": "kubectl-access-network"}],
                "version_prefix": "1.35.", "release_channel": "REGULAR", **(cluster or {})}},
            *(extra or []),
            {"id": "tpu-pool", "source": "modules/compute/gke-node-pool", "use": ["cluster", "node_sa", "policy"],
             "settings": {"num_slices": "$(vars.num_slices)", "zones": ["$(vars.zone)"], **tpu_pool}},
            {"id": "workload-manager-install", "source": "modules/management/kubectl-apply", "use": ["cluster"],
             "settings": {"kueue": {"install": True}, "jobset": {"install": True}}},
        ]}],
    }


V6E_POOL = {"name": "gke-tpu-v6e-pool", "machine_type": "ct6e-standard-4t", "disk_type": "hyperdisk-balanced",
            "reservation_affinity": {"consume_reservation_type": "SPECIFIC_RESERVATION", "specific_reservations": [{"name": "$(vars.reservation)"}]},
            "placement_policy": {"type": "COMPACT", "tpu_topology": "$(vars.tpu_topology)"}}
TPU7X_POOL = {"name": "gke-tpu-7x-pool", "machine_type": "tpu7x-standard-4t"}
TPU7X_POLICY = {"id": "policy", "source": "modules/compute/resource-policy",
                "settings": {"name": "tpu7x-workload-policy", "workload_policy": {"accelerator_topology": "$(vars.tpu_topology)",
                                                                                  "type": "HIGH_THROUGHPUT"}}}
FLEX = {"enable_flex_start": True, "auto_repair": False}

# five blueprints, each with the deployment file's vars that fill it in (and new-stack's flags where it leaves them empty)
BLUEPRINTS = {
    "v6e-reserved": (_blueprint(V6E_POOL), {"project_id": "team-ml-123", "zone": "us-east5-b", "num_slices": 2, "tpu_topology": "4x4",
                                            "reservation": "v6e-reservation", "authorized_cidr": "10.0.0.0/8"}, []),
    "tpu7x": (_blueprint(TPU7X_POOL, extra=[TPU7X_POLICY], cluster={"release_channel": "RAPID"}),
              {"num_slices": 1, "tpu_topology": "2x2x1"}, ["--project", "team-ml-123", "--zone", "us-central1-c"]),
    "v6e-flex": (_blueprint({**V6E_POOL, **FLEX, "reservation_affinity": {"consume_reservation_type": "NO_RESERVATION"}}),
                 {"project_id": "team-ml-123", "zone": "us-east5-b", "num_slices": 1, "tpu_topology": "4x4"}, []),
    "tpu7x-queued": (_blueprint({**TPU7X_POOL, **FLEX, "enable_queued_provisioning": True}, extra=[TPU7X_POLICY],
                                cluster={"release_channel": "RAPID"}),
                     {"project_id": "team-ml-123", "zone": "us-central1-c", "num_slices": 1, "tpu_topology": "2x2x2"}, []),
    "v6e-spot": (_blueprint({**V6E_POOL, "spot": True, "reservation_affinity": {"consume_reservation_type": "NO_RESERVATION"}}),
                 {"project_id": "team-ml-123", "zone": "us-east5-b", "num_slices": 4, "tpu_topology": "2x4"}, []),
}


def _files(tmp_path: Path, name: str) -> tuple[Path, Path]:
    blueprint, deployment, _ = BLUEPRINTS[name]
    bp, dep = tmp_path / f"{name}.yaml", tmp_path / f"{name}-deployment.yaml"
    bp.write_text(yaml.safe_dump(blueprint))
    dep.write_text(yaml.safe_dump({"vars": deployment}))
    return bp, dep


@pytest.mark.parametrize("name", sorted(BLUEPRINTS))
def test_five_blueprints_plan_ok_as_new_stacks(tmp_path, capsys, name):
    bp, dep = _files(tmp_path, name)
    code = new_stack(tmp_path, name, "--from-gcluster", str(bp), "--gcluster-deployment", str(dep), *BLUEPRINTS[name][2])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Verdict: OK" in out and "Cluster Toolkit settings translated:" in out
    (group,) = written(tmp_path, name)["pathways:slices"]
    deployment = BLUEPRINTS[name][1]
    assert group["tpu"]["topology"] == deployment["tpu_topology"] and group.get("count", 1) == deployment["num_slices"]


def test_a_v6e_blueprint_translates_to_the_keys_it_means(tmp_path, capsys):
    bp, dep = _files(tmp_path, "v6e-reserved")
    assert new_stack(tmp_path, "--from-gcluster", str(bp), "--gcluster-deployment", str(dep)) == 0
    out = capsys.readouterr().out
    cfg = written(tmp_path, "gke-tpu")  # the stack is named after deployment_name, as gke-cluster names the cluster
    assert cfg["gcp:project"] == "team-ml-123" and cfg["gcp:zone"] == "us-east5-b" and cfg["gcp:region"] == "us-east5"
    assert cfg["pathways:slices"] == [{"name": "gke-tpu-v6e-pool", "tpu": {"family": "v6e", "topology": "4x4"}, "count": 2,
                                       "reservation": "v6e-reservation"}]
    assert cfg["pathways:cluster"] == {"name": "gke-tpu", "releaseChannel": "REGULAR", "minMasterVersion": "1.35",
                                       "masterAuthorizedNetworks": [{"cidrBlock": "10.0.0.0/8", "displayName": "kubectl-access-network"}],
                                       "systemPool": {"machineType": "n2-standard-8"}}
    # the blueprint's ranges where they differ from the stack's own defaults (NetworkConfig): pods is one already
    from components.model.cluster.cluster import NetworkConfig

    defaults = dict(NetworkConfig().named_ranges)
    assert defaults["podsCidr"] == "10.4.0.0/14" and defaults["servicesCidr"] != "10.0.32.0/20"
    assert cfg["pathways:network"] == {"nodesCidr": "192.168.0.0/18", "servicesCidr": "10.0.32.0/20"}
    for line in ("tpu-pool ct6e-standard-4t, topology 4x4 -> pathways:slices[0].tpu",
                 "tpu-pool.reservation_affinity v6e-reservation -> pathways:slices[0].reservation",
                 "node_sa: the bootstrap makes the node and workload identities with least privilege",
                 "cluster.enable_pathways_for_tpus: every stack has the Pathways head pool, n2-standard-64",
                 "net-1 (a second VPC, for the TPU VMs' extra NICs): not made here",
                 "cluster.namespace default: workloads run in the stack's namespace",
                 "tpu-pool.disk_type hyperdisk-balanced: the stack chooses the boot disk"):
        assert line in out, (line, out)


def test_a_tpu7x_topology_comes_from_its_workload_policy_and_flex_start_from_the_pool():
    blueprint, deployment, _ = BLUEPRINTS["tpu7x-queued"]
    t = translate(_write(blueprint), _write({"vars": deployment}), None)
    assert t.spec.tpu == {"family": "tpu7x", "topology": "2x2x2"} and t.spec.capacity == "flex-start"
    assert t.spec.group["queuedProvisioning"].value is True
    assert "policy: the TPU pool's workload policy (its topology is the slice group's)" in t.already


def _write(doc: Any) -> Path:
    import tempfile

    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write(yaml.safe_dump(doc))
    f.close()
    return Path(f.name)


@pytest.mark.parametrize("doc,message", [
    ({"vars": {}, "deployment_groups": []}, "no gke-node-pool module with a TPU machine type"),
    (_blueprint({**TPU7X_POOL}), "no TPU topology (placement_policy.tpu_topology, or a resource-policy's"),
    ([1, 2], "not a blueprint (a mapping with vars and deployment_groups)"),
])
def test_a_blueprint_that_cannot_be_translated_is_one_line(tmp_path, capsys, doc, message):
    bp = tmp_path / "bp.yaml"
    bp.write_text(yaml.safe_dump(doc))
    assert new_stack(tmp_path, "x", "--from-gcluster", str(bp), "--project", "team-ml-123", "--zone", "us-east5-b") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --from-gcluster: ") and message in err[0], err


def test_an_empty_deployment_placeholder_asks_for_the_flag(tmp_path, capsys):
    bp, dep = _files(tmp_path, "tpu7x")  # its deployment gives no project or zone, as Cluster Toolkit's leaves them empty
    assert new_stack(tmp_path, "--from-gcluster", str(bp), "--gcluster-deployment", str(dep)) == 2
    assert capsys.readouterr().err.strip() == ("error: new-stack: the blueprint (nor its deployment file) gives no --project, "
                                               "--zone: add --project --zone here")


SPEC = StackSpec(name="s", project="team-ml-123", zone="us-east5-b", tpu={"family": "v6e", "topology": "4x4"}, slices=2)


def test_a_pathways_job_line_is_a_declared_workload_and_every_flag_is_accounted_for():
    w, done, same, not_done = job(
        "./gcluster job submit --pathways --name llama --image us-docker.pkg.dev/p/r/maxtext:1 --command 'python3 train.py' "
        "--compute-type v6e-16 --num-slices 2 --topology 4x4 --restarts 3 --grace-period 2m --mount gs://data:/data "
        "--mount gs://ckpt:/ckpt:rw --pathways-gcs-location gs://b/tmp --priority medium --gke-ttl-after-finished 1h "
        "--pathways-server-image us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:latest", SPEC)
    assert w == {"name": "llama", "mode": "batch", "image": "us-docker.pkg.dev/p/r/maxtext:1", "command": ["/bin/sh", "-c", "python3 train.py"],
                 "slices": 2, "maxRestarts": 3, "terminationGracePeriodSeconds": 120,
                 "mounts": [{"path": "/data", "bucket": "data", "readOnly": True}, {"path": "/ckpt", "bucket": "ckpt", "readOnly": False}]}
    accounted = " ".join(done + same + not_done)
    for flag in ("--name", "--image", "--command", "--compute-type", "--num-slices", "--topology", "--restarts", "--grace-period",
                 "--mount gs://data", "--mount gs://ckpt", "--pathways-gcs-location", "--priority", "--gke-ttl-after-finished",
                 "--pathways-server-image"):
        assert flag in accounted, flag
    assert any("--priority medium: priorities here are training, interactive and experiment" in u for u in not_done)
    headless, *_ = job("gcluster job submit --pathways --pathways-headless --name nb", SPEC)
    assert headless == {"name": "nb", "mode": "interactive", "slices": 1, "maxRestarts": 1}  # gcluster's defaults, not the stack's
    shell, *_ = job("gcluster job submit --pathways --name s --image i:1 --command 'python3 t.py # a comment' "
                    "--grace-period 1m30s --mount gs://a:/a,gs://b:/b:rw", SPEC)
    assert shell["command"] == ["/bin/sh", "-c", "python3 t.py # a comment"] and shell["terminationGracePeriodSeconds"] == 90
    assert [m["bucket"] for m in shell["mounts"]] == ["a", "b"]


@pytest.mark.parametrize("line,message", [
    ("gcluster job submit --name x --image i:1", "no --pathways: a job that runs JAX on the TPU hosts directly"),
    ("gcluster job submit --pathways --image i:1", "no --name"),
    ("gcluster job submit --pathways --name x --no-such-flag", "'--no-such-flag' is not a gcluster job submit flag"),
    ("xpk workload create --workload x", "not a 'gcluster job submit ...' line"),
])
def test_a_job_line_that_cannot_be_a_workload_is_refused_in_one_line(line, message):
    from components.model.errors import ConfigError

    with pytest.raises(ConfigError) as e:
        job(line, SPEC)
    assert message in str(e.value) and str(e.value).startswith("--gcluster-job: ")


def test_job_lines_join_the_stack_and_it_plans_ok(tmp_path, capsys):
    bp, dep = _files(tmp_path, "v6e-reserved")
    code = new_stack(tmp_path, "--from-gcluster", str(bp), "--gcluster-deployment", str(dep), "--gcluster-job",
                     "gcluster job submit --pathways --name train --image us-docker.pkg.dev/team-ml-123/r/t:1 --command 'python3 t.py' "
                     "--num-slices 2", "--gcluster-job", "gcluster job submit --pathways --pathways-headless --name nb")
    out = capsys.readouterr().out
    assert code == 0 and "Verdict: OK" in out, out
    assert [w["name"] for w in written(tmp_path, "gke-tpu")["pathways:workloads"]] == ["train", "nb"]
    assert new_stack(tmp_path, "y", "--gcluster-job", "gcluster job submit --pathways --name x", "--project", "team-ml-123",
                     "--zone", "us-east5-b", "--tpu", "v6e-16") == 2
    assert "--gcluster-deployment and --gcluster-job go with --from-gcluster BLUEPRINT" in capsys.readouterr().err


def test_a_blueprints_text_cannot_write_keys_of_its_own(tmp_path, capsys):
    # security #73.5's class: a module id reaches a comment of the written file; a newline in it must not start YAML
    blueprint, deployment, _ = BLUEPRINTS["v6e-reserved"]
    evil = yaml.safe_load(yaml.safe_dump(blueprint))
    evil["deployment_groups"][0]["modules"][0]["id"] = "net-0\nsecretsprovider: passphrase\nencryptionsalt: x"
    bp, dep = tmp_path / "bp.yaml", tmp_path / "dep.yaml"
    bp.write_text(yaml.safe_dump(evil))
    dep.write_text(yaml.safe_dump({"vars": {**deployment, "tpu_topology": "4x4"}}))
    assert new_stack(tmp_path, "--from-gcluster", str(bp), "--gcluster-deployment", str(dep)) == 0
    written = yaml.safe_load((tmp_path / "stacks" / "Pulumi.gke-tpu.yaml").read_text())
    assert set(written) == {"config"}, set(written)
    capsys.readouterr()


@pytest.mark.parametrize("damage", ["vars", "settings", "placement", "affinity", "use", "groups"])
def test_a_blueprint_of_another_shape_is_one_line_never_a_traceback(tmp_path, capsys, damage):
    doc = yaml.safe_load(yaml.safe_dump(BLUEPRINTS["v6e-reserved"][0]))
    modules = doc["deployment_groups"][0]["modules"]
    pool = next(m for m in modules if m["id"] == "tpu-pool")
    if damage == "vars":
        doc["vars"] = ["not", "a", "mapping"]
    elif damage == "settings":
        modules[0]["settings"] = ["a", "list"]
    elif damage == "placement":
        pool["settings"]["placement_policy"] = "COMPACT"
    elif damage == "affinity":
        pool["settings"]["reservation_affinity"] = ["x"]
    elif damage == "use":
        pool["use"] = "cluster"
    else:
        doc["deployment_groups"] = {"group": "primary"}
    bp = tmp_path / "bp.yaml"
    bp.write_text(yaml.safe_dump(doc))
    code = new_stack(tmp_path, "x", "--from-gcluster", str(bp), "--project", "team-ml-123", "--zone", "us-east5-b", "--dry-run")
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and code in (0, 2), (code, err)
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
