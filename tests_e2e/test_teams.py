"""Several teams on one stack (pathways:teams, docs/teams.md) on the real Kueue, deployed by the real `pulumi up`
from the committed example (stacks/Pulumi.teams.yaml as written; evals' budget set to 0 here, so that its hold can
be seen). Each team's submitter (a client certificate in the team's group) creates its runs as `python -m
infra.run submit --team` renders them; the admission policy of its team judges each.

- Contention: three teams want every slice of `shared` (12 slices nobody owns); with fair sharing the admitted
  slices settle at the weights (3:2:1), as the plan's `underContention` predicts; measured, printed, within ±10 %.
- Borrowing and reclaim: posttraining borrows pretraining's idle `reserved` slices up to the lending limit (2 of
  4); when pretraining submits, Kueue preempts the borrowed ones and pretraining runs on all four.
- Isolation: a team's submitter cannot read or submit into another team's namespace.
- Budget: the usage recorder (the stack's own program, run with its own token) holds the team over its budget
  (stopPolicy Hold): its next run waits, `why` names the hold, its member reads its own line and not another's;
  after drainAfterMinutes Kueue evicts what it admitted (HoldAndDrain); deleting the runs keeps the record; a
  raised budget releases it. Its identity is refused everything but its own.
- Admission ceilings (#76.1): for five (queue, group) pairs — three teams' queues and the stack's own, owned,
  borrowed and lent quota — a run of exactly the plan's ceiling is admitted alone, and one slice more (created past
  the plan, which refuses it) is judged by Kueue as over its quota and never admitted."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.manifests import kueue as kueue_manifest
from components.manifests.runs import run_jobset
from components.manifests.usage import NAME as USAGE_NAME
from components.manifests.usage import NAMESPACE as USAGE_NAMESPACE
from components.model.capacity.queue_shares import ceiling
from components.model.config import as_run, load, load_run, resolve
from components.model.cost.teams_summary import teams_summary
from components.model.resolved import QUEUE
from infra.offline.stackfile import load_config, raw_values
from tests_e2e.helpers import is_true, kueue_judged, user_stack_file, wait_running, workload
from tests_e2e.test_stacks import example_stack_config
from tools.cluster.local import ROOT, LocalCluster

IMAGE = "example.com/trainer:1"
WANTED = 8  # runs each team submits on `shared`: more than any team's fair share of its 12 slices


def config() -> dict[str, Any]:
    c = example_stack_config("teams")
    for t in c["pathways:teams"]:
        if t["name"] == "evals":
            t["chipHoursPerMonth"] = 0
            t["drainAfterMinutes"] = 1
    return c


def run_cli(cluster: LocalCluster, stack_file: Path, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command, rest = args[0], args[1:]
    return subprocess.run([sys.executable, "-m", "infra.run", command, "--config", str(stack_file), "--kubeconfig", str(kubeconfig), *rest],
                          cwd=ROOT, env=cluster.env, capture_output=True, text=True, timeout=300)


class Teams:
    def __init__(self, cluster: LocalCluster, stack_file: Path):
        self.cluster, self.stack_file = cluster, stack_file
        flat, secrets = load_config(stack_file)
        self.model = load(raw_values(flat), "teams", frozenset(secrets))
        self.users = {t.name: cluster.user_kubeconfig(f"{t.name}-lead@example.com", tuple(s.name for s in t.submitters))
                      for t in self.model.teams}

    def jobsets(self, team: str | None, group: str, names: list[str], slices: int = 1) -> list[dict[str, Any]]:
        """The runs' JobSets as `infra.run submit [--team T]` builds them (its own model, rules and builder)."""
        out = []
        for name in names:
            spec = {"name": name, "sliceGroup": group, "slices": slices, "image": IMAGE, "command": ["python3", "train.py"]}
            cfg = load_run(self.model, {**spec, "team": team} if team else spec)
            stack = resolve(cfg)
            out.append(run_jobset(stack, as_run(stack, stack.workloads[-1]), self.user_name(team)))
        return out

    def user_name(self, team: str | None) -> str:
        return f"{team}-lead@example.com" if team else "platform-lead@example.com"

    def kubeconfig(self, team: str | None) -> Path:
        if team:
            return self.users[team]
        assert self.model.runs is not None
        return self.cluster.user_kubeconfig(self.user_name(None), tuple(s.name for s in self.model.runs.submitters))

    def submit(self, team: str, group: str, names: list[str]) -> None:
        docs = yaml.safe_dump_all(self.jobsets(team, group, names))
        self.cluster.kubectl("create", "-f", "-", stdin=docs, kubeconfig=self.users[team], timeout=300)

    def admitted(self, team: str, prefix: str) -> int:
        ns = next(t.team_namespace for t in self.model.teams if t.name == team)
        found = self.cluster.get("workloads.kueue.x-k8s.io", "-n", ns)["items"]
        return sum(1 for w in found if is_true(w, "Admitted") and not is_true(w, "Finished")
                   and any(o.get("name", "").startswith(prefix) for o in w["metadata"].get("ownerReferences", [])))

    def clear(self) -> None:
        for t in self.model.teams:
            done = run_cli(self.cluster, self.stack_file, self.users[t.name], "delete", "--team", t.name, "--all")
            assert done.returncode == 0, done.stderr


def fair_sharing_on(cluster: LocalCluster, queues: list[str]) -> bool:
    """The running Kueue computes fair sharing for these queues: it records status.fairSharing only when fair sharing
    is on in its Configuration (v1beta2 ClusterQueueStatus.fairSharing)."""
    return all((cluster.get("clusterqueue", q).get("status") or {}).get("fairSharing") is not None for q in queues)


@pytest.fixture(scope="module")
def teams(cluster, stacks, tmp_path_factory):
    stacks.use("teams", config())
    t = Teams(cluster, user_stack_file(cluster, config(), tmp_path_factory.mktemp("teams"), "teams"))
    # Deployed after a dozen other stacks on one control plane, the teams' fair-sharing rebalancing did not happen in
    # the whole tier (it does with the stack deployed first, or after the why stack): Kueue starts here from the
    # stack's own Configuration (fair sharing on), and the scenarios wait until it reports fair sharing on the teams'
    # queues. Open: what in the earlier scenarios leaves Kueue so (the stop's notes).
    cluster.kubectl("rollout", "restart", "deployment/kueue-controller-manager", "-n", "kueue-system")
    cluster.kubectl("rollout", "status", "deployment/kueue-controller-manager", "-n", "kueue-system", "--timeout=240s", timeout=300)
    queues = [team.cluster_queue for team in t.model.teams]
    cluster.wait_for("Kueue reports fair sharing on the teams' queues", lambda: fair_sharing_on(cluster, queues), timeout=180, interval=2)
    yield t
    t.clear()  # Kueue keeps a ClusterQueue while it has admitted workloads: runs go before pulumi destroy


def evicting(cluster: LocalCluster) -> list[str]:
    """Workloads Kueue is preempting or evicting whose quota is not free yet (Evicted, still QuotaReserved): their
    pods are stopping, and who is admitted next is not decided until they are gone."""
    return [w["metadata"]["name"] for w in cluster.get("workloads.kueue.x-k8s.io", "-A")["items"]
            if is_true(w, "Evicted") and is_true(w, "QuotaReserved")]


def settled(cluster: LocalCluster, read, seconds: float = 15, timeout: float = 300) -> Any:
    """`read()` once it has not changed for `seconds` with no eviction under way (on a busy machine a preempted
    workload's pods may take longer than `seconds` to stop)."""
    last, since, t0 = None, time.monotonic(), time.monotonic()
    while time.monotonic() - t0 < timeout:
        now = read()
        if now != last or evicting(cluster):
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= seconds:
            return now
        time.sleep(2)
    raise AssertionError(f"never settled: last {last}")


def reached(cluster: LocalCluster, what: str, read, ok, timeout: float = 300) -> Any:
    """`read()` once `ok` holds of it and it then stays put (settled): Kueue's preemptions come in its own time, later
    on a loaded machine than a quiet spell of `settled` alone waits for. A timeout names the last reading."""
    last: list[Any] = [None]

    def holds() -> bool:
        last[0] = read()
        return bool(ok(last[0]))
    try:
        cluster.wait_for(what, holds, timeout=timeout, interval=2)
    except Exception as e:  # the last reading says how far Kueue got
        raise AssertionError(f"{what}: not within {timeout:g} s; last {last[0]}") from e
    return settled(cluster, read, seconds=15)


def test_under_contention_each_team_holds_its_weighted_share_as_the_plan_predicts(cluster, teams):
    names = {t: [f"c-{t[:4]}-{i}" for i in range(WANTED)] for t in ("pretraining", "posttraining", "evals")}
    predicted = {t["name"]: next(g["underContention"] for g in t["groups"] if g["group"] == "shared")
                 for t in teams_summary(resolve(teams.model))["teams"] if t["name"] in names}  # type: ignore[index]
    for i in range(WANTED):  # interleaved, as three teams submitting at once
        for team, runs in names.items():
            teams.submit(team, "shared", [runs[i]])
    got = reached(cluster, "the teams' admitted slices reach fair sharing's equilibrium",
                  lambda: {team: teams.admitted(team, "c-") for team in names},
                  lambda g: sum(g.values()) == 12 and all(abs(g[t] - predicted[t]) <= 0.10 * predicted[t] for t in g))
    total = sum(got.values())
    assert total == 12, got  # every slice of `shared` taken
    weights = {t.name: t.weight for t in teams.model.teams if t.name in names}  # the teams that list `shared`
    shares = {team: got[team] / total for team in got}
    report = {team: {"admitted": got[team], "share": round(shares[team], 3), "weightShare": round(weights[team] / sum(weights.values()), 3),
                     "predicted": predicted[team]} for team in got}
    print(f"[teams] contention on 12 slices: {json.dumps(report)}")
    (cluster.workdir / "teams-contention.json").write_text(json.dumps(report, indent=2))
    for r in report.values():
        assert abs(r["share"] - r["weightShare"]) <= 0.10 * r["weightShare"], report
        assert abs(r["admitted"] - r["predicted"]) <= 0.10 * r["predicted"], report
    teams.clear()


def test_a_team_borrows_idle_slices_within_the_lending_limit_and_the_owner_reclaims_them(cluster, teams):
    teams.submit("posttraining", "reserved", [f"b-post-{i}" for i in range(4)])
    # pretraining owns the 4 `reserved` slices and lends at most 2 while idle
    assert settled(cluster, lambda: teams.admitted("posttraining", "b-post")) == 2
    teams.submit("pretraining", "reserved", [f"b-pre-{i}" for i in range(4)])
    got = reached(cluster, "pretraining reclaims its lent slices", lambda: (teams.admitted("pretraining", "b-pre"),
                                                                          teams.admitted("posttraining", "b-post")), lambda g: g == (4, 0))
    assert got == (4, 0), got  # the two lent slices came back: Kueue preempted the borrower
    reasons = [c.get("reason") for w in cluster.get("workloads.kueue.x-k8s.io", "-n", "team-posttraining")["items"]
               for c in (w.get("status") or {}).get("conditions") or [] if c["type"] == "Preempted"]
    print(f"[teams] the borrower's workloads preempted: {reasons}")
    assert len(reasons) == 2 and all(r.startswith("InCohort") for r in reasons), reasons  # by the cohort, not its own queue
    teams.clear()


def test_a_teams_submitter_cannot_read_or_submit_into_another_teams_namespace(cluster, teams):
    post = teams.users["posttraining"]
    listed = run_cli(cluster, teams.stack_file, post, "list", "--team", "pretraining")
    assert listed.returncode == 1 and "forbidden" in listed.stderr, listed.stderr
    own = run_cli(cluster, teams.stack_file, post, "list", "--team", "posttraining")
    assert own.returncode == 0, own.stderr
    (obj,) = teams.jobsets("pretraining", "reserved", ["x-intruder"])
    refused = cluster.kubectl("create", "-f", "-", stdin=yaml.safe_dump(obj), kubeconfig=post, check=False)
    assert refused.returncode != 0 and "forbidden" in refused.stderr, refused.stderr
    # nor onto another team's queue from its own namespace: its team's policy names its own run queue only
    (mine,) = teams.jobsets("posttraining", "shared", ["x-elsewhere"])
    mine["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "runs-team-pretraining"
    refused = cluster.kubectl("create", "-f", "-", stdin=yaml.safe_dump(mine), kubeconfig=post, check=False)
    assert refused.returncode != 0 and "pathways-runs-only-posttraining" in refused.stderr, refused.stderr


class Recorder:
    """The usage recorder's program as the stack shipped it (its ConfigMap), run here with the recorder's own service
    account token against the API server: the CronJob's pod, but for the kubelet (kwok runs no Python image)."""

    def __init__(self, cluster: LocalCluster, workdir: Path):
        self.cluster, self.workdir = cluster, workdir
        program = cluster.get("configmap", "-n", USAGE_NAMESPACE, f"{USAGE_NAME}-program")["data"]
        (workdir / "recorder.py").write_text(program["recorder.py"])
        self.config = json.loads(program["config.json"])
        self.token = workdir / "token"
        self.token.write_text(cluster.kubectl("create", "token", USAGE_NAME, "-n", USAGE_NAMESPACE, "--duration=1h").stdout.strip())
        self.server = yaml.safe_load(cluster.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        self.ca = cluster.pki / "ca.crt"
        # the token alone (no client certificate beside it, which the API server would authenticate first)
        self.kubeconfig = workdir / "recorder.kubeconfig"
        self.kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "recorder",
            "clusters": [{"name": "local", "cluster": {"server": self.server, "certificate-authority": str(self.ca)}}],
            "contexts": [{"name": "recorder", "context": {"cluster": "local", "user": "recorder"}}],
            "users": [{"name": "recorder", "user": {"token": self.token.read_text()}}]}))

    def tick(self, config: dict[str, Any] | None = None) -> list[str]:
        path = self.workdir / "config.json"
        path.write_text(json.dumps(config or self.config))
        done = subprocess.run([sys.executable, "-I", str(self.workdir / "recorder.py"), str(path), "--server", self.server,
                               "--token-file", str(self.token), "--ca-file", str(self.ca)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        print(f"[teams] recorder: {done.stdout.strip()}")
        return done.stdout.splitlines()

    def can(self, *args: str) -> bool:
        answer = self.cluster.kubectl("auth", "can-i", *args, kubeconfig=self.kubeconfig, check=False)
        return answer.stdout.strip() == "yes"

    def record(self, team: str) -> float:
        data = self.cluster.get("configmap", "-n", USAGE_NAMESPACE, f"usage-{team}")["data"]
        return json.loads(data[max(data)])["chipSeconds"]


def test_a_team_over_its_budget_is_held_then_drained_by_the_recorder_and_deleting_runs_does_not_escape_it(cluster, teams, tmp_path):
    recorder = Recorder(cluster, tmp_path)
    # its identity: the teams' Workloads and ClusterQueues, its own ConfigMaps; nothing else
    assert recorder.can("list", "workloads.kueue.x-k8s.io", "-n", "team-evals")
    assert recorder.can("patch", "clusterqueues.kueue.x-k8s.io/team-evals")
    assert not recorder.can("patch", "clusterqueues.kueue.x-k8s.io/pathways")  # the stack's own queue
    assert not recorder.can("delete", "workloads.kueue.x-k8s.io", "-n", "team-evals")
    assert not recorder.can("list", "workloads.kueue.x-k8s.io", "-n", "pathways")
    assert not recorder.can("list", "pods", "-n", "team-evals")
    assert not recorder.can("create", "configmaps", "-n", "team-evals")
    assert recorder.can("update", "configmaps/usage-evals", "-n", USAGE_NAMESPACE)
    assert not recorder.can("update", f"configmaps/{USAGE_NAME}-program", "-n", USAGE_NAMESPACE)  # its settings: budgets
    # and its patch of a team's queue is held to the stop switch by the stack's policy (RBAC has no field scope)
    widened = cluster.kubectl("patch", "clusterqueue", "team-evals", "--type", "merge", "-p", json.dumps({"spec": {"cohortName": "elsewhere"}}),
                              kubeconfig=recorder.kubeconfig, check=False)
    assert widened.returncode != 0 and "the usage recorder may change a team queue's stopPolicy" in widened.stderr, widened.stderr

    teams.submit("evals", "shared", ["u-eval-0"])
    assert settled(cluster, lambda: teams.admitted("evals", "u-eval"), seconds=5) == 1
    time.sleep(2)  # some admitted time: over a budget of 0
    lines = recorder.tick()
    assert "team evals: held (ClusterQueue team-evals stopPolicy Hold): " in "\n".join(lines), lines
    assert any(line.startswith("team pretraining: ") for line in lines)  # every team recorded, with or without a hold
    held_at = time.monotonic()
    assert cluster.get("clusterqueue", "team-evals")["spec"]["stopPolicy"] == "Hold"
    assert recorder.record("evals") > 0
    teams.submit("evals", "shared", ["u-eval-1"])
    time.sleep(5)
    assert not is_true(workload(cluster, "team-evals", "u-eval-1"), "Admitted")
    assert is_true(workload(cluster, "team-evals", "u-eval-0"), "Admitted")  # Hold: running work goes on
    why = run_cli(cluster, teams.stack_file, teams.users["evals"], "why", "--team", "evals", "u-eval-1", "--json")
    assert why.returncode == 0, why.stderr
    assert json.loads(why.stdout)["reason"] == "over-budget", why.stdout
    # a team's member reads its own line, from the record; another team's is refused to it
    own = run_cli(cluster, teams.stack_file, teams.users["evals"], "teams", "--team", "evals", "--json")
    assert own.returncode == 0, own.stderr
    row = json.loads(own.stdout)
    assert row["overBudget"] and row["source"].startswith("record, updated") and row["leftChipHours"] == 0, row
    other = run_cli(cluster, teams.stack_file, teams.users["evals"], "teams", "--team", "pretraining")
    assert other.returncode != 0 and "read their own team's line only" in other.stderr, other.stderr

    # past teams[].drainAfterMinutes (1 here), Kueue evicts what the held queue admitted
    time.sleep(max(0.0, 61 - (time.monotonic() - held_at)))
    lines = recorder.tick()
    assert any(line.startswith("team evals: drained (ClusterQueue team-evals stopPolicy HoldAndDrain") for line in lines), lines
    reached(cluster, "Kueue evicts the drained team's admitted run", lambda: teams.admitted("evals", "u-eval"), lambda n: n == 0)
    evicted = [c for c in workload(cluster, "team-evals", "u-eval-0")["status"]["conditions"] if c["type"] == "Evicted"]
    print(f"[teams] the drained run's eviction: {evicted}")
    assert evicted, "Kueue recorded no eviction of the drained run"

    # deleting the runs does not lift the hold: the record keeps what they used
    used = recorder.record("evals")
    teams.clear()
    lines = recorder.tick()
    assert any(line.startswith("team evals: over budget, held") for line in lines), lines
    assert recorder.record("evals") >= used
    assert cluster.get("clusterqueue", "team-evals")["spec"]["stopPolicy"] == "HoldAndDrain"
    # a raised budget (the next pulumi up rewrites the recorder's settings) releases it the next minute
    raised = {**recorder.config, "teams": [{**t, "budgetChipHours": 10**6} if t["name"] == "evals" else t for t in recorder.config["teams"]]}
    lines = recorder.tick(raised)
    assert any(line.startswith("team evals: released") for line in lines), lines
    queue = cluster.get("clusterqueue", "team-evals")
    assert queue["spec"]["stopPolicy"] == "None" and "pathways/budget-hold" not in (queue["metadata"].get("annotations") or {})


def test_the_plans_admission_ceilings_are_the_real_kueues(cluster, teams):
    stack = resolve(teams.model)
    shares = kueue_manifest.slice_shares(stack)
    root_of = {t.cohort: QUEUE for t in stack.teams if t.cohort}
    cases = [("pretraining", "reserved"), ("posttraining", "reserved"), ("posttraining", "shared"), ("evals", "shared"),
             (None, "reserved")]  # owned; borrowed within a lending limit; all unowned; on the stack's own queue
    # an isolation domain's team on its own group: no more than its domain holds (its cohort lends nothing else)
    cases += [(d.teams[0], d.groups[0]) for d in stack.domains]
    measured = []
    for team, group in cases:
        queue = next(t.cluster_queue for t in stack.teams if t.name == team) if team else QUEUE
        most = ceiling(list(shares.values()), queue, group, root_of).slices
        ns = next(t.team_namespace for t in stack.teams if t.name == team) if team else stack.namespace
        tag = f"ceil-{(team or 'stack')[:4]}-{group[:3]}"
        (fits,) = teams.jobsets(team, group, [f"{tag}-at"], slices=most)
        (over,) = teams.jobsets(team, group, [f"{tag}-over"], slices=most)
        (worker,) = [rj for rj in over["spec"]["replicatedJobs"] if rj["replicas"] == most and rj["name"] != "pathways-head"]
        worker["replicas"] = most + 1  # what the plan refuses, made by hand
        cluster.kubectl("create", "-f", "-", stdin=yaml.safe_dump(fits), kubeconfig=teams.kubeconfig(team), timeout=120)
        cluster.wait_for(f"{tag}-at admitted", lambda ns=ns, tag=tag: is_true(workload(cluster, ns, f"{tag}-at"), "Admitted"),
                         timeout=180)
        cluster.kubectl("delete", "jobset", "-n", ns, f"{tag}-at", "--wait=true", timeout=180)
        cluster.kubectl("create", "-f", "-", stdin=yaml.safe_dump(over), kubeconfig=teams.kubeconfig(team), timeout=120)
        _, verdict = kueue_judged(cluster, ns, lambda ns=ns, tag=tag: workload(cluster, ns, f"{tag}-over"), f"{tag}-over",
                                  "insufficient quota", timeout=120)
        time.sleep(5)
        assert not is_true(workload(cluster, ns, f"{tag}-over"), "Admitted")
        cluster.kubectl("delete", "jobset", "-n", ns, f"{tag}-over", "--wait=true", timeout=180)
        measured.append({"queue": queue, "group": group, "ceiling": most, "kueue": verdict.message[:200]})
    print(f"[teams] admission ceilings: {json.dumps(measured)}")
    assert [m["ceiling"] for m in measured] == [4, 2, 12, 12, 2, *(sum(t.slices[g].slices for t in stack.teams if t.name in d.teams
                                                                    and g in t.slices) for d in stack.domains for g in d.groups[:1])]


def _pod(namespace: str, tolerations: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "reach", "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": IMAGE}], "tolerations": tolerations}}


def test_an_isolation_domains_runs_land_on_its_own_nodes_and_no_other_namespace_can_reach_them(cluster, teams):
    """#73.2 on the real API server and Kueue: the example's domain (derived from its file) gets its own ClusterQueues
    (Active), its team's run is admitted on its own head and TPU flavors and its pods run on nodes labelled and tainted
    with its name, and the guard pathways-isolation refuses a pod of any other namespace that tolerates its taint, and
    one of its own that tolerates every taint (server-side dry runs as the cluster admin: admission, not RBAC)."""
    stack = resolve(teams.model)
    (domain,) = stack.domains
    team = next(t for t in stack.teams if t.name == domain.teams[0])
    for queue in (domain.cluster_queue, team.cluster_queue):
        assert is_true(cluster.get("clusterqueue", queue), "Active"), queue
    teams.submit(team.name, domain.groups[0], ["iso-0"])
    ns = team.team_namespace
    admitted = cluster.wait_for("the domain's run admitted", lambda: (w := workload(cluster, ns, "iso-0")) and is_true(w, "Admitted") and w,
                                timeout=180, interval=2)
    flavors = {a["name"]: set(a["flavors"].values()) for a in admitted["status"]["admission"]["podSetAssignments"]}
    assert set().union(*flavors.values()) == {domain.head_flavor, kueue_manifest.flavor_name(stack.slices[[g.name for g in stack.slices].index(domain.groups[0])])}, flavors

    jobs = {rj["name"] for rj in teams.jobsets(team.name, domain.groups[0], ["iso-0"])[0]["spec"]["replicatedJobs"]}

    def placed() -> list[dict[str, Any]]:
        """Every replicated job's pods (the head's and the workers') made and scheduled."""
        pods = cluster.get("pods", "-n", ns, "-l", "jobset.sigs.k8s.io/jobset-name=iso-0")["items"]
        made = {p["metadata"]["labels"].get("jobset.sigs.k8s.io/replicatedjob-name") for p in pods}
        return pods if made == jobs and all(p["spec"].get("nodeName") for p in pods) else []
    pods = cluster.wait_for("the domain's run scheduled", placed, timeout=240, interval=2)
    nodes = {n["metadata"]["name"]: n for n in cluster.get("nodes")["items"]}
    for p in pods:
        node = nodes[p["spec"]["nodeName"]]
        assert node["metadata"]["labels"].get("pathways/isolation") == domain.name, (p["metadata"]["name"], node["metadata"]["name"])
        assert {"key": "pathways/isolation", "value": domain.name, "effect": "NoSchedule"} in node["spec"]["taints"]
    print(f"[teams] isolation domain {domain.name}: {len(pods)} pod(s) of iso-0 on {sorted({p['spec']['nodeName'] for p in pods})}")
    toleration = {"key": "pathways/isolation", "operator": "Equal", "value": domain.name, "effect": "NoSchedule"}
    others = [t.team_namespace for t in stack.teams if t.name not in domain.teams] + [stack.namespace]
    for where, tolerations, allowed in [*((o, [toleration], False) for o in others), (ns, [toleration], True),
                                        (ns, [{"operator": "Exists"}], False)]:
        proc = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(_pod(where, tolerations)), check=False)
        assert (proc.returncode == 0) == allowed, (where, tolerations, proc.stderr)
        if not allowed:  # every taint tolerated: the node guard refuses it first in a Pathways namespace (both do)
            assert "pathways-isolation" in proc.stderr or (tolerations[0].get("operator") == "Exists" and "pathways-nodes-reserved" in proc.stderr), proc.stderr
    # a pod set that requests nothing gets no flavor from Kueue: one of the domain's Jobs written to select the shared
    # head pool (as the Job controller would create its pod) is refused, or it would act as the shared node account
    escape = _pod(ns, [{"key": "pathways/role", "operator": "Equal", "value": "head", "effect": "NoSchedule"}])
    escape["spec"].update(hostNetwork=True, nodeSelector={"pathways/role": "head"})
    proc = cluster.kubectl("create", "--dry-run=server", "--as=system:serviceaccount:kube-system:job-controller", "-f", "-",
                           stdin=yaml.safe_dump(escape), check=False)
    assert proc.returncode != 0 and "pathways-isolation" in proc.stderr and "selects its domain's nodes" in proc.stderr, proc.stderr
    teams.clear()


def _cri_log(path: Path, lines: list[str]) -> None:
    """A container log as the kubelet keeps it (CRI format: time, stream, tag, message), which kwok's stand-in
    kubelet serves for the pod a kwok.x-k8s.io Logs object names (tools/cluster/local.py enables that CRD)."""
    path.write_text("".join(f"2026-12-07T10:00:{i:02d}.000000000Z stderr F {line}\n" for i, line in enumerate(lines)))


def test_a_team_members_day_one_with_the_installed_client_mounts_the_teams_bucket_and_reads_a_workers_log_after_the_run(
        cluster, teams, tmp_path):
    """#74's day one for a member of a team, with `pathways-run` as installed (make run-client), from a folder of code
    outside the checkout (PATHWAYS_STACK_CONFIG, KUBECONFIG): `submit --team --workdir . --mount /data=gs://<the team's
    data bucket>` (no image) lands in the team's namespace as the runs' service account with the bucket mounted
    read-only; while it runs `logs --worker 0` reads that worker's Pathways server log through the API server from the
    node's kubelet (kwok's stand-in); once the program ended its workers are gone with their Jobs, `logs` still
    prints the program's output and `logs --worker 0` names the Cloud Logging command, as after `delete`; a notebook
    for the team saves its files to the team's writable bucket and prints `--team`."""
    from tests_e2e.test_runs import CLIENT

    member = "pretraining"
    team = teams.model.team(member)
    assert team is not None
    data = next(b.name for b in team.buckets if b.read_only)  # the example's, whatever they are named
    work = next(b.name for b in team.buckets if not b.read_only)
    group = next(iter(team.slices))
    ns = team.team_namespace
    code = tmp_path / "my-model"
    code.mkdir()
    (code / "train.py").write_text("import pathwaysutils\npathwaysutils.initialize()\nimport jax\nprint(jax.devices())\n")
    env = {k: v for k, v in cluster.env.items() if k != "PYTHONPATH"}
    env.update(PATHWAYS_STACK_CONFIG=str(teams.stack_file), KUBECONFIG=str(teams.users[member]))

    def client(*args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([str(CLIENT), *args], cwd=code, env=env, capture_output=True, text=True, timeout=300)
        with open(cluster.workdir / "runs-session.txt", "a", encoding="utf-8") as out:
            out.write(f"$ pathways-run {' '.join(args)}\n{proc.stdout}{proc.stderr}\n")
        return proc

    submitted = client("submit", "--team", member, "--name", "day-one", "--slice-group", group, "--slices", "1", "--workdir", ".",
                       "--mount", f"/data=gs://{data}", "--", "python3", "train.py")
    assert submitted.returncode == 0, submitted.stderr
    assert f"run day-one submitted to {ns} on queue" in submitted.stdout, submitted.stdout
    assert f"its output:      pathways-run logs --team {member} day-one --follow" in submitted.stdout, submitted.stdout
    running = wait_running(cluster, ns, "day-one", 2, timeout=180)
    (head,) = [p for p in running if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "pathways-head"]
    (worker,) = [p for p in running if p is not head]
    assert head["spec"]["serviceAccountName"].startswith("pathways-runs-"), head["spec"]  # the account the bucket is granted to
    program = next(c for c in head["spec"]["containers"] if c["name"] == "jax-program")
    (mount,) = [m for m in program["volumeMounts"] if m["mountPath"] == "/data"]
    volume = next(v for v in head["spec"]["volumes"] if v["name"] == mount["name"])
    assert volume["csi"]["volumeAttributes"]["bucketName"] == data and volume["csi"]["readOnly"] is True, volume

    # while it runs: a worker's Pathways server log and the program's output, through the API server from the node's
    # kubelet (kwok's stand-in serves the files these Logs objects name for the two pods)
    logs = tmp_path / "logs"
    logs.mkdir()
    _cri_log(logs / "worker.log", ["I1207 server.cc:88] Pathways worker serving on port 29001", "I1207 step 100 done, worker 0"])
    _cri_log(logs / "head.log", ["[TpuDevice(id=0), TpuDevice(id=1), TpuDevice(id=2), TpuDevice(id=3)]"])
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([
        {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs", "metadata": {"name": p["metadata"]["name"], "namespace": ns},
         "spec": {"logs": [{"containers": [c], "logsFile": str(logs / f)}]}}
        for p, c, f in ((worker, "pathways-worker", "worker.log"), (head, "jax-program", "head.log"))]))
    read = cluster.wait_for("the worker's log through the API server", lambda: (r := client("logs", "--team", member, "day-one", "--worker", "0"))
                            .returncode == 0 and r, timeout=60, interval=2)
    assert read.stdout == "I1207 server.cc:88] Pathways worker serving on port 29001\nI1207 step 100 done, worker 0\n", read.stdout + read.stderr

    # the program ends (kwok runs none: the tier ends the head's pod as the program would, exit 0). Pathways workers
    # serve until stopped: the JobSet completes on its head and deletes the workers' Jobs, pods and all (jobset
    # v0.12.0 jobset_controller.go: a finished JobSet deletes its active Jobs), so a worker's log after the run is in
    # Cloud Logging; the head's pod stays
    cluster.kubectl("annotate", "pod", "-n", ns, head["metadata"]["name"], "e2e.pathways/fail=true", "e2e.pathways/exit-code=0")
    cluster.wait_for("the run's workers gone with their Jobs", lambda: [p["metadata"]["name"] for p in
                     cluster.get("pods", "-n", ns, "-l", "jobset.sigs.k8s.io/jobset-name=day-one")["items"]] == [head["metadata"]["name"]],
                     timeout=120, interval=1)
    said = client("logs", "--team", member, "day-one")
    assert (said.returncode, said.stdout) == (0, "[TpuDevice(id=0), TpuDevice(id=1), TpuDevice(id=2), TpuDevice(id=3)]\n"), said.stderr
    ended = client("logs", "--team", member, "day-one", "--worker", "0")
    assert ended.returncode == 1 and f"pathways-run logs --team {member} day-one --worker 0 --cloud" in ended.stderr, ended.stderr
    cloud = client("logs", "--team", member, "day-one", "--worker", "0", "--cloud")
    assert cloud.returncode == 0 and f'resource.labels.namespace_name="{ns}"' in cloud.stdout and "job-index\"=\"0\"" in cloud.stdout, cloud.stdout
    for p in (worker, head):  # kwok's objects, not the stack's
        cluster.kubectl("delete", "logs.kwok.x-k8s.io", "-n", ns, p["metadata"]["name"], "--wait=false", check=False)
    assert client("delete", "--team", member, "day-one").returncode == 0
    gone = client("logs", "--team", member, "day-one", "--worker", "0")
    assert gone.returncode == 1 and f"no run day-one in namespace {ns}" in gone.stderr and "--worker 0 --cloud" in gone.stderr, gone.stderr

    # a notebook for the team keeps its files in the team's writable bucket, and says how to open it (--team)
    nb = client("submit", "--team", member, "--name", "nb", "--slice-group", group, "--slices", "1", "--notebook")
    assert nb.returncode == 0, nb.stderr
    assert f"the notebook:    pathways-run notebook --team {member} nb" in nb.stdout, nb.stdout
    assert f"its files:       saved to gs://{work}/notebooks/nb/<time>/ when it stops" in nb.stdout, nb.stdout
    (nb_head,) = [p for p in wait_running(cluster, ns, "nb", 2, timeout=180)
                  if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "pathways-head"]
    program = next(c for c in nb_head["spec"]["containers"] if c["name"] == "jax-program")
    assert program["command"][:2] == ["/bin/sh", "-c"] and "jupyter" in program["command"], program["command"][:6]
    (saves,) = [m for m in program["volumeMounts"] if m["mountPath"] == "/notebook-saves"]
    volume = next(v for v in nb_head["spec"]["volumes"] if v["name"] == saves["name"])
    assert volume["csi"]["volumeAttributes"]["bucketName"] == work and volume["csi"]["readOnly"] is False, volume
    assert nb_head["spec"]["terminationGracePeriodSeconds"] >= 120
    assert client("delete", "--team", member, "nb").returncode == 0
