"""The error contract: every invalid config fails before any resource, one line per problem naming
the key, the bad value and what is valid; the offline tools exit 2 without a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from components.model.config import load
from components.model.errors import ConfigError
from infra.errors import InvalidStackConfig
from infra.offline import engine
from infra.offline.__main__ import main as offline_main
from infra.offline.stackfile import flatten, raw_values
from tests.conftest import BASE_CONFIG, config_with, example_path, write_stack_file

WORKLOAD = {"name": "train", "image": "example.com/trainer:1", "sliceGroup": "main"}

# (case id, config changes, expected key, text the message must contain)
INVALID = [
    # issue #27: inputs that planned although GKE, Kubernetes or a controller would refuse them
    ("subnetwork in another region", dict(network={"existingNetwork": "shared", "existingSubnetwork": "projects/host-proj-1/regions/us-central1/subnetworks/tpu"}),
     "pathways:network.existingSubnetwork", "is in region us-central1, but the stack's nodes live in gcp:region us-east5"),
    ("JobSet without spec.coordinator", dict(kubernetes={"jobsetVersion": "0.5.2"}),
     "pathways:kubernetes.jobsetVersion", "0.5.2 is older than 0.6.0, the first release with the spec.coordinator field"),
    ("Kueue without v1beta2", dict(kubernetes={"kueue": {"version": "0.14.3"}}),
     "pathways:kubernetes.kueue.version", "0.14.3 is older than 0.15.0, the first release with the kueue.x-k8s.io/v1beta2 API"),
    ("system namespace", dict(kubernetes={"namespace": "kube-system"}),
     "pathways:kubernetes.namespace", "'kube-system' is a system or controller namespace"),
    ("default namespace", dict(kubernetes={"namespace": "default"}),
     "pathways:kubernetes.namespace", "'default' is a system or controller namespace"),
    ("GKE namespace", dict(kubernetes={"namespace": "gke-managed-x"}),
     "pathways:kubernetes.namespace", "'gke-managed-x' is a system or controller namespace"),
    ("shared subdomain", dict(workloads=[{**WORKLOAD, "name": "a", "subdomain": "pw"}, {**WORKLOAD, "name": "b", "subdomain": "pw"}],
                              pathwaysVersion="jax-0.9.0", headPool={"nodeCount": 2}),
     "pathways:workloads[1].subdomain", "'pw' is workloads[0]'s subdomain too"),
    ("subdomain equal to another's name", dict(workloads=[{**WORKLOAD, "name": "a"}, {**WORKLOAD, "name": "b", "subdomain": "a"}],
                                               pathwaysVersion="jax-0.9.0", headPool={"nodeCount": 2}),
     "pathways:workloads[1].subdomain", "'a' is workloads[0]'s subdomain too"),
    ("env on an interactive workload", dict(workloads=[{"name": "nb", "mode": "interactive", "env": {"A": "1"}}], pathwaysVersion="jax-0.9.0"),
     "pathways:workloads[0].env", "interactive workloads run no user container, so env would reach nothing"),
    ("public endpoint for everyone", dict(cluster={"publicEndpoint": True}),
     "pathways:cluster.publicEndpoint", "true with no masterAuthorizedNetworks opens the control plane's IP endpoint to the whole internet"),
    ("public range on the private endpoint", dict(cluster={"masterAuthorizedNetworks": [{"cidrBlock": "8.8.8.0/24"}]}),
     "pathways:cluster.masterAuthorizedNetworks", "8.8.8.0/24 is not an internal range, and with publicEndpoint false"),
    ("unknown TPU family", dict(slices=[{"name": "main", "tpu": "v9-16"}]),
     "pathways:slices[0].tpu", "unknown TPU family 'v9'; valid: v4, v5e, v5p, v6e, tpu7x"),
    ("unknown TPU name", dict(slices=[{"name": "main", "tpu": "v6e-12"}]),
     "pathways:slices[0].tpu", "v6e-12 is not a v6e slice size; valid: v6e-1, v6e-4"),
    ("invalid topology", dict(slices=[{"name": "main", "tpu": {"family": "v6e", "topology": "4x5"}}]),
     "pathways:slices[0].tpu", "topology 4x5 is not a v6e topology; valid: 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16"),
    ("zero slices", dict(slices=[{"name": "main", "tpu": "v6e-16", "count": 0}]),
     "pathways:slices[0].count", "0 is not valid: input should be greater than or equal to 1"),
    ("negative workload slices", dict(workloads=[{**WORKLOAD, "slices": -1}], pathwaysVersion="jax-0.9.0"),
     "pathways:workloads[0].slices", "-1 is not valid"),
    ("missing slice group", dict(workloads=[{**WORKLOAD, "sliceGroup": "big"}], pathwaysVersion="jax-0.9.0"),
     "pathways:workloads[0].sliceGroup", "'big' is not a slice group; valid: main"),
    ("more slices than the group", dict(workloads=[{**WORKLOAD, "slices": 3}], pathwaysVersion="jax-0.9.0"),
     "pathways:workloads[0].slices", "3 exceeds the 2 slice(s) of group 'main'"),
    ("zone outside region", dict(gcp_zone="us-central1-a"),
     "gcp:zone", "us-central1-a is not in region us-east5"),
    ("duplicate workload", dict(workloads=[WORKLOAD, WORKLOAD], pathwaysVersion="jax-0.9.0"),
     "pathways:workloads[1].name", "'train' is already used by workloads[0]"),
    ("spot with reservation", dict(slices=[{"name": "main", "tpu": "v6e-16", "spot": True, "reservation": "r1"}]),
     "pathways:slices[0]", "conflicting capacity options spot and reservation"),
    ("flex-start with reservation", dict(slices=[{"name": "main", "tpu": "v6e-16", "flexStart": True, "reservation": "r1"}]),
     "pathways:slices[0]", "conflicting capacity options flexStart and reservation"),
    ("head machine too small", dict(headPool={"machineType": "n2-standard-32"}),
     "pathways:headPool.machineType", "cannot hold the head pod of a default batch workload (48 vCPU, 232.0 GiB"),
    ("GKE version below the TPU minimum", dict(cluster={"minMasterVersion": "1.30.5-gke.100"}),
     "pathways:cluster.minMasterVersion", "1.30.5-gke.100 is below what the stack needs (v6e needs 1.31.1-gke.1146000)"),
    # A full version compares all four parts (the patch too); a minor compares as a minor.
    ("GKE version one patch below the v6e floor", dict(cluster={"minMasterVersion": "1.31.0-gke.2000000"}),
     "pathways:cluster.minMasterVersion", "1.31.0-gke.2000000 is below what the stack needs (v6e needs 1.31.1-gke.1146000)"),
    ("GKE minor below the tpu7x floor", dict(slices=[{"name": "main", "tpu": "tpu7x-128"}], cluster={"minMasterVersion": "1.33"}),
     "pathways:cluster.minMasterVersion", "1.33 is below what the stack needs (tpu7x needs 1.34.0-gke.2201000)"),
    ("GKE version not a version", dict(cluster={"minMasterVersion": "latest"}),
     "pathways:cluster.minMasterVersion", "'latest' is not a GKE version; use e.g. 1.32 or 1.32.2-gke.1182000"),
    ("head pool smaller than the workloads", dict(
        headPool={"nodeCount": 1}, pathwaysVersion="jax-0.9.0",
        workloads=[WORKLOAD, {"name": "notebook", "mode": "interactive", "sliceGroup": "main"}]),
     "pathways:headPool.nodeCount", "1 node(s) cannot hold the head pods of 2 workloads (one head pod per node); use at least 2"),
    ("invalid bucket name", dict(bucket={"name": "My_Bucket"}),
     "pathways:bucket.name", "'My_Bucket' is not a valid bucket name"),
    ("misspelt key", dict(slice=[]),
     "pathways:slice", "unknown key; valid keys: protected, cluster, network, headPool, slices"),
    ("nested key set without --path", {"headPool.machineType": "n2-standard-80"},
     "pathways:headPool.machineType", "use `pulumi config set --path 'pathways:headPool.machineType' <value>`"),
    ("missing project", dict(gcp_project=None),
     "gcp:project", "required but not set"),
    ("no slice groups", dict(slices=[]),
     "pathways:slices", "[] is not valid"),
    ("version not jax-<v>", dict(pathwaysVersion="latest"),
     "pathways:pathwaysVersion", "'latest' is not a Pathways release tag; use jax-<version>"),
    ("workloads without version", dict(workloads=[WORKLOAD]),
     "pathways:pathwaysVersion", "required when workloads are set"),
    ("batch without image", dict(workloads=[{"name": "x"}], pathwaysVersion="jax-0.9.0"),
     "pathways:workloads[0].image", "required for a batch workload"),
    ("protected but deletion protection off", dict(protected=True, cluster={"deletionProtection": False}),
     "pathways:cluster.deletionProtection", "false conflicts with protected: true"),
    ("derived bucket name invalid", dict(gcp_project="google-proj-1"),
     "pathways:bucket.name", "derived 'google-proj-1-test-pathways' is not a valid bucket name"),
    ("derived service account too short", dict(cluster={"name": "a"}),
     "pathways:cluster.name", "the node service account ID 'a-sys' derived from it"),
    ("reserved env", dict(workloads=[{**WORKLOAD, "env": {"JAX_PLATFORMS": "cpu"}}], pathwaysVersion="jax-0.9.0"),
     "pathways:workloads[0].env", "JAX_PLATFORMS is set by the stack"),
    # the stack sets these from dataLoaderWorkers and persistence: a user's copy would duplicate or bypass them
    ("reserved env: data loader workers", dict(workloads=[{**WORKLOAD, "env": {"DATA_LOADER_WORKERS": "64"}}], pathwaysVersion="jax-0.9.0"),
     "pathways:workloads[0].env", "DATA_LOADER_WORKERS is set by the stack"),
    ("reserved env: persistence", dict(workloads=[{**WORKLOAD, "env": {"ENABLE_PATHWAYS_PERSISTENCE": "1"}}], pathwaysVersion="jax-0.9.0"),
     "pathways:workloads[0].env", "ENABLE_PATHWAYS_PERSISTENCE is set by the stack"),
    # a suspended workload before it does not end the check: the running one after it is still judged
    ("no restarts beside a spare, after a suspended workload",
     dict(slices=[{"name": "main", "tpu": "v6e-16", "count": 2, "spares": 1}], pathwaysVersion="jax-0.9.0",
          workloads=[{**WORKLOAD, "name": "a", "state": "suspended"}, {**WORKLOAD, "name": "b", "maxRestarts": 0}]),
     "pathways:workloads[1].maxRestarts", "a failure ends the run instead of restarting it onto a spare"),
    ("bad quantity", dict(workloads=[{**WORKLOAD, "memory": "lots"}], pathwaysVersion="jax-0.9.0"),
     "pathways:workloads[0].memory", "'lots' is not a Kubernetes quantity"),
]


def _raw(config: dict) -> dict:
    """Flat Pulumi config -> the loader's raw mapping, as infra.config builds it."""
    import json

    flat, _ = flatten(config)
    return {k.split(":", 1)[1]: (json.loads(v) if v[:1] in "[{" else v) for k, v in flat.items()}


@pytest.mark.parametrize("case,changes,key,text", INVALID, ids=[c[0] for c in INVALID])
def test_model_names_key_value_and_valid_choices(case, changes, key, text):
    with pytest.raises(ConfigError) as err:
        load(_raw(config_with(**changes)), stack="test")
    lines = str(err.value).splitlines()
    assert any(line.startswith(f"{key}: ") and text in line for line in lines), lines


@pytest.mark.parametrize("case,changes,key,text", INVALID[:12], ids=[c[0] for c in INVALID[:12]])
def test_offline_plan_exits_2_with_one_line_per_problem(tmp_path, capsys, case, changes, key, text):
    path = write_stack_file(tmp_path, config_with(**changes))
    assert offline_main(["plan", "--config", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"error: {key}: " in err and text in err
    assert "Traceback" not in err


def test_the_program_raises_a_clean_pulumi_error_before_any_resource():
    flat, _ = flatten(config_with(gcp_zone="us-central1-a"))
    with pytest.raises(InvalidStackConfig) as err:
        engine.run(flat, "test")
    # RunError is what the Python language host prints as a plain error, without a traceback.
    import pulumi

    assert isinstance(err.value, pulumi.RunError)
    assert str(err.value).startswith("gcp:zone: us-central1-a is not in region us-east5")


def test_several_problems_are_all_reported():
    with pytest.raises(ConfigError) as err:
        load(_raw(config_with(workloads=[WORKLOAD, WORKLOAD, {"name": "y", "sliceGroup": "nope", "image": "example.com/y:1"}])), "test")
    keys = [p.key for p in err.value.problems]
    assert keys == ["pathways:workloads[1].name", "pathways:workloads[2].sliceGroup", "pathways:pathwaysVersion"]


def test_cli_exit_code_and_no_traceback_in_a_real_process(tmp_path):
    path = write_stack_file(tmp_path, config_with(slices=[{"name": "main", "tpu": "v6e-16", "count": -2}]))
    proc = subprocess.run(
        [sys.executable, "-m", "infra.offline", "plan", "--config", str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: pathways:slices[0].count: -2 is not valid: input should be greater than or equal to 1"
    ]


def test_unreadable_stack_files_exit_2(tmp_path, capsys):
    assert offline_main(["plan", "--stack", "no-such-stack"]) == 2
    assert "no such stack file" in capsys.readouterr().err
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text("config: [1, 2")
    assert offline_main(["plan", "--config", str(bad)]) == 2
    assert "not valid YAML" in capsys.readouterr().err


def test_stack_names_are_slugged_for_gcp_names():
    cfg = load(_raw(BASE_CONFIG), stack="Team_A.dev")
    assert cfg.cluster_name == "pathways-team-a-dev"
    assert cfg.bucket_name == "test-proj-123-team-a-dev-pathways"


def test_defaults_make_a_small_stack_a_few_lines():
    cfg = load(_raw(BASE_CONFIG), stack="dev")
    assert cfg.cluster_name == "pathways-dev"
    assert cfg.head_pool.machine_type == "n2-standard-64" and cfg.head_nodes == 1
    assert cfg.cache_location == "gs://test-proj-123-dev-pathways/pathways-cache"
    assert cfg.deletion_protection is True and cfg.protected is False
    assert cfg.slices[0].capacity.value == "on-demand"


# --- workload rules of the Kubernetes layer ---------------------------------------------------

WORKLOAD_INVALID = [
    ("name too long", {"name": "a-workload-name-of-30-chars-xx"},
     "pathways:workloads[0].name", "would be 79 characters, over Kubernetes' 63 for a label value (JobSet rejects it); use a name of at most 22 characters, or set workloads[0].subdomain to at most 14 characters"),
    ("subdomain too long", {"name": "a-workload-name-of-30-chars-xx", "subdomain": "also-quite-a-long-subdomain"},
     "pathways:workloads[0].subdomain", "over Kubernetes' 63"),
    ("slices exceed the group", {"slices": 5},
     "pathways:workloads[0].slices", "5 exceeds the 2 slice(s) of group 'main'"),
    ("XLA flag without --xla_", {"xlaFlags": ["--tpu_fast=true"]},
     "pathways:workloads[0].xlaFlags", "'--tpu_fast=true' is not an XLA flag; each entry must look like --xla_<name>=<value>"),
    # #76.3: the proxy takes the last of two equal flags, silently
    ("XLA flag twice", {"xlaFlags": ["--xla_a=1", "--xla_a=2"]},
     "pathways:workloads[0].xlaFlags[1]", "--xla_a is given twice (also xlaFlags[0]); the proxy would take the last silently"),
    ("XLA flag a typed key sets", {"hloDump": True, "xlaFlags": ["--xla_dump_to=/tmp/x"]},
     "pathways:workloads[0].xlaFlags[0]", "--xla_dump_to is set by the stack from hloDump: true; remove one of them"),
    ("data loader over the CPU limit", {"dataLoaderWorkers": 32, "cpu": "16"},
     "pathways:workloads[0].dataLoaderWorkers", "32 exceeds the user container's CPU limit of 16; use at most 16"),
    ("sidecar JAX differs", {"colocatedPython": {"image": "example.com/sidecar:20261101-python_3.12-jax_0.6.0"}},
     "pathways:workloads[0].colocatedPython.image", "built for JAX 0.6.0 but pathwaysVersion is jax-0.9.0; use a sidecar tag ending in -jax_0.9.0"),
    ("latest image", {"image": "example.com/trainer:latest"},
     "pathways:workloads[0].image", "is not pinned"),
    ("untagged image", {"image": "example.com/trainer"},
     "pathways:workloads[0].image", "is not pinned"),
    ("shm over memory", {"shmSize": "200Gi"},
     "pathways:workloads[0].shmSize", "exceeds the user container's memory limit"),
]


@pytest.mark.parametrize("case,changes,key,text", WORKLOAD_INVALID, ids=[c[0] for c in WORKLOAD_INVALID])
def test_workload_rules(case, changes, key, text):
    w = {**WORKLOAD, **changes}
    with pytest.raises(ConfigError) as err:
        load(_raw(config_with(workloads=[w], pathwaysVersion="jax-0.9.0")), stack="test")
    lines = str(err.value).splitlines()
    assert any(line.startswith(f"{key}: ") and text in line for line in lines), lines


def test_unusable_paths_are_one_line_errors(tmp_path, capsys):
    assert offline_main(["plan", "--config", str(tmp_path)]) == 2  # a directory, not a stack file
    assert "not a regular file" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert offline_main(["render", "--config", str(example_path("dev")), "--out", str(blocker / "out")]) == 2
    err = capsys.readouterr().err
    assert "cannot write there" in err and "Traceback" not in err


def test_what_gke_accepts_still_plans():
    from tests.conftest import plan_of

    # internal ranges on the private endpoint (RFC 1918, RFC 6598); public ones with the public endpoint
    for cluster in ({"masterAuthorizedNetworks": [{"cidrBlock": "10.200.0.0/16"}, {"cidrBlock": "100.64.0.0/16"}]},
                    {"publicEndpoint": True, "masterAuthorizedNetworks": [{"cidrBlock": "8.8.8.0/24"}]}):
        assert plan_of(config_with(cluster=cluster)).one("gcp:container/cluster:Cluster")
    # a shared reservation by its full path reaches the pools as written (GKE takes it that way)
    shared = "projects/host-proj-1/reservations/tpu-v6e"
    plan = plan_of(config_with(slices=[{"name": "main", "tpu": "v6e-16", "reservation": shared}]))
    pools = [p for p in plan.by_type("gcp:container/nodePool:NodePool") if p.input("name").startswith("tpu-")]
    assert {p.input("nodeConfig.reservationAffinity.values")[0] for p in pools} == {shared}
    # the subnetwork's region may be the stack's
    same = {"existingNetwork": "shared", "existingSubnetwork": "projects/host-proj-1/regions/us-east5/subnetworks/tpu"}
    assert plan_of(config_with(network=same)).by_type("gcp:container/cluster:Cluster")


def test_an_existing_cluster_takes_only_the_kubernetes_layer():
    from tests.conftest import plan_of

    existing = {"existing": {"kubeconfig": "build/kubeconfig"}}
    plan = plan_of(config_with(cluster=existing, bucket={"name": "team-pathways-cache"}, pathwaysVersion="jax-0.9.0",
                               workloads=[{"name": "nb", "mode": "interactive"}]), "ext")
    assert not [r for r in plan.resources if r.type.startswith("gcp:")]  # no GCP resource at all
    types = {r.type for r in plan.resources}
    assert {"kubernetes:jobset.x-k8s.io/v1alpha2:JobSet", "kubernetes:core/v1:Namespace", "kubernetes:helm.sh/v4:Chart",
            "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"} <= types
    (js,) = plan.by_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")
    assert "--gcs_scratch_location=gs://team-pathways-cache/pathways-cache" in js.input("spec.replicatedJobs")[0]["template"]["spec"]["template"]["spec"]["containers"][0]["args"]
    # controllers the cluster runs already are left alone
    plain = plan_of(config_with(cluster=existing, bucket={"name": "team-pathways-cache"}, kubernetes={"installControllers": False}), "ext")
    assert not plain.by_type("kubernetes:helm.sh/v4:Chart")
    assert plain.by_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")


@pytest.mark.parametrize("changes,key,text", [
    (dict(cluster={"existing": {"kubeconfig": "k"}, "releaseChannel": "STABLE"}, bucket={"name": "b-cache"}),
     "pathways:cluster.releaseChannel", "has no effect with cluster.existing"),
    (dict(cluster={"existing": {"kubeconfig": "k"}}, network={"mtu": 1500}, bucket={"name": "b-cache"}),
     "pathways:network.mtu", "has no effect with cluster.existing"),
    (dict(cluster={"existing": {"kubeconfig": "k"}}, monitoring={"restartStorm": 3}, bucket={"name": "b-cache"}),
     "pathways:monitoring.restartStorm", "has no effect with cluster.existing"),
    (dict(cluster={"existing": {"kubeconfig": "k"}}, protected=True, bucket={"name": "b-cache"}),
     "pathways:protected", "has no effect with cluster.existing"),
    (dict(cluster={"existing": {"kubeconfig": "k"}}),
     "pathways:bucket.name", "required with cluster.existing"),
])
def test_existing_cluster_errors(changes, key, text):
    flat, _ = flatten(config_with(**changes))
    with pytest.raises(ConfigError) as err:
        load(raw_values(flat), "test")
    assert any(line.startswith(f"{key}: ") and text in line for line in str(err.value).splitlines()), str(err.value)


# --- issue #36.5: existing-cluster mode refuses what only configures GCP; a kubeconfig is a path; namespaces ----

EXISTING = {"existing": {"kubeconfig": "k"}}
KUBECONFIG_TOKEN = "eyJhbGciOiJSUzI1NiJ9.PLAINTEXT-kube-token"


@pytest.mark.parametrize("changes,key", [
    (dict(headPool={"scaleToZero": True}), "pathways:headPool.scaleToZero"),
    (dict(slices=[{"name": "main", "tpu": "v6e-16", "autoUpgrade": True}]), "pathways:slices[0].autoUpgrade"),
    (dict(slices=[{"name": "main", "tpu": "v6e-16", "reservation": "r-1"}]), "pathways:slices[0].reservation"),
    (dict(slices=[{"name": "main", "tpu": "v6e-16"}, {"name": "b", "tpu": "v6e-16", "scaleToZero": True}]), "pathways:slices[1].scaleToZero"),
    (dict(bucket={"name": "b-cache", "softDeleteDays": 30}), "pathways:bucket.softDeleteDays"),
    (dict(bucket={"name": "b-cache", "artifactsTtlDays": 7}), "pathways:bucket.artifactsTtlDays"),
    (dict(pathwaysVersion="jax-0.9.0", workloads=[{"name": "sps", "mode": "service", "service": {"proxyMachineType": "n2-standard-32"}}]),
     "pathways:workloads[0].service.proxyMachineType"),
])
def test_finding_5_existing_cluster_mode_refuses_gcp_only_keys(changes, key):
    from components.model.cluster.cluster_checks import GCP_ONLY_KEYS

    config = config_with(cluster=EXISTING, **{"bucket": {"name": "b-cache"}, **changes})
    with pytest.raises(InvalidStackConfig) as err:  # the program, as `pulumi up` and the offline tools run it
        engine.run(flatten(config)[0], "test")
    lines = str(err.value).splitlines()
    assert lines == [f"{key}: has no effect with cluster.existing (the stack creates no GCP resource there); remove it"], lines
    assert key.removeprefix("pathways:").replace("[0]", "[]").replace("[1]", "[]") in GCP_ONLY_KEYS
    # the same keys without cluster.existing configure the GCP resources, and pass
    engine.run(flatten(config_with(**{k: v for k, v in changes.items() if k != "bucket"}))[0], "test")


def test_finding_5_gcp_only_keys_name_real_keys():
    # tools/cluster/deploy.py drops these when it turns a committed stack into its Kubernetes layer
    from components.model.cluster.cluster_checks import GCP_ONLY_KEYS, GCP_ONLY_SECTIONS
    from components.model.config import key_paths

    known = {k.removeprefix("pathways:").replace("[i]", "[]") for k in key_paths()}
    assert set(GCP_ONLY_KEYS) <= known
    assert all(any(k.startswith(f"pathways:{s}") for k in key_paths()) for s in GCP_ONLY_SECTIONS)


@pytest.mark.parametrize("kubeconfig", [
    f"apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: {KUBECONFIG_TOKEN}\n",
    '{"apiVersion": "v1", "users": [{"name": "u", "user": {"token": "' + KUBECONFIG_TOKEN + '"}}]}',
    {"apiVersion": "v1", "users": [{"name": "u", "user": {"token": KUBECONFIG_TOKEN}}]},  # pasted as YAML, a mapping
    f"token: {KUBECONFIG_TOKEN}",
])
def test_finding_5_a_kubeconfigs_contents_where_its_path_belongs_is_refused_unquoted(kubeconfig):
    config = config_with(cluster={"existing": {"kubeconfig": kubeconfig}}, bucket={"name": "b-cache"})
    with pytest.raises(InvalidStackConfig) as err:
        engine.run(flatten(config)[0], "test")
    text = str(err.value)
    assert text.splitlines() == [
        "pathways:cluster.existing.kubeconfig: is a kubeconfig's contents (with its credentials), not a path: give the path of the "
        "kubeconfig file, e.g. ~/.kube/config, and keep its contents out of the stack file"], text
    assert "PLAINTEXT-kube-token" not in text
    # nor when cluster.existing itself is the contents
    with pytest.raises(ConfigError) as err:
        load({**raw_values(flatten(config_with(bucket={"name": "b-cache"}))[0]), "cluster": {"existing": f"token: {KUBECONFIG_TOKEN}"}}, "test")
    assert "PLAINTEXT-kube-token" not in str(err.value) and str(err.value).startswith("pathways:cluster.existing: ")


@pytest.mark.parametrize("key,meant", [
    ("pathway:protected", "pathways:protected"),
    ("Pathways:protected", "pathways:protected"),
    ("pathwasy:protected", "pathways:protected"),
    ("gpc:region", "gcp:region"),
    ("kubernete:kubeconfig", "kubernetes:kubeconfig"),
])
def test_finding_5_a_misspelt_namespace_is_refused_naming_the_key_meant(tmp_path, key, meant):
    config = {**BASE_CONFIG, key: True}
    with pytest.raises(InvalidStackConfig) as err:  # what `pulumi up` runs, and the offline engine with it
        engine.run(flatten(config)[0], "test")
    lines = str(err.value).splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{key}: unknown namespace") and f"did you mean {meant}?" in lines[0], lines
    # the offline tools say the same, exit 2, no traceback
    path = write_stack_file(tmp_path, config)
    run = subprocess.run([sys.executable, "-m", "infra.offline", "plan", "--config", str(path)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and lines[0] in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_other_namespaces_pass_through():
    # another provider's or a team's own keys are not ours to judge
    engine.run(flatten({**BASE_CONFIG, "random:seed": "1", "team:owner": "ml-infra", "kubernetes:enableServerSideApply": "true"})[0], "test")
