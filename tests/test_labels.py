"""gcp:defaultLabels: the GCP provider's own setting labels the GCP resources; the stack puts the same labels on
every Kubernetes object it creates (issue #28.7: cost attribution)."""

from __future__ import annotations

import json

import pytest

from components.model.config import load
from components.model.errors import ConfigError
from infra.offline.render import manifests
from infra.offline.stackfile import flatten
from tests.conftest import config_with, plan_of

LABELS = {"team": "ml-platform", "cost-center": "c123"}


def labelled(**changes):
    cfg = config_with(pathwaysVersion="jax-0.5.3", workloads=[{"name": "nb", "mode": "interactive"},
                                                              {"name": "chat", "mode": "serve", "sliceGroup": "main",
                                                               "serve": {"engine": "jetstream", "model": "llama3.1-8b", "weights": "gs://acme-models/w"}}], **changes)
    cfg["pathways:slices"] = [{"name": "main", "tpu": "v6e-16", "count": 3}]
    cfg["gcp:defaultLabels"] = dict(LABELS)
    return cfg


def test_every_kubernetes_object_the_stack_creates_carries_the_labels():
    plan = plan_of(labelled())
    objects = manifests(plan)
    assert {o["kind"] for o in objects} >= {"Namespace", "JobSet", "LeaderWorkerSet", "Service", "ClusterQueue", "LocalQueue",
                                            "PriorityClass", "ValidatingAdmissionPolicy", "ResourceFlavor"}
    for o in objects:
        assert LABELS.items() <= (o["metadata"].get("labels") or {}).items(), (o["kind"], o["metadata"]["name"])
    # the objects' own labels stay (and would win a clash)
    (js,) = [o for o in objects if o["kind"] == "JobSet"]
    assert js["metadata"]["labels"]["pathways/workload"] == "nb"
    (ns,) = [o for o in objects if o["kind"] == "Namespace" and o["metadata"]["name"] == "pathways"]
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_the_plan_summary_names_the_labels(capsys, tmp_path):
    import yaml

    from infra.offline.__main__ import main

    path = tmp_path / "Pulumi.labelled.yaml"
    path.write_text(yaml.safe_dump({"config": labelled()}))
    assert main(["plan", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "  cost-center=c123, team=ml-platform" in out and "Labels (gcp:defaultLabels" in out


def _errors(labels) -> list[str]:
    cfg = labelled()
    cfg["gcp:defaultLabels"] = labels
    flat, _ = flatten(cfg)
    raw = {k.split(":", 1)[1]: (json.loads(v) if v[:1] in "[{" else v) for k, v in flat.items()}
    with pytest.raises(ConfigError) as err:
        load(raw, stack="test")
    return str(err.value).splitlines()


@pytest.mark.parametrize("labels,text", [
    ({"Team": "ml"}, "is not a label key"),
    ({"team": "ML"}, "is not a label value valid on GCP and Kubernetes alike"),
    ({"team": "ml-"}, "starting and ending with a letter or digit"),  # GCP takes it, Kubernetes does not
    ({"team": "x" * 64}, "up to 63"),
    ({"pathways-stack": "x"}, "is the stack's own label"),
    ({f"k{i}": "v" for i in range(61)}, "at most 60"),
])
def test_bad_labels_give_one_clear_error(labels, text):
    lines = _errors(labels)
    assert any(line.startswith("gcp:defaultLabels") and text in line for line in lines), lines
