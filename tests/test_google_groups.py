"""Researchers listed as a Google group get in: GKE's Google Groups for RBAC (cluster.securityGroup) on the cluster
the stack makes, a plan that refuses a group without it (and, on a cluster made elsewhere, says what to check), and
the bootstrap's one grant per person or group to fetch the cluster's credentials."""

from __future__ import annotations

import pytest

from components.model.cluster.identities import CONNECT_ROLE
from components.model.cost.summary import notices
from components.model.errors import ConfigError
from infra.errors import InvalidStackConfig
from infra.offline.diff import diff
from tests.conftest import GROUPS_RBAC, config_with, plan_of
from tests.test_bootstrap import BOOTSTRAP_STACKS, bootstrap_plan, main_stacks

CLUSTER = "gcp:container/cluster:Cluster"
PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
VERSION = "jax-0.9.0"
GROUP_RUNS = {"submitters": [{"name": "researchers@example.com"}, {"kind": "User", "name": "rita@example.com"}]}


def _refusal(config: dict) -> str:
    with pytest.raises((InvalidStackConfig, ConfigError)) as e:
        plan_of(config)
    return str(e.value)


def test_a_group_submitter_without_google_groups_for_rbac_is_refused():
    message = _refusal(config_with(pathwaysVersion=VERSION, runs=GROUP_RUNS))
    assert ("pathways:runs.submitters[0].name: 'researchers@example.com' is a Google group, and GKE tells RBAC about group "
            "membership only with Google Groups for RBAC on: set pathways:cluster.securityGroup: gke-security-groups@<your "
            "domain>") in message
    assert "rita@example.com" not in message  # a user needs no group lookup


def test_a_group_client_of_a_shared_service_is_refused_the_same_way():
    message = _refusal(config_with(pathwaysVersion=VERSION, workloads=[
        {"name": "sps", "mode": "service", "service": {"clients": [{"name": "users@example.com"}]}}]))
    assert "pathways:workloads[0].service.clients[0].name: 'users@example.com' is a Google group" in message


def test_users_alone_need_no_security_group():
    plan = plan_of(config_with(pathwaysVersion=VERSION, runs={"submitters": [{"kind": "User", "name": "rita@example.com"}]}))
    assert plan.one(CLUSTER).input("authenticatorGroupsConfig") is None


def test_the_security_group_turns_google_groups_for_rbac_on():
    plan = plan_of(config_with(pathwaysVersion=VERSION, runs=GROUP_RUNS, cluster=GROUPS_RBAC))
    assert plan.one(CLUSTER).input("authenticatorGroupsConfig") == {"securityGroup": "gke-security-groups@example.com"}


@pytest.mark.parametrize("group", ["researchers@example.com", "gke-security-groups@", "GKE-security-groups@example.com",
                                   "gke-security-groups@" + "a" * 240 + ".com"])
def test_gke_requires_the_group_name(group):
    message = _refusal(config_with(cluster={"securityGroup": group}))
    assert "pathways:cluster.securityGroup" in message and "GKE requires gke-security-groups@<your domain>" in message


def test_turning_it_on_later_changes_the_cluster_in_place():
    before = plan_of(config_with(pathwaysVersion=VERSION, runs={"submitters": [{"kind": "User", "name": "rita@example.com"}]}))
    after = plan_of(config_with(pathwaysVersion=VERSION, runs=GROUP_RUNS, cluster=GROUPS_RBAC))
    (cluster,) = [c for c in diff(before, after) if c.type == CLUSTER]
    assert cluster.action == "update" and not cluster.destructive


def test_on_a_cluster_made_elsewhere_the_plan_says_what_to_check(tmp_path):
    from components.model.config import load, resolve
    from infra.offline.stackfile import flatten, raw_values

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    cfg = config_with(pathwaysVersion=VERSION, runs=GROUP_RUNS, cluster={"existing": {"kubeconfig": str(kubeconfig)}},
                      bucket={"name": "team-scratch"})
    said = [n for n in notices(resolve(load(raw_values(flatten(cfg)[0]), "test"))) if "Google Groups for RBAC" in n]
    assert len(said) == 1 and "researchers@example.com" in said[0] and "--security-group=gke-security-groups@<domain>" in said[0]
    # and the key itself belongs to the cluster's owner there
    message = _refusal({**cfg, "pathways:cluster": {"existing": {"kubeconfig": str(kubeconfig)}, **GROUPS_RBAC}})
    assert "pathways:cluster.securityGroup: has no effect with cluster.existing" in message


@pytest.mark.every_stack
@pytest.mark.parametrize("project", BOOTSTRAP_STACKS)
def test_the_bootstrap_lets_each_person_and_group_fetch_credentials_and_nothing_more(project):
    # derived from the stacks the bootstrap sets up: every RBAC subject of each, once, with the one role
    from bootstrap.main_stack import load_main_stack

    expected = {f"{'group' if kind == 'Group' else 'user'}:{email}"
                for name in main_stacks(project) for _, kind, email in load_main_stack(name).config.rbac_subjects}
    plan = bootstrap_plan(project)
    people = [r for r in plan.by_type(PROJECT_MEMBER) if r.input("member").startswith(("group:", "user:"))]
    assert sorted(r.input("member") for r in people) == sorted(expected)
    assert {r.input("role") for r in people} <= {CONNECT_ROLE} and all(r.input("condition") is None for r in people)
