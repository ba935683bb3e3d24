"""Workloads as Google's own generators shape them (pathwaysutils 0.1.13 experimental/gke/jobset.py,
xpk 1.16, the PathwaysJob controller): elastic slices, secret env, same-release images, restarts."""

from __future__ import annotations

import json

import pytest
import yaml

from components.model.config import load
from components.model.errors import ConfigError
from infra.config import secret_config_keys
from infra.offline import engine, stackfile
from infra.offline.__main__ import main as offline_main
from infra.offline.render import check_plan, manifests
from infra.offline.stackfile import flatten
from tests.conftest import config_with, plan_of

VERSION = "jax-0.9.0"
JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
SECRET = "kubernetes:core/v1:Secret"
PLAINTEXT = "s3cr3t-token-value"


def batch(**extra):
    return {"name": "train", "image": "example.com/t:1", **extra}


def jobset(plan, name="train"):
    return next(o for o in manifests(plan) if o["kind"] == "JobSet" and o["metadata"]["name"] == name)


def pods(js):
    return [rj["template"]["spec"]["template"]["spec"] for rj in js["spec"]["replicatedJobs"]]


def raw(config):
    flat, secrets = flatten(config)
    return {k.split(":", 1)[1]: (json.loads(v) if v[:1] in "[{" else v) for k, v in flat.items()}, frozenset(secrets)


def problem(config) -> str:
    values, secrets = raw(config)
    with pytest.raises(ConfigError) as err:
        load(values, "test", secrets)
    return str(err.value)


# --- elastic slices ------------------------------------------------------------------------


# pathwaysutils and the PathwaysJob docs: 0 < N <= slices (its fixture model_lite_tpuv5e_4x8.yaml uses N = slices)
@pytest.mark.parametrize("missing,slices,ok", [(1, 2, True), (2, 3, True), (2, 2, True), (1, 1, True), (3, 2, False), (4, 3, False)])
def test_elastic_max_missing_slices_is_at_most_the_slices(missing, slices, ok):
    cfg = config_with(slices=[{"name": "main", "tpu": "v6e-16", "count": 3}], pathwaysVersion=VERSION,
                      workloads=[batch(slices=slices, elastic={"maxMissingSlices": missing})])
    if ok:
        proxy = pods(jobset(plan_of(cfg)))[0]["initContainers"][1]
        assert f"--num_elastic_slices={missing}" in proxy["args"]
    else:
        text = problem(cfg)
        assert text.startswith("pathways:workloads[0].elastic.maxMissingSlices: ")
        assert "how many slices the job may lose" in text


def test_elastic_default_is_one_missing_slice():
    cfg = config_with(pathwaysVersion=VERSION, workloads=[batch(elastic={})])
    proxy = pods(jobset(plan_of(cfg)))[0]["initContainers"][1]
    assert [a for a in proxy["args"] if a.startswith("--num_elastic")] == ["--num_elastic_slices=1"]


# --- secret env ----------------------------------------------------------------------------


def _cli_config():
    # What the CLI hands the program after `pulumi config set --secret --path 'pathways:workloads[0].env.TOKEN'`:
    # the plaintext, and the whole top-level key listed as secret.
    flat, _ = flatten(config_with(pathwaysVersion=VERSION, workloads=[batch(env={"TOKEN": PLAINTEXT, "RUN": "r1"})]))
    return flat


def test_secret_env_never_reaches_the_jobset_or_the_plan():
    plan = engine.run(_cli_config(), "test", ("pathways:workloads",))
    assert PLAINTEXT not in json.dumps(plan.to_json())
    secret = next(r for r in plan.by_type(SECRET) if r.input("metadata.name") == "train-env")
    assert secret.input("stringData") == stackfile.SECRET  # masked: a Pulumi secret in state and previews
    js = plan.one(JOBSET)
    assert secret.urn in js.dependencies
    (user,) = pods(jobset(plan))[0]["containers"]
    env = {e["name"]: e for e in user["env"]}
    assert env["TOKEN"] == {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "train-env", "key": "TOKEN"}}}
    assert env["RUN"]["valueFrom"]["secretKeyRef"]["key"] == "RUN"  # every value of a secret key stays secret
    assert check_plan(plan)["train"].violations == []


def test_plain_env_stays_plain():
    flat, _ = flatten(config_with(pathwaysVersion=VERSION, workloads=[batch(env={"RUN": "r1"})]))
    plan = engine.run(flat, "test")
    (user,) = pods(jobset(plan))[0]["containers"]
    assert {"name": "RUN", "value": "r1"} in user["env"]
    assert not [r for r in plan.by_type(SECRET) if r.input("metadata.name") == "train-env"]


def test_cli_secret_keys_are_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps(["pathways:workloads", "other:key"]))
    assert secret_config_keys(["pathways:workloads", "pathways:slices", "other:key"]) == frozenset({"pathways:workloads"})


def test_offline_plan_accepts_a_nested_secure_value_and_masks_it(tmp_path, capsys):
    cfg = config_with(pathwaysVersion=VERSION, workloads=[batch(env={"TOKEN": {"secure": "v1:AAAAciphertext"}})])
    path = tmp_path / "Pulumi.sec.yaml"
    path.write_text(yaml.safe_dump({"config": cfg}))
    assert offline_main(["plan", "--config", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    assert "ciphertext" not in out
    doc = json.loads(out)
    secret = next(r for r in doc["resources"] if r["type"] == SECRET and r["inputs"]["metadata"]["name"] == "train-env")
    assert secret["inputs"]["stringData"] == stackfile.SECRET


@pytest.mark.parametrize("config,key", [
    (config_with(pathwaysVersion=VERSION, workloads=[batch(image={"secure": "x"})]), "pathways:workloads[0].image"),
    (config_with(pathwaysVersion=VERSION, cluster={"name": {"secure": "x"}}), "pathways:cluster.name"),
])
def test_secrets_where_they_would_leak_are_refused(tmp_path, capsys, config, key):
    path = tmp_path / "Pulumi.sec.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    assert offline_main(["plan", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {key}: a secret value here would reach resources in plaintext") and "Traceback" not in err


def test_a_secret_top_level_key_other_than_workloads_is_refused_the_same_way_under_pulumi():
    flat, _ = flatten(config_with())
    from infra.errors import InvalidStackConfig

    with pytest.raises(InvalidStackConfig, match=r"^pathways:slices: is set as a secret, but only workload env values"):
        engine.run(flat, "test", ("pathways:slices",))


# --- same-release images ---------------------------------------------------------------------


def test_a_tagged_server_override_brings_its_own_proxy():
    plan = plan_of(config_with(pathwaysVersion=VERSION, workloads=[batch(serverImage="example.com/pw/server:jax-0.9.0-patch1")]))
    head = pods(jobset(plan))[0]
    images = {c["name"]: c["image"] for c in head["initContainers"]}
    assert images == {"pathways-rm": "example.com/pw/server:jax-0.9.0-patch1", "pathways-proxy": "example.com/pw/proxy_server:jax-0.9.0-patch1"}


@pytest.mark.parametrize("override,text", [
    ({"serverImage": "example.com/pw/server@sha256:" + "a" * 64}, "required when serverImage is"),
    ({"serverImage": "example.com/custom-build:v1"}, "required when serverImage is"),
    ({"serverImage": "example.com/pw/server:jax-0.9.0", "proxyImage": "example.com/pw/proxy_server:jax-0.6.0"}, "its tag jax-0.6.0 differs from the server's jax-0.9.0"),
    ({"proxyImage": "example.com/pw/proxy_server:jax-0.6.0"}, "its tag jax-0.6.0 differs from the server's jax-0.9.0"),
    ({"serverImage": "example.com/pw/server:jax-0.9.0", "proxyImage": "example.com/pw/proxy_server@sha256:" + "b" * 64}, "cannot be compared"),
])
def test_mismatched_image_overrides_are_refused(override, text):
    message = problem(config_with(pathwaysVersion=VERSION, workloads=[batch(**override)]))
    assert message.startswith("pathways:workloads[0].proxyImage: ") and text in message


# --- restarts ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode,per_host,expected", [
    ("batch", None, 4 * 4), ("interactive", None, 4 * 1_000_000), ("batch", 10, 4 * 10), ("interactive", 3, 4 * 3),
])
def test_worker_backoff_per_mode(mode, per_host, expected):
    w = {"name": "w", "mode": mode, **({"image": "example.com/t:1"} if mode == "batch" else {})}
    if per_host:
        w["workerRestartsPerHost"] = per_host
    js = jobset(plan_of(config_with(pathwaysVersion=VERSION, workloads=[w])), "w")
    assert js["spec"]["replicatedJobs"][1]["template"]["spec"]["backoffLimit"] == expected  # v6e-16: 4 hosts


def test_unlimited_backoff_fits_an_int32():
    plan = plan_of(config_with(slices=[{"name": "main", "tpu": "v5p-17920"}], pathwaysVersion=VERSION,
                               workloads=[{"name": "w", "mode": "interactive"}]))
    assert jobset(plan, "w")["spec"]["replicatedJobs"][1]["template"]["spec"]["backoffLimit"] == 2**31 - 1  # 2240 hosts


# --- env Google's generators set -------------------------------------------------------------


def test_rm_and_workers_know_their_jobset():
    js = jobset(plan_of(config_with(pathwaysVersion=VERSION, workloads=[batch()])))
    rm = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["initContainers"][0]
    (worker,) = pods(js)[1]["containers"]
    for c in (rm, worker):
        env = {e["name"]: e.get("valueFrom") for e in c["env"]}
        assert env["JOBSET_NAME"] == {"fieldRef": {"fieldPath": "metadata.annotations['jobset.sigs.k8s.io/jobset-name']"}}
        assert env["REPLICATED_JOB_NAME"] == {"fieldRef": {"fieldPath": "metadata.annotations['jobset.sigs.k8s.io/replicatedjob-name']"}}


def test_a_sidecar_that_leaves_the_worker_too_little_is_refused():
    sidecar = {"image": "example.com/sc:20261101-python_3.12-jax_0.9.0", "memory": "300Gi", "shmSize": "100Gi"}
    text = problem(config_with(pathwaysVersion=VERSION, workloads=[batch(colocatedPython=sidecar)]))
    assert text.startswith("pathways:workloads[0].colocatedPython: cpu 4, memory 300Gi + shmSize 100Gi leave the Pathways worker less than half of a ct6e-standard-4t")
