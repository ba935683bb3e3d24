"""The bootstrap project (bootstrap/), planned offline by the same engine as the main stack: per project the
APIs, the state bucket, the GitHub Workload Identity pool; per main stack its preview and deploy identities
with exactly the roles components/model/cluster/identities.py derives from that stack's plan, usable only from the
stack's GitHub environments, and the Cloud KMS key its stack file names."""

from __future__ import annotations

import contextlib
import functools
import json
import re
from pathlib import Path

import pytest
import yaml

from bootstrap import main_stack, roles_table
from bootstrap import program as bootstrap
from components.model.cluster import identities
from components.model.config import load
from infra.offline import engine, stackfile
from tests.conftest import EXAMPLE_BOOTSTRAP, EXAMPLE_STACKS, config_with, every_stack, example_path, in_zone_of, stack_plan
from tests.test_workflows import ci_stacks

ROOT = Path(__file__).resolve().parents[1]
BOOTSTRAP = ROOT / "bootstrap"
BOOTSTRAP_STACKS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in BOOTSTRAP.glob("Pulumi.*.yaml"))
CI_STACKS = ci_stacks()  # the stacks the workflows deploy
SA = "gcp:serviceaccount/account:Account"
PROJECT_MEMBER, BUCKET_MEMBER, KEY_MEMBER = ("gcp:projects/iAMMember:IAMMember", "gcp:storage/bucketIAMMember:BucketIAMMember",
                                             "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember")
SA_MEMBER = "gcp:serviceaccount/iAMMember:IAMMember"


def bootstrap_config(stack: str) -> dict[str, str]:
    config, _ = stackfile.load_config(BOOTSTRAP / f"Pulumi.{stack}.yaml")
    return config


@functools.lru_cache(maxsize=None)
def bootstrap_plan(stack: str) -> engine.Plan:
    """The plan of bootstrap/Pulumi.<stack>.yaml, the team's file: for tests over every bootstrap stack only."""
    return engine.run(bootstrap_config(stack), stack, program_dir=BOOTSTRAP)


@contextlib.contextmanager
def example_stacks():
    """The bootstrap reads its main stacks from the example copies (tests/fixtures/examples/stacks)."""
    saved = main_stack.STACKS_DIR
    main_stack.STACKS_DIR = EXAMPLE_STACKS
    try:
        yield
    finally:
        main_stack.STACKS_DIR = saved


def example_bootstrap_config(project: str) -> dict[str, str]:
    config, _ = stackfile.load_config(EXAMPLE_BOOTSTRAP / f"Pulumi.{project}.yaml")
    return config


@functools.lru_cache(maxsize=None)
def example_bootstrap_plan(project: str) -> engine.Plan:
    """The bootstrap of an example project, as written (tests/fixtures/examples/bootstrap), over the example stacks."""
    with example_stacks():
        return engine.run(example_bootstrap_config(project), project, program_dir=BOOTSTRAP)


def main_stacks(stack: str) -> list[str]:
    return json.loads(bootstrap_config(stack)["pathways-bootstrap:stacks"])


def uses_kms(main: str) -> bool:
    doc = yaml.safe_load(stackfile.stack_path(main).read_text())
    return str(doc.get("secretsprovider", "")).startswith("gcpkms://")


def roles_of(plan: engine.Plan, email: str) -> dict[str, set[str]]:
    member = f"serviceAccount:{email}"
    return {t: {r.input("role") for r in plan.by_type(t) if r.input("member") == member}
            for t in (PROJECT_MEMBER, BUCKET_MEMBER, KEY_MEMBER, SA_MEMBER)}


def email(plan: engine.Plan, main: str, identity: str) -> str:
    project = plan.one(SA, f"{main}-{identity}").input("project")
    return f"pulumi-{main}-{identity}@{project}.iam.gserviceaccount.com"


@pytest.mark.every_stack
def test_every_ci_stack_has_a_bootstrap_stack_for_its_project():
    covered = {m: s for s in BOOTSTRAP_STACKS for m in main_stacks(s)}
    assert set(CI_STACKS) <= covered.keys()
    for main, stack in covered.items():
        assert bootstrap_config(stack)["gcp:project"] == stack_plan(main).one("gcp:container/cluster:Cluster").input("project")


@every_stack("stack", BOOTSTRAP_STACKS)
def test_the_apis_the_stacks_need_are_enabled_and_stay_enabled(stack):
    plan = bootstrap_plan(stack)
    services = {r.input("service"): r for r in plan.by_type("gcp:projects/service:Service")}
    expected = set()
    for main in main_stacks(stack):
        expected |= set(identities.required_apis({r.type for r in stack_plan(main).resources}, kms_key=uses_kms(main),
                                                 read_quota=main_stack.load_main_stack(main).config.read_quota))
    assert set(services) == expected
    assert {"container.googleapis.com", "compute.googleapis.com", "monitoring.googleapis.com", "iam.googleapis.com",
            "iamcredentials.googleapis.com", "sts.googleapis.com", "storage.googleapis.com"} <= set(services)
    assert ("cloudkms.googleapis.com" in services) == any(uses_kms(m) for m in main_stacks(stack))
    assert all(r.input("disableOnDestroy") is False for r in services.values())  # destroying the bootstrap never breaks a stack


@every_stack("stack", BOOTSTRAP_STACKS)
def test_the_state_bucket(stack):
    plan = bootstrap_plan(stack)
    bucket = plan.one("gcp:storage/bucket:Bucket", "state")
    project = bootstrap_config(stack)["gcp:project"]
    assert bucket.input("name") == f"{project}-pulumi-state"
    assert bucket.input("uniformBucketLevelAccess") is True and bucket.input("publicAccessPrevention") == "enforced"
    assert bucket.input("versioning.enabled") is True and bucket.input("forceDestroy") is False
    assert bucket.input("softDeletePolicy.retentionDurationSeconds") == 30 * 86400
    assert bucket.input("lifecycleRules.0.condition.withState") == "ARCHIVED"  # only old checkpoints expire
    assert bucket.options["protect"] is True
    region = yaml.safe_load(stackfile.stack_path(main_stacks(stack)[0]).read_text())["config"]["gcp:region"]
    assert bucket.input("location") == region  # by default where the (first) stack runs
    assert plan.outputs["stateBackend"] == f"gs://{project}-pulumi-state"


@every_stack("stack", BOOTSTRAP_STACKS)
def test_only_the_repositorys_workflows_get_tokens(stack):
    plan = bootstrap_plan(stack)
    cfg = bootstrap_config(stack)
    provider = plan.one("gcp:iam/workloadIdentityPoolProvider:WorkloadIdentityPoolProvider")
    pull_requests = ", ".join(f"'{m}-pull-request'" for m in main_stacks(stack) if takes_pull_requests(m))
    # issue #36.2: the repository and its owner by their immutable IDs (GitHub's repository_id and repository_owner_id
    # claims), and a run on main unless it runs in a pull-request preview environment
    # security #73.18: and only pulumi-stack.yml and verify.yml as committed on main, on push, schedule or a manual
    # run; a pull request's preview through pulumi-stack.yml, on pull_request events
    workflows = f"{cfg['pathways-bootstrap:repository']}/.github/workflows"
    assert provider.input("attributeCondition") == (
        f"assertion.repository_id == '{cfg['pathways-bootstrap:repositoryId']}' && "
        f"assertion.repository_owner_id == '{cfg['pathways-bootstrap:repositoryOwnerId']}' && "
        f"((assertion.ref == 'refs/heads/main' && assertion.event_name in ['push', 'schedule', 'workflow_dispatch'] && "
        f"assertion.job_workflow_ref in ['{workflows}/pulumi-stack.yml@refs/heads/main', '{workflows}/verify.yml@refs/heads/main']) || "
        f"(assertion.environment in [{pull_requests}] && assertion.event_name == 'pull_request' && "
        f"assertion.job_workflow_ref.startsWith('{workflows}/pulumi-stack.yml@')))")
    assert "assertion.repository ==" not in provider.input("attributeCondition")  # never by name: names are re-registered
    assert provider.input("oidc.issuerUri") == "https://token.actions.githubusercontent.com"
    assert provider.input("attributeMapping") == {
        "google.subject": "assertion.sub", "attribute.repository_id": "assertion.repository_id",
        "attribute.repository_owner_id": "assertion.repository_owner_id", "attribute.ref": "assertion.ref",
        "attribute.environment": "assertion.environment"}
    assert plan.one("gcp:iam/workloadIdentityPool:WorkloadIdentityPool").input("workloadIdentityPoolId") == "github"


def takes_pull_requests(main: str) -> bool:
    """From the main stack's own file (the team's, as the bootstrap reads it): neither protected nor a fleet manager."""
    config = yaml.safe_load(stackfile.stack_path(main).read_text())["config"]
    return not (config.get("pathways:protected") is True or (config.get("pathways:fleet") or {}).get("role") == "manager")


def _token_accepted(condition: str, claims: dict) -> bool:
    """The pool's attribute condition as Google evaluates it on a token's claims (CEL; a missing claim is an error,
    which refuses the token)."""
    import celpy

    env = celpy.Environment()
    try:
        return bool(env.program(env.compile(condition)).evaluate({"assertion": celpy.json_to_cel(claims)}))
    except Exception:
        return False


WORKFLOWS = "example-org/pathways-gke/.github/workflows"  # GOOD's repository (below)
DEPLOY = {"event_name": "push", "job_workflow_ref": f"{WORKFLOWS}/pulumi-stack.yml@refs/heads/main"}
PR = {"event_name": "pull_request", "job_workflow_ref": f"{WORKFLOWS}/pulumi-stack.yml@refs/pull/7/merge"}


@pytest.mark.parametrize("claims,accepted", [
    ({"ref": "refs/heads/main", "environment": "prod", **DEPLOY}, True),  # the deploy workflow on main
    ({"ref": "refs/heads/main", "environment": "prod-preview", **DEPLOY}, True),
    ({"ref": "refs/heads/main", "environment": "prod-preview", "event_name": "schedule",
      "job_workflow_ref": f"{WORKFLOWS}/verify.yml@refs/heads/main"}, True),  # the daily verify
    # security #73.18: main, but another workflow (a new one, or one committed to main by a compromised merge of it) or
    # another event (a workflow_run or issue_comment trigger runs on main with attacker-chosen input)
    ({"ref": "refs/heads/main", "environment": "prod", "event_name": "push",
      "job_workflow_ref": f"{WORKFLOWS}/other.yml@refs/heads/main"}, False),
    ({"ref": "refs/heads/main", "environment": "prod", **{**DEPLOY, "event_name": "issue_comment"}}, False),
    ({"ref": "refs/heads/main", "environment": "prod", "event_name": "push"}, False),  # no job_workflow_ref: refused
    ({"ref": "refs/pull/7/merge", "environment": "prod", **PR}, False),  # a pull request's workflow switched to the deploy environment
    ({"ref": "refs/pull/7/merge", "environment": "prod-preview", **PR}, False),  # ... or to main's preview environment
    ({"ref": "refs/heads/feature", "environment": "prod", **DEPLOY}, False),  # a branch push
    # security #58.15: prod is protected, its preview identity decrypts its secrets: no pull request reaches it
    ({"ref": "refs/pull/7/merge", "environment": "prod-pull-request", **PR}, False),
    ({"ref": "refs/pull/7/merge", **PR}, False),  # no environment at all
])
def test_finding_2_deploy_identities_are_mains_in_gcps_own_condition(claims, accepted):
    assert WORKFLOWS.startswith(GOOD["pathways-bootstrap:repository"] + "/")
    cfg = bootstrap.read_config({**GOOD})
    condition = bootstrap.pool_condition(cfg)
    ours = {"repository_id": GOOD["pathways-bootstrap:repositoryId"], "repository_owner_id": GOOD["pathways-bootstrap:repositoryOwnerId"]}
    assert _token_accepted(condition, {**ours, **claims}) == accepted
    # another repository of the same name (deleted and re-created, or transferred) has other IDs
    assert not _token_accepted(condition, {"repository_id": "999", "repository_owner_id": ours["repository_owner_id"], **claims})
    assert not _token_accepted(condition, {"repository_id": ours["repository_id"], "repository_owner_id": "999", **claims})


@every_stack("stack", BOOTSTRAP_STACKS)
def test_each_identity_is_usable_only_from_its_environment(stack):
    plan = bootstrap_plan(stack)
    cfg = bootstrap_config(stack)
    pool = f"projects/{cfg['pathways-bootstrap:projectNumber']}/locations/global/workloadIdentityPools/github"
    wif = [r for r in plan.by_type(SA_MEMBER) if r.input("role") == "roles/iam.workloadIdentityUser"]
    for main in main_stacks(stack):
        # security #58.3/#58.15: a protected stack's or a fleet manager's preview identity serves main's previews only
        pull_requests = [f"{main}-pull-request"] if takes_pull_requests(main) else []
        for identity, envs in (("deploy", [main]), ("preview", [f"{main}-preview", *pull_requests])):
            account = plan.one(SA, f"{main}-{identity}")
            bindings = [r for r in wif if r.input("serviceAccountId") == f"projects/{account.input('project')}/serviceAccounts/{email(plan, main, identity)}"]
            # one subject per environment: jobs of this repository running in it (its reviewers and branch rules)
            assert sorted(b.input("member") for b in bindings) == sorted(
                f"principal://iam.googleapis.com/{pool}/subject/repo:{cfg['pathways-bootstrap:repository']}:environment:{env}" for env in envs)
            for env in envs:
                assert plan.outputs["environments"][env] == {
                    "GCP_WORKLOAD_IDENTITY_PROVIDER": f"{pool}/providers/github",
                    "GCP_SERVICE_ACCOUNT": email(plan, main, identity),
                    "PULUMI_BACKEND_URL": plan.outputs["stateBackend"],
                }
    assert all(r.input("member").startswith("principal://") for r in wif)  # never a principalSet


@every_stack("stack", BOOTSTRAP_STACKS)
def test_the_identities_get_exactly_the_roles_of_their_stacks_plan(stack):
    plan = bootstrap_plan(stack)
    state_bucket = plan.one("gcp:storage/bucket:Bucket", "state").input("name")
    for main in main_stacks(stack):
        types = {r.type for r in stack_plan(main).resources}
        kms = uses_kms(main)
        stack_file = main_stack.load_main_stack(main)
        # a fleet manager also reads its workers' checkpoints (test_a_fleet_managers_identities_read_...)
        workers = bootstrap.fleet_worker_stacks(stack_file)
        readers = {g.role for _, g in identities.fleet_reader_grants([(w, uses_kms(w)) for w in workers], state_bucket, "pathways")}
        quota = stack_file.config.read_quota  # pathways:readQuota: both read the quota limits
        # the preview identity also runs the live preflight, with its custom role of exactly those reads
        preflight = stack_file.config.preflight_role_name
        # and the deploy identity creates the stack's buckets with a custom role of storage.buckets.create alone
        create = [stack_file.config.bucket_create_role_name] if identities.BUCKET_TYPE in types else []
        # both read the stack's own project's reservations live when a group does (readReservation: a protected
        # stack's default, #75.3), with a custom role of just those reads
        reservations = [stack_file.config.reservation_read_role_name] if stack_file.config.project in stack_file.reservation_reads else []
        wanted: list[tuple[identities.Identity, list[str]]] = [
            ("deploy", sorted({*identities.deploy_roles(types, kms_key=kms, read_quota=quota), *readers, *create, *reservations})),
            ("preview", sorted({*identities.preview_roles(types, kms_key=kms, read_quota=quota), *readers, preflight, *reservations}))]
        for identity, expected in wanted:
            got = roles_of(plan, email(plan, main, identity))
            assert sorted(set().union(*got.values())) == expected
            assert sorted(got[PROJECT_MEMBER]) == sorted({*identities.project_roles(identity, types), *([identities.QUOTA_ROLE] if quota else []),
                                                          *([preflight] if identity == "preview" else create), *reservations})  # project-wide: the table's
            assert got[BUCKET_MEMBER] == {identities.STATE_ROLES[identity]} | (readers & {identities.STATE_ROLES["preview"]})  # the state bucket only
            assert got[KEY_MEMBER] == ({identities.KMS_ROLES[identity]} if kms else set())  # on the stack's key only
            assert plan.outputs["roles"][main][identity] == expected
            mine = [r for r in plan.by_type(PROJECT_MEMBER) + plan.by_type(BUCKET_MEMBER)
                    if r.input("member") == f"serviceAccount:{email(plan, main, identity)}"]
            for r in mine:  # the storage roles on the stack's buckets, the state on its own objects, nothing else conditioned
                if r.input("role") in identities.BUCKET_CONDITIONED_ROLES:
                    assert r.input("condition.expression") == identities.stack_buckets_condition(stack_file.buckets).expression
                elif r.type == BUCKET_MEMBER:
                    assert r.input("bucket") == state_bucket
                    reads = [w for w in workers if r.name.endswith(f"-reads-{w}-storage.objectViewer")]
                    assert r.input("condition.expression") == (
                        identities.stack_state_read_condition(state_bucket, "pathways", reads[0]) if reads
                        else identities.stack_state_condition(state_bucket, "pathways", main)).expression
                else:
                    assert r.input("condition") is None, r.input("role")
        assert {"roles/monitoring.alertPolicyEditor", "roles/monitoring.dashboardEditor"} <= roles_of(plan, email(plan, main, "deploy"))[PROJECT_MEMBER]


@every_stack("stack", BOOTSTRAP_STACKS)
def test_finding_1_the_bootstrap_owns_the_node_accounts_and_deploy_may_only_act_as_them(stack):
    plan = bootstrap_plan(stack)
    for main in main_stacks(stack):
        outputs = stack_plan(main).outputs
        # the stack's two, and each isolation domain's own (teams[].isolationDomain)
        nodes = {**outputs["nodeServiceAccounts"], **{f"isolation {d}": v["nodeServiceAccount"]
                                                      for d, v in (outputs.get("isolationDomains") or {}).items()}}
        deploy = f"serviceAccount:{email(plan, main, 'deploy')}"
        for purpose, node_email in nodes.items():
            account_id, _, project = node_email.partition("@")
            (account,) = [a for a in plan.by_type(SA) if a.input("accountId") == account_id]
            assert project == f"{account.input('project')}.iam.gserviceaccount.com"  # the email the stack's pools run as
            node_roles = {r.input("role") for r in plan.by_type(PROJECT_MEMBER) if r.input("member") == f"serviceAccount:{node_email}"}
            assert node_roles == set(identities.NODE_ROLES), purpose  # to log, report metrics and pull images
            acts_as = [r for r in plan.by_type(SA_MEMBER) if r.input("member") == deploy]
            assert {r.input("serviceAccountId") for r in acts_as} == {
                f"projects/{account.input('project')}/serviceAccounts/{n}" for n in nodes.values()}
            assert {r.input("role") for r in acts_as} == {"roles/iam.serviceAccountUser"}
        # the deploy identity holds no project role that sets IAM policy or acts as other accounts
        held = roles_of(plan, email(plan, main, "deploy"))[PROJECT_MEMBER]
        assert not held & {"roles/iam.serviceAccountAdmin", "roles/iam.serviceAccountUser", "roles/resourcemanager.projectIamAdmin"}


@every_stack("stack", BOOTSTRAP_STACKS)
def test_finding_6_the_state_bucket_holds_the_backend_metadata_a_first_preview_needs(stack):
    # pulumi/pulumi pkg/backend/diy/meta.go: the CLI writes .pulumi/meta.yaml ({version: 1}) into an empty bucket on its
    # first command; the preview identity may not write, so the bootstrap does
    plan = bootstrap_plan(stack)
    obj = plan.one("gcp:storage/bucketObject:BucketObject", "state-meta")
    assert obj.input("name") == ".pulumi/meta.yaml" and obj.input("bucket") == plan.one("gcp:storage/bucket:Bucket", "state").input("name")
    assert obj.input("content") == stackfile.SECRET  # the provider's schema marks content secret; what the program writes:
    assert bootstrap.STATE_META == "version: 1\n" and yaml.safe_load(bootstrap.STATE_META) == {"version": 1}


@every_stack("stack", BOOTSTRAP_STACKS)
def test_a_kms_key_only_where_the_stack_file_uses_gcpkms(stack):
    plan = bootstrap_plan(stack)
    wanted = {}
    for main in main_stacks(stack):
        doc = yaml.safe_load(stackfile.stack_path(main).read_text())
        m = re.fullmatch(r"gcpkms://projects/[^/]+/locations/([^/]+)/keyRings/([^/]+)/cryptoKeys/([^/]+)", str(doc.get("secretsprovider", "")))
        if m:
            wanted[m.group(3)] = (m.group(1), m.group(2))
    keys = plan.by_type("gcp:kms/cryptoKey:CryptoKey")
    assert {k.input("name") for k in keys} == set(wanted)
    rings = plan.by_type("gcp:kms/keyRing:KeyRing")
    assert {(r.input("location"), r.input("name")) for r in rings} == set(wanted.values())
    assert all(r.options["protect"] for r in [*keys, *rings])  # Cloud KMS never deletes them; nor may `pulumi destroy` forget them
    assert all(k.input("rotationPeriod") == "7776000s" for k in keys)


def test_the_example_dev_uses_a_passphrase_and_staging_and_prod_their_own_key():
    kms = [str(yaml.safe_load((EXAMPLE_STACKS / f"Pulumi.{s}.yaml").read_text()).get("secretsprovider", "")).startswith("gcpkms://")
           for s in ("dev", "staging", "prod")]
    assert kms == [False, True, True]
    keys = example_bootstrap_plan("pathways-prod-123").by_type("gcp:kms/cryptoKey:CryptoKey")
    assert [k.input("name") for k in keys] == ["pulumi-prod"]


# --- the main stack's types, read from its stack file ---------------------------------------------

CLIENTS = [{"kind": "User", "name": "ada@example.com"}]
FEATURES = {
    "base": config_with(),
    "tpu7x workload policy": config_with(slices=[{"name": "g", "tpu": "tpu7x-128"}], **in_zone_of("tpu7x")),
    "existing network": config_with(network={"existingNetwork": "shared-vpc", "existingSubnetwork": "shared-subnet"}),
    "shared service": config_with(pathwaysVersion="jax-0.9.0", workloads=[
        {"name": "sps", "mode": "service", "service": {"maxClients": 3, "clients": CLIENTS}}]),
    "shared service, no clients yet": config_with(pathwaysVersion="jax-0.9.0", workloads=[{"name": "sps", "mode": "service"}]),
    "profiling": config_with(pathwaysVersion="jax-0.9.0", workloads=[
        {"name": "job", "mode": "batch", "image": "example.com/t:1", "profiling": {"port": 9100}}]),
    "no kueue, no controllers": config_with(pathwaysVersion="jax-0.9.0", kubernetes={"kueue": {"enabled": False}, "installControllers": False},
                                            workloads=[{"name": "nb", "mode": "interactive"}]),
    "existing cluster": config_with(cluster={"existing": {"kubeconfig": "build/kubeconfig"}}, bucket={"name": "b-cache"}),
    "existing cluster as it is, guards off": config_with(
        cluster={"existing": {"kubeconfig": "build/kubeconfig"}}, bucket={"name": "b-cache"},
        kubernetes={"installControllers": False, "kueue": {"clusterQueue": "cluster-queue"}, "guards": {"enabled": False}}),
    "serving": config_with(pathwaysVersion="jax-0.11.2", workloads=[
        {"name": "chat", "mode": "serve", "serve": {"model": "meta-llama/Llama-3.1-8B-Instruct"}}]),
    "multi-tier checkpointing": config_with(pathwaysVersion="jax-0.9.0", resilience={"mtc": {"inMemoryVolumeSize": "64Gi"}}, workloads=[
        {"name": "train", "image": "example.com/t:1", "colocatedPython": {"image": "example.com/sc:20261101-python_3.12-jax_0.9.0"}}]),
    "autoscaled serving": config_with(pathwaysVersion="jax-0.11.2", workloads=[
        {"name": "chat", "mode": "serve", "serve": {"model": "meta-llama/Llama-3.1-8B-Instruct", "autoscale": {"maxReplicas": 1, "target": 4}}}]),
}


def _predicted_and_planned(config: dict, secrets: tuple[str, ...] = ()) -> tuple[set[str], set[str]]:
    flat, found = stackfile.flatten(config)
    secrets = secrets or found
    cfg = load(stackfile.raw_values(flat), "test", frozenset(secrets))
    plan = engine.run(flat, "test", secrets)
    return set(main_stack.resource_types(cfg)), {r.type for r in plan.resources if not r.type.startswith(identities.COMPONENT_PREFIX)}


@every_stack("stack")
def test_the_bootstrap_reads_each_committed_stacks_types_as_the_plan_has_them(stack):
    main = main_stack.load_main_stack(stack)
    assert set(main.types) == {r.type for r in stack_plan(stack).resources if not r.type.startswith(identities.COMPONENT_PREFIX)}
    assert (main.kms_key is not None) == uses_kms(stack)


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_the_bootstrap_predicts_the_types_of_every_feature(feature):
    predicted, planned = _predicted_and_planned(FEATURES[feature])
    assert predicted == planned


def test_a_secret_env_value_in_the_stack_file_is_a_kubernetes_secret(tmp_path, monkeypatch):
    monkeypatch.setattr(main_stack, "STACKS_DIR", tmp_path)
    cfg = config_with(pathwaysVersion="jax-0.9.0", workloads=[{"name": "train", "image": "example.com/t:1",
                                                                "env": {"TOKEN": {"secure": "v1:abc"}, "RUN": "r1"}}])
    (tmp_path / "Pulumi.s.yaml").write_text(yaml.safe_dump({"config": cfg}))
    types = main_stack.load_main_stack("s").types
    assert "kubernetes:core/v1:Secret" in types
    flat, secrets = stackfile.load_config(tmp_path / "Pulumi.s.yaml")
    assert set(types) == {r.type for r in engine.run(flat, "s", secrets).resources if not r.type.startswith(identities.COMPONENT_PREFIX)}


# --- bad config: one line, naming the key ------------------------------------------------------

GOOD = {"gcp:project": "pathways-prod-123", "pathways-bootstrap:repository": "example-org/pathways-gke",
        "pathways-bootstrap:repositoryId": "812345678", "pathways-bootstrap:repositoryOwnerId": "91234567",
        "pathways-bootstrap:projectNumber": "123456789012", "pathways-bootstrap:stacks": '["prod"]'}


@pytest.mark.parametrize("change, key, says", [
    ({"pathways-bootstrap:repository": None}, "pathways-bootstrap:repository", "OWNER/NAME"),
    ({"pathways-bootstrap:repository": "https://github.com/example-org/x"}, "pathways-bootstrap:repository", "OWNER/NAME"),
    ({"pathways-bootstrap:projectNumber": "pathways-prod-123"}, "pathways-bootstrap:projectNumber", "gcloud projects describe"),
    ({"pathways-bootstrap:stacks": None}, "pathways-bootstrap:stacks", "list of names"),
    ({"pathways-bootstrap:stacks": "prod"}, "pathways-bootstrap:stacks", "list of names"),
    ({"pathways-bootstrap:stacks": '["qa"]'}, "pathways-bootstrap:stacks[0]", "no stack file stacks/Pulumi.qa.yaml"),
    ({"pathways-bootstrap:stacks": '["dev"]'}, "pathways-bootstrap:stacks[0]", "deploys to project 'pathways-dev-123'"),
    ({"pathways-bootstrap:stacks": '["prod", "prod"]'}, "pathways-bootstrap:stacks[1]", "listed twice"),
    ({"pathways-bootstrap:stateBucket": "Pulumi_State"}, "pathways-bootstrap:stateBucket", "not a valid bucket name"),
    ({"pathways-bootstrap:stateBuckt": "x"}, "pathways-bootstrap:stateBuckt", "unknown key"),
    ({"gcp:project": None}, "gcp:project", "missing"),
    ({"pathways-bootstrap:repositoryId": None}, "pathways-bootstrap:repositoryId", "numeric ID"),
    ({"pathways-bootstrap:repositoryOwnerId": "example-org"}, "pathways-bootstrap:repositoryOwnerId", "numeric ID"),
    # a long bad value is quoted to its first 40 characters only
    ({"pathways-bootstrap:repositoryId": "9" * 25 + "x" * 25}, "pathways-bootstrap:repositoryId", f"'{'9' * 25 + 'x' * 15}' is not a GitHub ID"),
    ({"pathways-bootstrap:stateBucketLocation": "us east5"}, "pathways-bootstrap:stateBucketLocation", "'us east5' is not a Cloud Storage location"),
])
def test_bad_config_fails_with_one_line_naming_the_key(change, key, says):
    config = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    with example_stacks(), pytest.raises(bootstrap.InvalidBootstrapConfig) as e:
        engine.run(config, "bad", program_dir=BOOTSTRAP)
    lines = str(e.value).splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{key}: ") and says in lines[0], lines


def test_a_long_stack_name_is_refused_before_google_refuses_its_service_account(tmp_path, monkeypatch):
    monkeypatch.setattr(main_stack, "STACKS_DIR", tmp_path)
    with pytest.raises(Exception) as e:
        bootstrap.read_config({**GOOD, "pathways-bootstrap:stacks": '["a-very-long-stack-name-here"]'})
    assert str(e.value).startswith("pathways-bootstrap:stacks[0]: 'a-very-long-stack-name-here': its service account ID")


def test_a_stack_whose_key_lives_in_another_project_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(main_stack, "STACKS_DIR", tmp_path)
    doc = yaml.safe_load(example_path("prod").read_text())
    doc["secretsprovider"] = doc["secretsprovider"].replace("projects/pathways-prod-123", "projects/other-project-1")
    (tmp_path / "Pulumi.prod.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(Exception) as e:
        bootstrap.read_config(GOOD)
    assert str(e.value) == ("pathways-bootstrap:stacks[0]: stack 'prod' encrypts its secrets with a key of project 'other-project-1', "
                            "not 'pathways-prod-123': point its secretsprovider at this project's key")


# --- bootstrap/README.md -----------------------------------------------------------------------


def test_the_readme_shows_the_role_tables_the_code_derives():
    readme = (BOOTSTRAP / "README.md").read_text()
    with example_stacks():  # the README's table is of the example CI stacks, which a team's edits never touch
        assert roles_table.stacks_table(roles_table.EXAMPLE_CI_STACKS) in readme
    assert roles_table.types_table() in readme


def test_the_readme_commands_name_a_bootstrap_stack_and_every_config_key():
    readme = (BOOTSTRAP / "README.md").read_text()
    (stack,) = re.findall(r"pulumi -C bootstrap stack select (\S+) --create", readme)
    assert (EXAMPLE_BOOTSTRAP / f"Pulumi.{stack}.yaml").is_file() and "pulumi -C bootstrap up" in readme
    assert all(f"`pathways-bootstrap:{k}`" in readme for k in bootstrap.KEYS)


def test_a_fleet_managers_identities_read_their_workers_state_and_nothing_else_of_it():
    # a stack reference reads the worker's checkpoint from the same backend (docs/fleet.md), and Pulumi decrypts its
    # secret `fleet` output with the worker's secrets provider: passphrase workers here, so no key grant
    plan = example_bootstrap_plan("pathways-fleet-123")
    for identity in ("deploy", "preview"):
        member = f"serviceAccount:{email(plan, 'fleet-manager', identity)}"
        reads = {r.name: r for r in plan.by_type(BUCKET_MEMBER) if r.input("member") == member and "-reads-" in r.name}
        assert set(reads) == {f"fleet-manager-{identity}-reads-{w}-storage.objectViewer" for w in ("fleet-east", "fleet-central")}
        for w in ("fleet-east", "fleet-central"):
            condition = reads[f"fleet-manager-{identity}-reads-{w}-storage.objectViewer"].input("condition")
            assert f"objects/.pulumi/stacks/pathways/{w}.json'" in condition["expression"]
            assert "history" not in condition["expression"] and "locks" not in condition["expression"]  # read its outputs, never write
        assert not [r for r in plan.by_type(KEY_MEMBER) if r.input("member") == member]
    # a worker's identities read no other stack's state
    worker = f"serviceAccount:{email(plan, 'fleet-east', 'deploy')}"
    assert not [r for r in plan.by_type(BUCKET_MEMBER) if r.input("member") == worker and "-reads-" in r.name]


def test_a_manager_whose_workers_this_bootstrap_does_not_set_up_is_refused():
    config = {**example_bootstrap_config("pathways-fleet-123"), "pathways-bootstrap:stacks": '["fleet-east", "fleet-manager"]'}
    with example_stacks(), pytest.raises(bootstrap.InvalidBootstrapConfig) as e:
        engine.run(config, "bad", program_dir=BOOTSTRAP)
    assert str(e.value).splitlines() == [
        "pathways-bootstrap:stacks: fleet-manager is a fleet manager reading worker stack(s) fleet-central, which this bootstrap "
        "does not set up: a stack reference reads its workers from the same state bucket, so list them here too"]


def test_the_reader_grants_take_a_kms_workers_key_too():
    from components.model.cluster.identities import fleet_reader_grants

    grants = fleet_reader_grants([("east", True), ("west", False)], "state-b", "pathways")
    assert [(w, g.role, g.scope) for w, g in grants] == [
        ("east", "roles/storage.objectViewer", "state bucket"), ("east", "roles/cloudkms.cryptoKeyDecrypter", "secrets key"),
        ("west", "roles/storage.objectViewer", "state bucket")]


def test_security_58_15_an_unprotected_stacks_pull_request_environment_still_gets_its_preview_token():
    with example_stacks():
        cfg = bootstrap.read_config({**GOOD, "gcp:project": "pathways-dev-123", "pathways-bootstrap:stacks": '["dev"]'})
    condition = bootstrap.pool_condition(cfg)
    ours = {"repository_id": GOOD["pathways-bootstrap:repositoryId"], "repository_owner_id": GOOD["pathways-bootstrap:repositoryOwnerId"]}
    assert _token_accepted(condition, {**ours, "ref": "refs/pull/7/merge", "environment": "dev-pull-request", **PR})
    assert not _token_accepted(condition, {**ours, "ref": "refs/pull/7/merge", "environment": "dev-preview", **PR})
    # security #73.18: the pull-request environment only from pulumi-stack.yml, on a pull_request event
    assert not _token_accepted(condition, {**ours, "ref": "refs/pull/7/merge", "environment": "dev-pull-request",
                                           "event_name": "pull_request_target", "job_workflow_ref": PR["job_workflow_ref"]})
    assert not _token_accepted(condition, {**ours, "ref": "refs/pull/7/merge", "environment": "dev-pull-request",
                                           "event_name": "pull_request", "job_workflow_ref": f"{WORKFLOWS}/mine.yml@refs/pull/7/merge"})


@every_stack("stack", BOOTSTRAP_STACKS)
def test_security_58_11_a_project_shared_by_stacks_says_each_deploy_identity_reaches_every_cluster(stack):
    """container.admin is granted per project (GKE authorizes Kubernetes objects by IAM, per project): a bootstrap
    setting up several stacks that make clusters says so in its outputs; one stack per project says nothing."""
    plan = bootstrap_plan(stack)
    made = [m for m in main_stacks(stack)
            if "existing" not in (yaml.safe_load(stackfile.stack_path(m).read_text())["config"].get("pathways:cluster") or {})]
    said = plan.outputs.get("sharedProjectClusterAdmin")
    if len(made) > 1:
        assert said is not None and said.startswith(f"stacks {', '.join(made)} share project") and "roles/container.admin" in said
    else:
        assert said is None


# --- live reservation reads (#58: "live reservation reads need compute.reservations.get and blocks") -------------


def test_a_stack_that_reads_its_reservations_live_gets_just_the_get_permissions(tmp_path, monkeypatch):
    monkeypatch.setattr(main_stack, "STACKS_DIR", tmp_path)
    doc = yaml.safe_load(example_path("prod").read_text())
    train, explore = doc["config"]["pathways:slices"]
    train.update(readReservation=True, reservation="pathways-prod-v5p/reservationBlocks/prod-block-1")
    explore.update(readReservation=True, reservation="projects/capacity-owner-1/reservations/shared-v5p")
    for g in (train, explore):
        g.pop("reservationRecord")
    (tmp_path / "Pulumi.prod.yaml").write_text(yaml.safe_dump(doc))
    plan = engine.run(GOOD, "pathways-prod-123", program_dir=BOOTSTRAP)
    role = plan.one("gcp:projects/iAMCustomRole:IAMCustomRole", "prod-reservation-read-role")
    # its own project's reservation and the block a group targets; nothing to list or change
    assert role.input("permissions") == ["compute.reservationBlocks.get", "compute.reservations.get"]
    assert role.input("roleId") == "pathwaysReservationRead_prod"
    for identity in ("preview", "deploy"):
        grant = plan.one(PROJECT_MEMBER, f"prod-{identity}-reservation-read")
        assert grant.input("member") == f"serviceAccount:{email(plan, 'prod', identity)}" and grant.input("condition") is None
        assert "projects/pathways-prod-123/roles/pathwaysReservationRead_prod" in plan.outputs["roles"]["prod"][identity]
    # a shared reservation's owner grants in its own project: said, not granted
    (said,) = plan.outputs["reservationReadsElsewhere"]["prod"]
    assert said.startswith("capacity-owner-1: compute.reservations.get for pulumi-prod-preview@pathways-prod-123")


def test_a_reservation_read_role_only_where_a_stack_reads_live():
    # prod is protected, so it reads its own reservation live by default (#75.3): its role has exactly those reads;
    # the unprotected stacks beside it read none and get none
    plan = example_bootstrap_plan("pathways-prod-123")
    (role,) = [r for r in plan.by_type("gcp:projects/iAMCustomRole:IAMCustomRole") if "reservation" in r.name]
    assert role.name == "prod-reservation-read-role" and role.input("permissions") == ["compute.reservations.get"]
    assert plan.outputs["reservationReadsElsewhere"] == {}
    for project in ("pathways-dev-123", "pathways-staging-123"):
        assert not [r for r in example_bootstrap_plan(project).by_type("gcp:projects/iAMCustomRole:IAMCustomRole") if "reservation" in r.name]


def test_a_sub_block_read_needs_the_sub_block_get():
    from components.model.capacity.reservations import parse_path, read_permissions

    paths = [parse_path("r/reservationBlocks/b/reservationSubBlocks/s", "p"), parse_path("r2", "p")]
    assert read_permissions(paths) == ("compute.reservationSubBlocks.get", "compute.reservations.get")
    assert read_permissions([]) == ()


@every_stack("stack", BOOTSTRAP_STACKS)
def test_security_73_1_no_predefined_storage_role_is_granted_project_wide(stack):
    # storage.editor (and admin, hmacKeyAdmin) hold storage.hmacKeys.*: project-wide, a non-expiring HMAC key for any
    # service account of the project. Buckets are created with a custom role of storage.buckets.create alone; every
    # predefined storage role is conditioned on the stack's buckets
    plan = bootstrap_plan(stack)
    for r in plan.by_type(PROJECT_MEMBER):
        if r.input("role").startswith("roles/storage."):
            assert r.input("condition.expression"), (r.name, r.input("role"))
    creators = [r for r in plan.by_type("gcp:projects/iAMCustomRole:IAMCustomRole") if r.input("roleId").startswith("pathwaysBucketCreate")]
    assert creators and all(r.input("permissions") == ["storage.buckets.create"] for r in creators)
    from infra.offline.policy_runner import run_policies
    from policies.rules import ALL_POLICIES

    assert [v for v in run_policies(plan, ALL_POLICIES, {}) if v.policy == "pathways-storage-iam-least-privilege"] == []
