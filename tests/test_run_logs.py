"""`logs` reaches every pod and lasts (#74.5): a worker's log (--worker N [--host H]), the last attempt (--previous),
and the Cloud Logging query and link that outlive `delete` (--cloud, no cluster needed)."""

from __future__ import annotations

import json
import stat
from urllib.parse import unquote

from infra.run.__main__ import main as run_main
from infra.run.cloud_logs import link, query
from tests.conftest import GROUPS_RBAC, config_with, write_stack_file

CONFIG = config_with(pathwaysVersion="jax-0.9.0", cluster=GROUPS_RBAC, runs={"submitters": [{"name": "researchers@example.com"}]})


def test_the_cloud_logging_query_names_the_runs_pods_as_gke_labels_them():
    q = query("pathways-test", "pathways", "exp", worker=2)
    assert q == ('resource.type="k8s_container" resource.labels.cluster_name="pathways-test" resource.labels.namespace_name="pathways" '
                 'labels."k8s-pod/jobset_sigs_k8s_io/jobset-name"="exp" labels."k8s-pod/jobset_sigs_k8s_io/replicatedjob-name"!="pathways-head" '
                 'labels."k8s-pod/jobset_sigs_k8s_io/job-index"="2"')
    url = link(q, "p-123")
    assert url.startswith("https://console.cloud.google.com/logs/query;query=") and url.endswith("?project=p-123")
    assert unquote(url.split(";query=", 1)[1].split("?project=")[0]) == q and " " not in url


def test_logs_cloud_needs_no_cluster_and_a_worker_and_the_last_attempt_are_asked_of_kubectl(tmp_path, capsys, monkeypatch):
    path = write_stack_file(tmp_path, CONFIG)
    assert run_main(["logs", "--config", str(path), "exp", "--cloud"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == query("pathways-test", "pathways", "exp") and "open: https://console.cloud.google.com/logs/query;query=" in err
    # a stand-in kubectl: the run, its worker pod of slice 1 host 2, and the logs call recorded
    calls = tmp_path / "calls"
    pod = {"items": [{"metadata": {"name": "exp-worker-1-2-abc", "creationTimestamp": "2026-12-07T00:00:00Z"}}]}
    (tmp_path / "pods.json").write_text(json.dumps(pod))
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(f"""#!/bin/sh
echo "$@" >> '{calls}'
case "$*" in
  *"get jobsets"*) echo '{{"metadata": {{"name": "exp"}}}}';;
  *"get pods"*) cat '{tmp_path / "pods.json"}';;
  *logs*) echo 'step 7';;
esac
""")
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("KUBECTL", str(kubectl))
    assert run_main(["logs", "--config", str(path), "exp", "--worker", "1", "--host", "2", "--previous"]) == 0
    said = calls.read_text().splitlines()
    assert any("jobset.sigs.k8s.io/job-index=1,batch.kubernetes.io/job-completion-index=2" in c for c in said), said
    assert said[-1].endswith("logs -n pathways exp-worker-1-2-abc -c pathways-worker --previous"), said


def test_logs_of_a_run_or_worker_that_is_gone_point_to_cloud_logging_with_the_command_that_works(tmp_path, capsys, monkeypatch):
    path = write_stack_file(tmp_path, CONFIG)
    kubectl = tmp_path / "kubectl"
    kubectl.write_text("""#!/bin/sh
case "$*" in
  *"get jobsets"*"gone"*) echo 'Error from server (NotFound): jobsets.jobset.x-k8s.io "gone" not found' >&2; exit 1;;
  *"get jobsets"*) echo '{"metadata": {"name": "ended"}}';;
  *"get pods"*) echo '{"items": []}';;
esac
""")
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("KUBECTL", str(kubectl))
    assert run_main(["logs", "--config", str(path), "gone", "--worker", "0"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].endswith("no run gone in namespace pathways; a run deleted (or removed after its ttl) keeps its logs in Cloud Logging: "
                           f"python -m infra.run logs --config {path} gone --worker 0 --cloud"), err
    assert run_main(["logs", "--config", str(path), "ended", "--worker", "3"]) == 1
    err = capsys.readouterr().err
    assert f"its logs after its pods went: python -m infra.run logs --config {path} ended --worker 3 --cloud" in err, err
