"""The bootstrap program: what the main stacks of one Google Cloud project assume exists before their first
`pulumi up` (bootstrap/README.md). Per project: the APIs, the Pulumi state bucket (with the metadata object a
first `pulumi` command would otherwise write), the GitHub Workload Identity pool and provider, trusting the
repository by its immutable IDs; per main stack: its node service accounts and their project roles, its preview
and deploy service accounts with the roles components/model/cluster/identities.py derives from the stack's resource types,
usable only from the stack's GitHub environments (deploy and main-branch previews from refs/heads/main only), and
the Cloud KMS key its stack file encrypts secrets with.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import pulumi
import pulumi_gcp as gcp
from pulumi.runtime import config as runtime_config

from components.model.cluster import identities
from components.model.cluster.bucket import check_bucket_name
from components.model.cluster.bucket_grants import external_bucket_problems, parse_external_buckets
from components.model.common import PROJECT_NAMESPACE
from components.model.config import SCRATCH_PERMISSIONS
from components.model.errors import ConfigError, Problem
from components.model.workloads import metrics_adapter, resilience, storage

from .github_trust import (  # noqa: F401
    MAIN_BRANCH,
    MAIN_EVENTS,
    MAIN_WORKFLOWS,
    PREVIEW_WORKFLOW,
    environments,
    github_subject,
    pool_condition,
    pull_request_environment,
    takes_pull_request_previews,
)
from .main_stack import KmsKey, MainStack, MainStackError, load_main_stack

NAMESPACE = "pathways-bootstrap"
KEYS = ("repository", "repositoryId", "repositoryOwnerId", "projectNumber", "stacks", "stateBucket", "stateBucketLocation",
        "externalBuckets")
POOL, PROVIDER = "github", "github"
GITHUB_ISSUER = "https://token.actions.githubusercontent.com"
STATE_SOFT_DELETE_DAYS = 30
STATE_NONCURRENT_DAYS = 30  # older checkpoints than this are deleted (versioning keeps every `pulumi up`)
KEY_ROTATION = "7776000s"  # 90 days; Pulumi decrypts with any version of the key
# .pulumi/meta.yaml of a DIY backend, as the CLI writes it into an empty bucket (pulumi/pulumi pkg/backend/diy/meta.go:
# yaml.Marshal of {version: 1}, project-scoped stacks): written here so that a first `pulumi preview`, whose identity
# may only read the state, finds it rather than trying to write it.
STATE_META = "version: 1\n"
STATE_META_OBJECT = ".pulumi/meta.yaml"


@dataclass(frozen=True)
class BootstrapConfig:
    project: str
    project_number: str
    """Workload Identity principals name the project by number (gcloud projects describe <id>)."""
    repository: str
    repository_id: str
    """GitHub's numeric ID of the repository (never reused, unlike a name): the token's repository_id claim."""
    repository_owner_id: str
    """And of its owner (organization or user): repository_owner_id."""
    stacks: tuple[MainStack, ...]
    state_bucket: str
    state_location: str
    external_buckets: Mapping[str, Mapping[str, str]] = dataclasses.field(default_factory=dict)
    """externalBuckets: per stack, the buckets it does not make that its workloads may be granted on, and the most
    (read or write): components/model/cluster/bucket_grants.py"""


class InvalidBootstrapConfig(pulumi.RunError):
    """Bad bootstrap config: Pulumi prints the message (one line per problem) with no traceback."""

    def __init__(self, error: ConfigError):
        self.problems = error.problems
        super().__init__(str(error))


def _key(name: str) -> str:
    return f"{NAMESPACE}:{name}"


def state_bucket_name(values: Mapping[str, str]) -> str:
    """The state bucket the bootstrap makes: pathways-bootstrap:stateBucket, or <gcp:project>-pulumi-state."""
    return values.get(f"{NAMESPACE}:stateBucket") or f"{values.get('gcp:project') or ''}-pulumi-state"


def read_config(values: Mapping[str, str]) -> BootstrapConfig:
    """Flat config ({"ns:key": text}) -> BootstrapConfig, or ConfigError with one line per problem."""
    problems: list[Problem] = []
    ours = {k.partition(":")[2]: v for k, v in values.items() if k.partition(":")[0] == NAMESPACE}
    for name in sorted(set(ours) - set(KEYS)):
        problems.append(Problem(_key(name), f"unknown key; the bootstrap reads {', '.join(_key(k) for k in KEYS)}"))
    project = values.get("gcp:project") or ""
    if not project:
        problems.append(Problem("gcp:project", "missing: the project to bootstrap (pulumi config set gcp:project <project id>)"))
    repository = ours.get("repository", "")
    if not re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}", repository):
        problems.append(Problem(_key("repository"), f"{repository[:120]!r} is not a GitHub repository; give OWNER/NAME "
                                "(the repository whose workflows run the stacks)"))
    ids = {}
    for name, what in (("repositoryId", "repository"), ("repositoryOwnerId", "repository's owner")):
        ids[name] = ours.get(name, "")
        if not re.fullmatch(r"[1-9][0-9]{0,19}", ids[name]):
            problems.append(Problem(_key(name), f"{ids[name][:40]!r} is not a GitHub ID; give the {what}'s numeric ID "
                                    f"(gh api {'repos/OWNER/NAME --jq .id' if name == 'repositoryId' else 'repos/OWNER/NAME --jq .owner.id'}): "
                                    "a name can be re-registered by someone else, an ID is never reused"))
    number = ours.get("projectNumber", "")
    if not re.fullmatch(r"[1-9][0-9]{5,19}", number):
        problems.append(Problem(_key("projectNumber"), f"{number[:40]!r} is not a project number; give the number of gcp:project "
                                "(gcloud projects describe <project id> --format='value(projectNumber)')"))
    stacks = _stacks(ours.get("stacks"), project, problems)
    bucket = state_bucket_name(values)
    try:
        if project or "stateBucket" in ours:
            check_bucket_name(bucket)
    except ValueError as e:
        problems.append(Problem(_key("stateBucket"), str(e)))
    location = ours.get("stateBucketLocation") or (stacks[0].config.region if stacks else "")
    if stacks and not re.fullmatch(r"[A-Za-z0-9-]{2,40}", location):
        problems.append(Problem(_key("stateBucketLocation"), f"{location[:60]!r} is not a Cloud Storage location (e.g. us-east5, US)"))
    accounts: dict[str, str] = {}
    for s in stacks:
        for account in s.node_account_ids:
            if account in accounts:
                problems.append(Problem(_key("stacks"), (
                    f"stacks {accounts[account]!r} and {s.name!r} both run their nodes as {account!r} (their cluster names are "
                    "alike): give one of them another pathways:cluster.name")))
            accounts[account] = s.name
    external_key = _key("externalBuckets")
    raw_external = ours.get("externalBuckets")
    try:
        external_value = json.loads(raw_external) if isinstance(raw_external, str) else raw_external
    except json.JSONDecodeError:
        external_value = raw_external
    external, bad = parse_external_buckets(external_value, [s.name for s in stacks], external_key)
    problems += bad
    principals: dict[tuple[str, str], str] = {}
    for s in stacks:
        # the bootstrap grants what the stack mounts: only buckets the stack makes, or that this config allows it
        problems += external_bucket_problems(s.config, external.get(s.name, {}), f"this bootstrap ({external_key})")
        # Workload Identity's principal names the project, namespace and account, not the cluster: two stacks of
        # this project whose accounts share a name would share each other's bucket grants
        for ns, sa in dict.fromkeys((ns, sa) for _, _, ns, sa in s.bucket_grants):
            other = principals.setdefault((ns, sa), s.name)
            if other != s.name:
                problems.append(Problem(_key("stacks"), (
                    f"stacks {other!r} and {s.name!r} both grant buckets to Kubernetes service account {ns}/{sa}, one "
                    "principal in this project's Workload Identity pool: each would get the other's buckets; rename "
                    "the workload, or give one stack another kubernetes.namespace")))
    # Multi-tier checkpointing: GKE's checkpointing driver is one principal per project (its namespace and account are
    # fixed), so the bootstrap's grant on one stack's backups bucket reaches every MTC cluster of the project
    mtc = [s.name for s in stacks if s.mtc_backups_bucket]
    if len(mtc) > 1:
        problems.append(Problem(_key("stacks"), (
            f"stacks {', '.join(repr(n) for n in mtc)} all use multi-tier checkpointing (resilience.mtc): GKE's "
            "checkpointing driver is one principal in this project's Workload Identity pool, so each cluster's driver "
            "could read and write the other's backups; keep one such stack per project")))
    names = {s.name for s in stacks}
    for s in stacks:
        missing = [w for w in fleet_worker_stacks(s) if w not in names]
        if missing:
            problems.append(Problem(_key("stacks"), (
                f"{s.name} is a fleet manager reading worker stack(s) {', '.join(missing)}, which this bootstrap does not set "
                "up: a stack reference reads its workers from the same state bucket, so list them here too")))
    if problems:
        raise ConfigError(problems)
    return BootstrapConfig(project=project, project_number=number, repository=repository, repository_id=ids["repositoryId"],
                           repository_owner_id=ids["repositoryOwnerId"], stacks=tuple(stacks), state_bucket=bucket, state_location=location,
                           external_buckets=external)


def fleet_worker_stacks(s: MainStack) -> list[str]:
    """A fleet manager's worker stacks, by their names in this backend (<org>/<project>/<stack>: the last part)."""
    fleet = s.config.fleet
    if fleet is None or fleet.role != "manager":
        return []
    return [w.stack.rsplit("/", 1)[-1] for w in fleet.workers]


def _stacks(text: Optional[str], project: str, problems: list[Problem]) -> list[MainStack]:
    key = _key("stacks")
    try:
        names = json.loads(text) if text else None
    except json.JSONDecodeError:
        names = text
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        problems.append(Problem(key, "give the main stacks this project runs as a list of names, e.g. [prod] "
                                "(their files are stacks/Pulumi.<name>.yaml)"))
        return []
    out: list[MainStack] = []
    for i, name in enumerate(names):
        where = f"{key}[{i}]"
        if names.index(name) != i:
            problems.append(Problem(where, f"{name!r} is listed twice"))
            continue
        account = identities.ci_account_id(name, "preview")  # the longer of the two service account IDs
        if not re.fullmatch(r"[a-z][a-z0-9-]{4,28}[a-z0-9]", account):
            problems.append(Problem(where, f"{name!r}: its service account ID {account!r} must be 6-30 lowercase letters, "
                                    "digits or '-': use a shorter stack name of lowercase letters, digits and '-'"))
            continue
        try:
            stack = load_main_stack(name)
        except MainStackError as e:
            problems.append(Problem(where, str(e)))
            continue
        if project and stack.config.project != project:
            problems.append(Problem(where, f"stack {name!r} deploys to project {stack.config.project!r}, not {project!r}: "
                                    "list it in that project's bootstrap stack"))
            continue
        if project and stack.kms_key is not None and stack.kms_key.project != project:
            problems.append(Problem(where, f"stack {name!r} encrypts its secrets with a key of project {stack.kms_key.project!r}, "
                                    f"not {project!r}: point its secretsprovider at this project's key"))
            continue
        out.append(stack)
    return out


def flat_config() -> dict[str, str]:
    """Every config key the runtime holds (the CLI passes them in PULUMI_CONFIG, mocks with set_all_config)."""
    explicit: Any = getattr(runtime_config, "CONFIG", None)
    keys = set(explicit.get() if explicit is not None else ()) | set(runtime_config.get_config_env())
    return {k: v for k in sorted(keys) if (v := runtime_config.get_config(k)) is not None}


def required_apis(cfg: BootstrapConfig) -> list[str]:
    return sorted({api for s in cfg.stacks
                   for api in identities.required_apis(s.types, kms_key=s.kms_key is not None, read_quota=s.config.read_quota)})


def build(cfg: BootstrapConfig) -> dict[str, Any]:
    project = cfg.project
    apis = {api: gcp.projects.Service(
        f"api-{api.removesuffix('.googleapis.com')}", project=project, service=api,
        disable_on_destroy=False,  # running stacks depend on them: destroying the bootstrap never disables an API
    ) for api in required_apis(cfg)}

    def after(*names: str, protect: bool = False) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(depends_on=[apis[n] for n in names], protect=protect)

    state = gcp.storage.Bucket(
        "state", project=project, name=cfg.state_bucket, location=cfg.state_location,
        uniform_bucket_level_access=True, public_access_prevention="enforced",
        versioning=gcp.storage.BucketVersioningArgs(enabled=True),
        soft_delete_policy=gcp.storage.BucketSoftDeletePolicyArgs(retention_duration_seconds=STATE_SOFT_DELETE_DAYS * 86400),
        lifecycle_rules=[gcp.storage.BucketLifecycleRuleArgs(
            action=gcp.storage.BucketLifecycleRuleActionArgs(type="Delete"),
            condition=gcp.storage.BucketLifecycleRuleConditionArgs(days_since_noncurrent_time=STATE_NONCURRENT_DAYS, with_state="ARCHIVED"),
        )],
        force_destroy=False, labels={"pathways": "pulumi-state"},
        opts=after("storage.googleapis.com", protect=True),
    )
    backend = pulumi.Output.concat("gs://", state.name)
    # a new content replaces the object, and create-before-delete would upload it and then delete it (one name)
    gcp.storage.BucketObject("state-meta", bucket=state.name, name=STATE_META_OBJECT, content=STATE_META, content_type="application/x-yaml",
                             opts=pulumi.ResourceOptions(delete_before_replace=True))

    pool = gcp.iam.WorkloadIdentityPool(
        "github", project=project, workload_identity_pool_id=POOL, display_name="GitHub Actions",
        description=f"Workflows of {cfg.repository}", opts=after("iam.googleapis.com", "sts.googleapis.com"),
    )
    provider = gcp.iam.WorkloadIdentityPoolProvider(
        "github", project=project, workload_identity_pool_id=pool.workload_identity_pool_id,
        workload_identity_pool_provider_id=PROVIDER, display_name="GitHub OIDC",
        # GitHub's OIDC claims (docs.github.com, "OpenID Connect reference"): the IDs, the ref and the environment
        # are what the condition and the bindings judge; sub names the environment.
        attribute_mapping={"google.subject": "assertion.sub", "attribute.repository_id": "assertion.repository_id",
                           "attribute.repository_owner_id": "assertion.repository_owner_id", "attribute.ref": "assertion.ref",
                           "attribute.environment": "assertion.environment"},
        attribute_condition=pool_condition(cfg),
        oidc=gcp.iam.WorkloadIdentityPoolProviderOidcArgs(issuer_uri=GITHUB_ISSUER),
    )
    pool_path = f"projects/{cfg.project_number}/locations/global/workloadIdentityPools/{POOL}"

    keys: dict[KmsKey, gcp.kms.CryptoKey] = {}
    rings: dict[tuple[str, str], gcp.kms.KeyRing] = {}
    for s in cfg.stacks:
        k = s.kms_key
        if k is None or k in keys:
            continue
        if (k.location, k.key_ring) not in rings:
            # Key rings and keys cannot be deleted in Cloud KMS; protect keeps `pulumi destroy` from forgetting them.
            rings[(k.location, k.key_ring)] = gcp.kms.KeyRing(
                f"keyring-{k.location}-{k.key_ring}", project=project, location=k.location, name=k.key_ring,
                opts=after("cloudkms.googleapis.com", protect=True))
        keys[k] = gcp.kms.CryptoKey(
            f"key-{k.name}", name=k.name, key_ring=rings[(k.location, k.key_ring)].id, rotation_period=KEY_ROTATION,
            opts=pulumi.ResourceOptions(protect=True))

    if any(s.installs_metrics_adapter for s in cfg.stacks):
        # One binding for every stack that installs the adapter (they share the project's Workload Identity pool and
        # the adapter's namespace and name): its Kubernetes service account reads Cloud Monitoring, where Managed
        # Prometheus writes the metrics its autoscalers scale on (components/model/workloads/metrics_adapter.py).
        gcp.projects.IAMMember("metrics-adapter-monitoring-viewer", project=project, role=metrics_adapter.MONITORING_ROLE,
                               member=metrics_adapter.workload_identity_member(project, cfg.project_number),
                               opts=after("cloudresourcemanager.googleapis.com"))
    for s in cfg.stacks:
        if s.creates_cluster:
            # The scratch bucket's custom role (the five permissions Pathways needs), made here so that no deploy
            # identity holds role administration over the project's custom roles (security #58.14); the stack grants
            # it on its scratch bucket by name (ScratchBucketArgs.scratch_role).
            gcp.projects.IAMCustomRole(
                f"{s.name}-scratch-role", project=project, role_id=s.config.scratch_role_id,
                title=f"Pathways scratch bucket user ({s.name})",
                description="What Pathways needs on its scratch bucket: read/write objects and attach lifecycle rules.",
                permissions=list(SCRATCH_PERMISSIONS), stage="GA", opts=after("iam.googleapis.com"))
    for s in cfg.stacks:
        if s.mtc_backups_bucket:
            # Multi-tier checkpointing: GKE's checkpointing driver backs the RAM disks up to the stack's backups
            # bucket (xpk core/mtc.py: roles/storage.objectUser), held project-wide by condition on that bucket alone,
            # since the principal names the project by number and the bucket is the stack's to create.
            title, expression = resilience.backups_condition(s.mtc_backups_bucket)
            gcp.projects.IAMMember(f"{s.name}-checkpointing-driver", project=project, role=resilience.MTC_BUCKET_ROLE,
                                   member=resilience.checkpointing_member(project, cfg.project_number),
                                   condition=gcp.projects.IAMMemberConditionArgs(title=title, expression=expression),
                                   opts=after("cloudresourcemanager.googleapis.com"))
    for s in cfg.stacks:
        # Storage mounts (components/model/workloads/storage.py): the role on each mounted bucket alone, to the Kubernetes service
        # account of the pods that mount it, through Workload Identity Federation for GKE.
        for bucket, role, namespace, account in s.bucket_grants:
            gcp.storage.BucketIAMMember(f"{s.name}-mount-{bucket}-{namespace}-{account}", bucket=bucket, role=role,
                                        member=storage.ksa_member(project, cfg.project_number, namespace, account),
                                        opts=after("storage.googleapis.com"))
    # The people and groups a stack names in RBAC (runs.submitters, service clients) fetch its cluster's credentials
    # through the DNS endpoint: container.clusters.get and .connect (identities.CONNECT_ROLE); what they may do
    # inside is the stack's RBAC. One binding per member, whichever stacks name them.
    connect: dict[str, list[str]] = {}
    for s in cfg.stacks:
        for _, kind, email in s.config.rbac_subjects:
            connect.setdefault(f"{'group' if kind == 'Group' else 'user'}:{email}", []).append(s.name)
    for member in sorted(connect):
        gcp.projects.IAMMember(f"connect-{member.replace(':', '-')}", project=project, role=identities.CONNECT_ROLE, member=member,
                               opts=after("cloudresourcemanager.googleapis.com"))
    out_environments: dict[str, Any] = {}
    roles: dict[str, Any] = {}
    reads_elsewhere: dict[str, list[str]] = {}
    by_name = {s.name: s for s in cfg.stacks}
    for s in cfg.stacks:
        roles[s.name] = {}
        # The node service accounts, made here so that the deploy identity needs neither to create service accounts
        # nor to grant project roles (components/gcp/node_identity.py): their IDs are the ones the stack derives.
        nodes = []
        for account_id in s.node_account_ids:
            node = gcp.serviceaccount.Account(
                f"{s.name}-node-{account_id}", project=project, account_id=account_id,
                display_name=f"Nodes of stack {s.name} ({account_id})", opts=after("iam.googleapis.com"))
            for role in identities.NODE_ROLES:
                gcp.projects.IAMMember(f"{s.name}-node-{account_id}-{role.removeprefix('roles/')}", project=project, role=role,
                                       member=node.member, opts=after("cloudresourcemanager.googleapis.com"))
            nodes.append(node)
        # Live reservation reads (slices[].readReservation): a custom role of just the get permissions they use, made
        # only when a stack reads reservations, granted to both CI identities project-wide (pulumi-gcp has no
        # reservation IAM resource, and reservations are not among the resource types IAM Conditions document).
        # A reservation of another project (shared) needs the same there: listed in the output, not granted.
        reads = s.reservation_reads
        read_role = gcp.projects.IAMCustomRole(
            f"{s.name}-reservation-read-role", project=project, role_id=s.config.reservation_read_role_id,
            title=f"Pathways reservation read ({s.name})",
            description="Read the stack's reservations and their blocks before creating its node pools (readReservation).",
            permissions=list(reads[project]), stage="GA", opts=after("iam.googleapis.com")) if project in reads else None
        for owner, permissions in reads.items():
            if owner != project:
                reads_elsewhere.setdefault(s.name, []).append(
                    f"{owner}: {', '.join(permissions)} for {identities.ci_account_email(s.name, 'preview', project)} "
                    f"and {identities.ci_account_email(s.name, 'deploy', project)}")
        # The live preflight's reads (infra/offline/preflight.py), the preview identity's alone: read-only, listed.
        preflight_role = gcp.projects.IAMCustomRole(
            f"{s.name}-preflight-role", project=project, role_id=s.config.preflight_role_id,
            title=f"Pathways preflight ({s.name})",
            description="Read what would stop the stack's first pulumi up: APIs, quota, reservations, machine types, GKE "
                        "versions, org policies, the subnet (python -m infra.offline preflight --live).",
            permissions=list(identities.PREFLIGHT_PERMISSIONS), stage="GA", opts=after("iam.googleapis.com"))
        # Creating the stack's buckets (checked against the project): storage.buckets.create alone, the deploy identity's.
        bucket_create_role = gcp.projects.IAMCustomRole(
            f"{s.name}-bucket-create-role", project=project, role_id=s.config.bucket_create_role_id,
            title=f"Pathways bucket create ({s.name})",
            description="Create the stack's buckets; everything else on them is granted on those buckets only.",
            permissions=list(identities.BUCKET_CREATE_PERMISSIONS), stage="GA",
            opts=after("iam.googleapis.com")) if identities.BUCKET_TYPE in s.types else None
        for identity in ("preview", "deploy"):
            envs = environments(s.name, identity, takes_pull_request_previews(s))
            account = gcp.serviceaccount.Account(
                f"{s.name}-{identity}", project=project, account_id=identities.ci_account_id(s.name, identity),
                display_name=f"Pulumi {identity} of stack {s.name} (GitHub environments {', '.join(envs)})",
                opts=after("iam.googleapis.com"))
            # Only jobs that run in one of these environments (and so passed its rules, and the pool's condition)
            # get this identity's tokens.
            for env in envs:
                gcp.serviceaccount.IAMMember(
                    f"{s.name}-{identity}-github" + ("" if env in (s.name, f"{s.name}-preview") else "-pull-request"),
                    service_account_id=account.name, role="roles/iam.workloadIdentityUser",
                    member=f"principal://iam.googleapis.com/{pool_path}/subject/{github_subject(cfg.repository, env)}",
                    opts=pulumi.ResourceOptions(depends_on=[provider]))
            grants = identities.grants(identity, s.types, kms_key=s.kms_key is not None, buckets=s.buckets,
                                       state=(cfg.state_bucket, PROJECT_NAMESPACE, s.name), read_quota=s.config.read_quota)
            for g in grants:
                name = f"{s.name}-{identity}-{g.role.removeprefix('roles/')}"
                if g.scope == "project":
                    gcp.projects.IAMMember(
                        name, project=project, role=g.role, member=account.member,
                        condition=gcp.projects.IAMMemberConditionArgs(title=g.condition.title, expression=g.condition.expression)
                        if g.condition else None,
                        opts=after("cloudresourcemanager.googleapis.com"))
                elif g.scope == "state bucket":
                    gcp.storage.BucketIAMMember(
                        name, bucket=state.name, role=g.role, member=account.member,
                        condition=gcp.storage.BucketIAMMemberConditionArgs(title=g.condition.title, expression=g.condition.expression)
                        if g.condition else None)
                elif g.scope == "node service accounts":
                    for node, account_id in zip(nodes, s.node_account_ids, strict=True):
                        gcp.serviceaccount.IAMMember(f"{name}-{account_id}", service_account_id=node.name, role=g.role, member=account.member)
                else:
                    assert s.kms_key is not None
                    gcp.kms.CryptoKeyIAMMember(name, crypto_key_id=keys[s.kms_key].id, role=g.role, member=account.member)
            # a fleet manager reads its workers' `fleet` outputs through stack references (docs/fleet.md)
            readers = identities.fleet_reader_grants(
                [(w, by_name[w].kms_key is not None) for w in fleet_worker_stacks(s)], cfg.state_bucket, PROJECT_NAMESPACE)
            for worker, g in readers:
                name = f"{s.name}-{identity}-reads-{worker}-{g.role.removeprefix('roles/')}"
                if g.scope == "state bucket":
                    assert g.condition is not None
                    gcp.storage.BucketIAMMember(
                        name, bucket=state.name, role=g.role, member=account.member,
                        condition=gcp.storage.BucketIAMMemberConditionArgs(title=g.condition.title, expression=g.condition.expression))
                else:
                    worker_key = by_name[worker].kms_key
                    assert worker_key is not None
                    gcp.kms.CryptoKeyIAMMember(name, crypto_key_id=keys[worker_key].id, role=g.role, member=account.member)
            grants = [*grants, *(g for _, g in readers)]
            roles[s.name][identity] = sorted({g.role for g in grants})
            if identity == "deploy" and bucket_create_role is not None:
                gcp.projects.IAMMember(f"{s.name}-deploy-bucket-create", project=project, role=bucket_create_role.name,
                                       member=account.member, opts=after("cloudresourcemanager.googleapis.com"))
                roles[s.name][identity] = sorted([*roles[s.name][identity], s.config.bucket_create_role_name])
            if identity == "preview":
                gcp.projects.IAMMember(f"{s.name}-preview-preflight", project=project, role=preflight_role.name,
                                       member=account.member, opts=after("cloudresourcemanager.googleapis.com"))
                roles[s.name][identity] = sorted([*roles[s.name][identity], s.config.preflight_role_name])
            if read_role is not None:
                gcp.projects.IAMMember(f"{s.name}-{identity}-reservation-read", project=project, role=read_role.name,
                                       member=account.member, opts=after("cloudresourcemanager.googleapis.com"))
                roles[s.name][identity] = sorted([*roles[s.name][identity], s.config.reservation_read_role_name])
            # What to put in the GitHub environments' variables (docs/ci.md, "CI identities").
            for env in envs:
                out_environments[env] = {
                    "GCP_WORKLOAD_IDENTITY_PROVIDER": f"{pool_path}/providers/{PROVIDER}",
                    "GCP_SERVICE_ACCOUNT": account.email,
                    "PULUMI_BACKEND_URL": backend,
                }
    # Grants on buckets the stacks do not make (another project's, or made by hand), each allowed by externalBuckets:
    # printed, so the operator sees every principal this run gives access outside the stacks' own buckets.
    external = {s.name: [f"{b} {role.removeprefix('roles/')} -> {ns}/{sa}" for b, role, ns, sa in s.external_bucket_grants]
                for s in cfg.stacks}
    # Kubernetes objects are authorized by IAM (container.*), which GKE offers per project, not per cluster: each
    # deploy identity is cluster admin on every cluster of the project (security #58.11). Said, not hidden.
    shared = [s.name for s in cfg.stacks if s.creates_cluster]
    clusters_shared = (f"stacks {', '.join(shared)} share project {project}: each one's deploy identity is "
                       "roles/container.admin on every cluster of the project, the others' included; give stacks that "
                       "must not reach each other's clusters a project each") if len(shared) > 1 else None
    if clusters_shared:
        pulumi.log.warn(clusters_shared)
    for stack, needs in reads_elsewhere.items():
        pulumi.log.warn(f"stack {stack} reads reservations of other projects (readReservation); grant there: {'; '.join(needs)}")
    return {"apis": list(apis), "stateBackend": backend, "environments": out_environments, "roles": roles,
            "externalBucketGrants": {k: v for k, v in external.items() if v}, "sharedProjectClusterAdmin": clusters_shared,
            "reservationReadsElsewhere": reads_elsewhere}


def main() -> None:
    try:
        cfg = read_config(flat_config())
    except ConfigError as e:
        raise InvalidBootstrapConfig(e) from None
    for name, value in build(cfg).items():
        pulumi.export(name, value)
