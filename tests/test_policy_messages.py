"""What each policy says, in full: the resource it names and the value that broke the rule (sampled mutation of
issue #57 found these messages unchecked: a rule that named no resource, or the wrong field, still passed)."""

from __future__ import annotations

import copy

from tests.test_policies import BATCH, JOBSET, POOL, add, mutate, violations

HEAD_C = "spec.replicatedJobs.0.template.spec.template.spec"


def _messages(plan, policy: str) -> list[str]:
    return [v.message for v in violations(plan) if v.policy == policy]


def test_the_coordinator_label_rule_names_the_jobset():
    (message,) = _messages(mutate(BATCH, JOBSET, "workload-nb", "metadata.name", "n" * 30), "pathways-coordinator-label-length")
    assert message.startswith(f"JobSet {'n' * 30}: coordinator label '{'n' * 30}-pathways-head-0-0.") and "is 79 characters (> 63)" in message


def test_the_node_identity_rule_names_the_pool():
    (message,) = _messages(mutate(BATCH, POOL, "head-pool", "nodeConfig.serviceAccount", "123-compute@developer.gserviceaccount.com"),
                           "pathways-node-identity")
    name = BATCH.one(POOL, "head-pool").input("name")
    assert message.startswith(f"node pool {name}")


def test_the_exposure_rule_names_the_range_that_opens_the_control_plane():
    broken = mutate(BATCH, "gcp:container/cluster:Cluster", "cluster", "masterAuthorizedNetworksConfig", {"cidrBlocks": [{"cidrBlock": "0.0.0.0/0"}]})
    (message,) = [m for m in _messages(broken, "pathways-network-exposure") if "authorized network" in m]
    name = BATCH.one("gcp:container/cluster:Cluster").input("name")
    assert message == f"cluster {name}: master authorized network 0.0.0.0/0 is the whole internet"


def test_a_calendar_request_that_is_not_submitted_is_refused_and_a_submitted_one_passes():
    inputs = {"name": "fr-1", "reservationMode": "CALENDAR", "planningStatus": "DRAFT"}
    plan = add(BATCH, "gcp:compute/futureReservation:FutureReservation", "fr", inputs, )
    plan = mutate(plan, "gcp:compute/futureReservation:FutureReservation", "fr", protect=True)
    (message,) = _messages(plan, "pathways-future-reservation-protected")
    assert message == ("future reservation fr-1: planningStatus 'DRAFT'; the stack submits its requests (SUBMITTED), a draft is "
                       "made by hand")
    submitted = mutate(plan, "gcp:compute/futureReservation:FutureReservation", "fr", "planningStatus", "SUBMITTED")
    assert _messages(submitted, "pathways-future-reservation-protected") == []
    # a request that is not calendar-mode is not this rule's
    other = mutate(plan, "gcp:compute/futureReservation:FutureReservation", "fr", "reservationMode", "DEFAULT")
    assert _messages(other, "pathways-future-reservation-protected") == []


def test_an_unpinned_image_in_a_leader_worker_sets_worker_template_is_found():
    lws = {"metadata": {"name": "llm", "namespace": "pathways"}, "spec": {"leaderWorkerTemplate": {
        "leaderTemplate": {"spec": {"containers": [{"name": "leader", "image": "example.com/srv:1"}]}},
        "workerTemplate": {"spec": {"containers": [{"name": "worker", "image": "example.com/srv:latest"}]}}}}}
    plan = add(BATCH, "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "llm", copy.deepcopy(lws))
    messages = _messages(plan, "pathways-images-pinned")
    assert messages == ["LeaderWorkerSet llm container worker uses 'example.com/srv:latest'; pin an explicit tag or digest"]
    lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["image"] = "example.com/srv"
    lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = "example.com/srv:1"
    messages = _messages(add(BATCH, "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "llm", lws), "pathways-images-pinned")
    assert messages == ["LeaderWorkerSet llm container leader uses 'example.com/srv'; pin an explicit tag or digest"]


def test_the_pod_security_rule_names_the_object_and_its_namespace():
    # the JobSet controller's namespace enforces restricted: a JobSet there whose pods share the host's PIDs is refused
    broken = mutate(mutate(BATCH, JOBSET, "workload-train", f"{HEAD_C}.hostPID", True), JOBSET, "workload-train", "metadata.namespace", "jobset-system")
    messages = [m for m in _messages(broken, "pathways-pod-security") if " jobset-system/train " in m]
    assert messages and messages[0].startswith("JobSet jobset-system/train spec.replicatedJobs[0]"), _messages(broken, "pathways-pod-security")


def test_the_zone_rule_names_the_pool_and_its_zone():
    broken = mutate(BATCH, POOL, "slices-main-1", "location", "us-east5-c")
    name = BATCH.one(POOL, "slices-main-1").input("name")
    messages = _messages(broken, "pathways-single-zone")
    assert any(m.startswith(f"node pool {name} is in ['us-east5-c'], not the cluster's zone us-east5-b") for m in messages), messages


def test_the_catalog_rule_names_an_autoscaled_pool_with_total_limits_only():
    broken = mutate(mutate(BATCH, POOL, "slices-main-0", "nodeCount", None), POOL, "slices-main-0", "autoscaling",
                    {"totalMinNodeCount": 0, "totalMaxNodeCount": 4, "locationPolicy": "ANY"})
    name = BATCH.one(POOL, "slices-main-0").input("name")
    assert any(m.startswith(f"autoscaled pool {name} sets only total node limits") for m in _messages(broken, "pathways-tpu-pool-matches-catalog"))


def test_every_primitive_role_and_public_member_is_refused():
    member = "serviceAccount:x@y.iam.gserviceaccount.com"
    for role in ("roles/owner", "roles/editor", "roles/viewer"):
        plan = add(BATCH, "gcp:projects/iAMMember:IAMMember", "wide", {"role": role, "member": member, "project": "p"})
        assert any(m.startswith(f"primitive role {role}") for m in _messages(plan, "pathways-storage-iam-least-privilege")), role
    for public in ("allUsers", "allAuthenticatedUsers"):
        plan = add(BATCH, "gcp:storage/bucketIAMMember:BucketIAMMember", "open", {"role": "roles/storage.objectViewer", "member": public, "bucket": "b"})
        assert any(m.startswith(f"{public} is granted roles/storage.objectViewer") for m in _messages(plan, "pathways-storage-iam-least-privilege")), public


def test_no_binding_opens_access_to_any_kind_of_everyone():
    for subject in ("system:authenticated", "system:unauthenticated", "system:anonymous", "allUsers", "allAuthenticatedUsers"):
        plan = add(BATCH, "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "open", {
            "metadata": {"name": "open", "namespace": "pathways"}, "roleRef": {"kind": "Role", "name": "x"},
            "subjects": [{"kind": "Group", "name": subject}]})
        assert _messages(plan, "pathways-service-access") == [
            f"RoleBinding open binds {subject}: everyone could run programs on the stack's TPUs; bind named users or groups"], subject


def test_an_object_without_a_namespace_is_judged_by_the_default_namespaces_level():
    # an object written without metadata.namespace lands in `default` (the Kubernetes provider's default): the rule
    # judges its pods by what `default` enforces, here restricted, and names it there
    restricted = {"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": "default", "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}
    plan = add(BATCH, "kubernetes:core/v1:Namespace", "default-ns", restricted)
    broken = mutate(mutate(plan, JOBSET, "workload-train", f"{HEAD_C}.hostPID", True), JOBSET, "workload-train", "metadata.namespace", None)
    messages = [m for m in _messages(broken, "pathways-pod-security") if " default/train " in m]
    assert messages and messages[0].startswith("JobSet default/train spec.replicatedJobs[0]"), _messages(broken, "pathways-pod-security")
    # where `default` enforces nothing stricter than privileged, the same pods pass
    privileged = mutate(broken, "kubernetes:core/v1:Namespace", "default-ns", "metadata.labels", {"pod-security.kubernetes.io/enforce": "privileged"})
    assert not [m for m in _messages(privileged, "pathways-pod-security") if " default/train " in m]


def test_a_bare_pod_is_named_without_a_template_path():
    # a chart may render a bare Pod (a helm test hook): the rule names it by namespace and name alone
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": "jobset-system"},
           "spec": {"hostNetwork": True, "containers": [{"name": "c", "image": "example.com/c:1"}]}}
    messages = [m for m in _messages(add(BATCH, "kubernetes:core/v1:Pod", "probe", pod), "pathways-pod-security") if "/probe" in m]
    assert len(messages) == 1 and messages[0].startswith("Pod jobset-system/probe: its pods would be refused, "), messages
