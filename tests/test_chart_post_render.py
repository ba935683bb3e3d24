"""The controller charts' post-renderer (components/manifests/chart_post_render.py): the webhook certificate Secret the
controller's rotator fills is applied without data, so `pulumi up --refresh` has nothing to set back (the JobSet
chart renders four empty keys; applied as they are, a refresh-and-up replaced the Secret and the JobSet webhook
refused every JobSet until the rotator wrote new certificates). The real provider runs it in the real-engine tier
(tests_e2e/test_verify.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from components.constants import HELM_CHART
from components.manifests import chart_post_render
from components.manifests.chart_post_render import without_rotated_cert_data
from infra.offline import charts
from infra.offline.charts import ChartError, chart_dir, render_chart
from tests.conftest import every_stack, stack_plan

JOBSET_SECRET = """\
---
# Source: jobset/templates/internalcert/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  labels:
    app.kubernetes.io/name: jobset
  name: 'jobset-webhook-server-cert'
  namespace: 'jobset-system'
data:
  ca.crt: ""
  ca.key: ""
  tls.crt: ""
  tls.key: ""
"""
APPLIED = JOBSET_SECRET[:JOBSET_SECRET.index("\ndata:\n") + 1]


def test_the_rotated_secret_loses_its_data_and_nothing_else():
    assert APPLIED.endswith("  namespace: 'jobset-system'\n")
    assert without_rotated_cert_data(JOBSET_SECRET) == APPLIED
    # inline data, a comment after the kind, the name quoted with double quotes, the document at the end without a newline
    inline = 'apiVersion: v1\nkind: Secret # the rotator fills it\nmetadata:\n  name: "kueue-webhook-server-cert"\ndata: {}\ntype: Opaque'
    assert without_rotated_cert_data(inline) == 'apiVersion: v1\nkind: Secret # the rotator fills it\nmetadata:\n  name: "kueue-webhook-server-cert"\ntype: Opaque'


@pytest.mark.parametrize("doc", [
    # another Secret: the stack's own data stays
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: registry-credentials\ndata:\n  token: eA==\n",
    # a ConfigMap of that name is no certificate Secret
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: jobset-webhook-server-cert\ndata:\n  a: b\n",
    # a label, not the name, ends like it
    "apiVersion: v1\nkind: Secret\nmetadata:\n  labels:\n    name: x-webhook-server-cert\n  name: other\ndata:\n  a: eA==\n",
    # no data to drop
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: lws-webhook-server-cert\n  namespace: lws-system\n",
    # a document it cannot read as one: kept whole
    "kind: Secret\nmetadata:\ndata:\n  a: b\n",
])
def test_every_other_document_is_kept_byte_for_byte(doc):
    manifest = f"---\n# Source: a.yaml\n{doc}{JOBSET_SECRET}"
    assert without_rotated_cert_data(manifest) == f"---\n# Source: a.yaml\n{doc}{APPLIED}"


def test_the_command_the_provider_runs_is_the_same_function():
    assert chart_post_render.COMMAND == "python3"
    # the program text is self-contained: python3 -c runs it with no project module on its path
    proc = subprocess.run([sys.executable, "-I", *chart_post_render.args()], input=JOBSET_SECRET * 2, capture_output=True, text=True,
                          timeout=60, cwd="/")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == without_rotated_cert_data(JOBSET_SECRET * 2) == APPLIED * 2


@every_stack("name")
def test_each_controller_chart_applies_no_certificate_data_and_everything_else_as_rendered(name):
    plan = stack_plan(name)
    for chart in plan.by_type(HELM_CHART):
        post = chart.input("postRenderer")
        if chart.name not in ("jobset", "kueue", "lws"):  # the serving stack's inference pool chart renders no such Secret
            assert not post, chart.name
            continue
        assert post == {"command": chart_post_render.COMMAND, "args": chart_post_render.args()}, chart.name
        args = (chart_dir(chart), str(chart.input("name") or chart.name), str(chart.input("namespace")), chart.input("values") or {})
        rendered, applied = render_chart(*args), render_chart(*args, post)
        secret = f"{chart.name}-webhook-server-cert"
        assert [o["metadata"]["name"] for o in applied if o["kind"] == "Secret"] == [secret], chart.name
        expected = [{k: v for k, v in o.items() if k != "data"} if o["kind"] == "Secret" and o["metadata"]["name"] == secret else o
                    for o in rendered]
        assert applied == expected, chart.name


def test_a_post_renderer_that_fails_or_is_missing_is_one_line(tmp_path):
    path = tmp_path / "chart"
    (path / "templates").mkdir(parents=True)
    (path / "Chart.yaml").write_text("apiVersion: v2\nname: demo\nversion: 1.0.0\n")
    (path / "templates" / "sa.yaml").write_text("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa}\n")
    with pytest.raises(ChartError, match=r"^chart rel: its post-renderer failed: RuntimeError: no$"):
        render_chart(path, "rel", "team", {}, {"command": "python3", "args": ["-c", "raise RuntimeError('no')"]})
    with pytest.raises(ChartError, match=r"^chart rel: its post-renderer 'no-such-renderer' is not on PATH$"):
        render_chart(path, "rel", "team", {}, {"command": "no-such-renderer"})
    assert charts._digest(path, "rel", "team", {}, None) != charts._digest(path, "rel", "team", {}, {"command": "python3"})


def test_a_post_renderer_that_hangs_is_one_line(tmp_path, monkeypatch):
    path = tmp_path / "chart"
    (path / "templates").mkdir(parents=True)
    (path / "Chart.yaml").write_text("apiVersion: v2\nname: demo\nversion: 1.0.0\n")
    (path / "templates" / "sa.yaml").write_text("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa}\n")
    monkeypatch.setattr(charts, "POST_RENDER_TIMEOUT_SECONDS", 0.5)
    with pytest.raises(ChartError, match=r"^chart rel: its post-renderer did not finish in 0.5 s$"):
        render_chart(path, "rel", "team", {}, {"command": "python3", "args": ["-c", "import time; time.sleep(10)"]})
