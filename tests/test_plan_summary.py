"""The plan's summary: what each committed stack holds and costs, written out from the platform's docs.

Expected shapes come from GKE's TPU tables ("Plan TPUs in GKE"), not from the catalog under test:
v6e-4 = 2x2 on one ct6e-standard-4t VM; v6e-16 = 4x4 on four; v5p-128 = 4x4x4 (64 chips) on sixteen
ct5p-hightpu-4t VMs; v5p-16 = 2x2x2 (8 chips) on two. Prices: components/model/cost/pricing.py's table.
"""

from __future__ import annotations

import json
import re

import pytest

from components.model.config import load, resolve
from components.model.cost.summary import stack_summary, summary_text
from components.model.errors import ConfigError
from infra.offline import stackfile
from infra.offline.__main__ import main as offline_main
from infra.offline.stackfile import load_config, raw_values
from infra.reservation_records import read_records
from tests.conftest import config_with, every_stack, example_path, stack_model

N2_STANDARD_64 = 64 * 0.031611 + 256 * 0.004237  # per vCPU-hour and GiB-hour, us-central1
E2_STANDARD_4 = 4 * 0.021811 + 16 * 0.002923
E2_STANDARD_8 = 8 * 0.021811 + 32 * 0.002923
FEE = 0.10


def summary_of(stack: str, **overrides) -> dict:
    config, secrets = load_config(example_path(stack))
    raw = raw_values(config)
    raw.update(overrides)
    cfg = load(raw, stack, frozenset(secrets))
    return stack_summary(resolve(cfg), read_records(cfg))


EXPECTED = {
    "dev": {
        "groups": [("dev", "v6e-4", "2x2", "ct6e-standard-4t", 1, 1, 4, "spot")],
        "totals": {"slices": 1, "spares": 0, "tpuVms": 1, "tpuChips": 4, "cpuVms": 3, "nodePools": 3, "workloads": 1, "activeWorkloads": 1},
        "workloads": [("notebook", "interactive", "dev", 1, 4)],
    },
    "staging": {
        "groups": [("v6e", "v6e-16", "4x4", "ct6e-standard-4t", 2, 8, 32, "flex-start"),
                   ("v6e-spot", "v6e-16", "4x4", "ct6e-standard-4t", 1, 4, 16, "spot")],
        "totals": {"slices": 3, "spares": 0, "tpuVms": 12, "tpuChips": 48, "cpuVms": 3, "nodePools": 5, "workloads": 2, "activeWorkloads": 2},
        "workloads": [("train-smoke", "batch", "v6e", 2, 32), ("notebook", "interactive", "v6e", 1, 16)],
    },
    "prod": {
        "groups": [("train", "v5p-128", "4x4x4", "ct5p-hightpu-4t", 4, 64, 256, "reservation"),
                   ("explore", "v5p-16", "2x2x2", "ct5p-hightpu-4t", 1, 2, 8, "reservation")],
        "totals": {"slices": 5, "spares": 0, "tpuVms": 66, "tpuChips": 264, "cpuVms": 4, "nodePools": 5 + 2, "workloads": 2, "activeWorkloads": 2},
        "workloads": [("pretrain", "batch", "train", 4, 256), ("notebook", "interactive", "explore", 1, 8)],
    },
}


@pytest.mark.parametrize("stack", sorted(EXPECTED))
def test_summary_numbers_of_each_example_stack(stack):
    s, want = summary_of(stack), EXPECTED[stack]
    got = [(g["name"], g["tpu"], g["topology"], g["machineType"], g["slices"], g["vms"], g["chips"], g["capacity"]) for g in s["sliceGroups"]]
    assert got == want["groups"]
    assert s["totals"] == want["totals"]
    assert [(w["name"], w["mode"], w["sliceGroup"], w["slices"], w["chips"]) for w in s["workloads"]] == want["workloads"]
    # one head node per active workload, and runs.headNodes for ad-hoc runs (dev takes runs)
    assert s["headPool"] == {"machineType": "n2-standard-64", "nodes": want["totals"]["activeWorkloads"] + (stack == "dev"), "nodePool": None,
                              "isolated": []}


def test_cost_of_the_dev_stack_is_an_upper_bound_for_spot():
    cost = summary_of("dev")["cost"]
    assert cost["hourly"] == round(4 * 2.70 + N2_STANDARD_64 + E2_STANDARD_4 + FEE, 2) == 14.14
    assert cost["monthly"] == round((4 * 2.70 + N2_STANDARD_64 + E2_STANDARD_4 + FEE) * 730, 2) == 10323.51
    assert cost["qualifier"] == "at most"
    tpu = cost["lines"][0]
    assert tpu["item"] == "TPU v6e chips (spot, kept up by notebook)" and tpu["basis"] == "upper bound (on-demand list)"
    # both pools scale to zero: with the notebook suspended, the system node and the cluster fee remain
    assert cost["idleHourly"] == round(E2_STANDARD_4 + FEE, 2) == 0.23
    suspended = summary_of("dev", workloads=[{"name": "notebook", "mode": "interactive", "state": "suspended"}])["cost"]
    assert suspended["hourly"] == suspended["idleHourly"] == 0.23
    assert [(line["item"], line["quantity"]) for line in suspended["whenUsed"]] == [
        ("TPU v6e chips (spot)", 4), ("head VMs n2-standard-64 (scale to zero)", 2)]  # the notebook's and the runs' (runs.headNodes)
    assert any("cloud.google.com/tpu/pricing" in src for src in cost["sources"])


def test_your_prices_replace_the_list():
    cost = summary_of("dev", prices={"tpuChipHour": {"v6e": {"spot": 1.0}}, "machineHour": {"n2-standard-64": 2.0}, "clusterHour": 0})["cost"]
    assert cost["hourly"] == round(4 * 1.0 + 2.0 + E2_STANDARD_4, 2)
    assert cost["qualifier"] == "about"
    assert [line["basis"] for line in cost["lines"]] == ["your price", "your price", "list", "your price"]


def test_flex_start_chips_cost_only_while_scaled_up():
    # staging's always-on notebook keeps one v6e-16 slice (16 chips) up; the batch run's second slice costs
    # only while it runs
    cost = summary_of("staging")["cost"]
    assert [line["item"] for line in cost["lines"]] == [
        "TPU v6e chips (flex-start, kept up by notebook)", "head VMs n2-standard-64", "system VMs (autoscaler minimum) e2-standard-4",
        "GKE cluster fee"]
    assert cost["hourly"] == round(16 * 2.70 + 2 * N2_STANDARD_64 + E2_STANDARD_4 + FEE, 2)
    assert cost["whenUsed"][0]["quantity"] == 16 and cost["whenUsed"][0]["hourly"] == round(16 * 2.70, 2)
    # with no always-on workload, no TPU chip is counted while idle
    idle = summary_of("staging", workloads=[{"name": "fit", "image": "x:1", "sliceGroup": "v6e"}])["cost"]
    assert not [line for line in idle["lines"] if "TPU" in line["item"]]
    # the flex-start slices, then the spot rung below them (scale to zero)
    assert [(line["item"], line["quantity"]) for line in idle["whenUsed"]] == [("TPU v6e chips (flex-start)", 32), ("TPU v6e chips (spot)", 16)]


def test_prod_reservation_counts_every_reserved_chip():
    cost = summary_of("prod")["cost"]
    assert cost["lines"][0]["quantity"] == 264 and cost["lines"][0]["hourly"] == round(264 * 4.20, 2)
    assert cost["hourly"] == round(264 * 4.20 + 2 * N2_STANDARD_64 + 2 * E2_STANDARD_8 + FEE, 2)


def test_a_family_without_a_list_price_makes_the_total_a_lower_bound():
    s = summary_of("dev", slices=[{"name": "ironwood", "tpu": "tpu7x-8"}], workloads=[], region="us-central1", zone="us-central1-c")
    cost = s["cost"]
    assert cost["qualifier"] == "at least"
    assert cost["lines"][0]["hourly"] is None and "pathways:prices.tpuChipHour.tpu7x.on-demand" in cost["lines"][0]["basis"]


@pytest.mark.parametrize(("prices", "message"), [
    ({"tpuChipHour": {"v9": {"spot": 1}}}, "pathways:prices.tpuChipHour"),
    ({"tpuChipHour": {"v6e": {"cheap": 1}}}, "v6e.cheap: not a capacity mode; valid: on-demand, spot, reservation, flex-start"),
    ({"tpuChipHour": {"v6e": {"spot": -1}}}, "v6e.spot: -1.0 is not a price per hour; use 0..10000 (USD)"),
    ({"machineHour": {"n2-standard-7": 1}}, "n2-standard-7 does not exist"),
    ({"clusterHour": 1e308}, "pathways:prices.clusterHour"),
])
def test_bad_prices_are_one_line_errors(prices, message):
    with pytest.raises(ConfigError) as e:
        summary_of("dev", prices=prices)
    assert message in str(e.value)
    assert len(str(e.value).splitlines()) == 1


def test_plan_prints_the_summary_and_json_carries_it(capsys):
    assert offline_main(["plan", "--config", str(example_path("prod"))]) == 0
    out = capsys.readouterr().out
    assert re.search(r"train +v5p-128 +4x4x4 +ct5p-hightpu-4t +4 +0 +64 +256 +reservation +pathways-prod-v5p", out)
    assert "  reservation pathways-prod-v5p: 72 of 72 VMs free (recorded)\n" in out
    assert "Stack: 5 TPU slice(s) (264 chips on 66 TPU VMs, spares included), 4 CPU VM(s), 7 node pools, 2 workload(s)" in out
    assert "Estimated cost of what the stack keeps running: at most $1,115.65/hour" in out
    assert offline_main(["plan", "--config", str(example_path("prod")), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"] == summary_of("prod")


@pytest.mark.parametrize("command", ["plan", "diff", "render"])
def test_every_subcommand_documents_exit_codes_and_output(command, capsys):
    with pytest.raises(SystemExit) as e:
        offline_main([command, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "exit status: 0 " in out and " 2 invalid config" in out
    assert ("--json:" in out and "README.md" in out) if command != "render" else ".pathways-render.json" in out


def test_readme_plan_excerpt_is_real_output(capsys):
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    excerpt = readme.split("<!-- plan-excerpt:dev -->", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    assert offline_main(["plan", "--config", str(example_path("dev"))]) == 0
    out = capsys.readouterr().out
    lines = [line for line in excerpt.strip("\n").splitlines() if line.strip() and line.strip() != "..."]
    assert len(lines) >= 15
    for line in lines:
        assert line in out.splitlines(), line


def test_service_stack_lists_and_prices_its_proxy_pool():
    s = summary_of("dev", workloads=[{"name": "sps", "mode": "service", "sliceGroup": "dev", "service": {"maxClients": 3}}])
    assert s["proxyPool"] == {"machineType": "n2-standard-32", "nodes": 3}
    assert s["totals"]["nodePools"] == 4  # system, head, proxy and the dev group's one slice
    text = "\n".join(summary_text(s))
    assert ["proxy", "n2-standard-32", "3"] in [line.split() for line in text.splitlines()]
    proxy = [line for line in s["cost"]["lines"] if line["item"] == "proxy VMs n2-standard-32"]
    assert proxy == [{"item": "proxy VMs n2-standard-32", "quantity": 3, "unit": "VM",
                      "unitPricePerHour": round(32 * 0.031611 + 128 * 0.004237, 4), "hourly": round(3 * (32 * 0.031611 + 128 * 0.004237), 2),
                      "basis": "list"}]


def test_a_stack_without_workloads_says_none():
    s = summary_of("dev", workloads=[])
    lines = summary_text(s)
    assert lines[lines.index("Workloads:") + 1] == "  (none)"


def test_a_machine_series_without_a_listed_price_asks_for_one():
    s = summary_of("dev", headPool={"machineType": "c3-standard-88"})
    head = next(line for line in s["cost"]["lines"] if line["item"].startswith("head VMs"))
    assert head["unitPricePerHour"] is None and head["basis"] == "no price: set pathways:prices.machineHour.c3-standard-88"
    assert s["cost"]["qualifier"] == "at least"


def test_price_basis_says_whose_price_it_is():
    from components.model.capacity.pools import Capacity
    from components.model.cost.pricing import PricesConfig, tpu_chip_price

    spot_only = PricesConfig.model_validate({"tpuChipHour": {"v6e": {"spot": 1.0}}})
    # an on-demand slice with only your Spot price set is still priced from the list
    assert tpu_chip_price("v6e", Capacity.ON_DEMAND, spot_only) == (2.70, "list")
    assert tpu_chip_price("v6e", Capacity.SPOT, spot_only) == (1.0, "your price")
    yours = PricesConfig.model_validate({"tpuChipHour": {"v6e": {"on-demand": 2.0}}})
    assert tpu_chip_price("v6e", Capacity.ON_DEMAND, yours) == (2.0, "your price")
    assert tpu_chip_price("v6e", Capacity.FLEX_START, yours) == (2.0, "upper bound (your on-demand price)")
    assert tpu_chip_price("v6e", Capacity.FLEX_START, PricesConfig()) == (2.70, "upper bound (on-demand list)")
    assert tpu_chip_price("tpu7x", Capacity.SPOT, PricesConfig()) == (None, "no price: set pathways:prices.tpuChipHour.tpu7x.spot")


def test_a_long_bad_capacity_mode_is_cut():
    from tests.test_pinned_behaviour import error

    mode = "m" * 100
    msg = error(prices={"tpuChipHour": {"v6e": {mode: 1.0}}})
    assert f"v6e.{'m' * 40}: not a capacity mode; valid: on-demand, spot, reservation, flex-start" in msg and "m" * 41 not in msg


def test_flex_start_slices_are_listed_apart_with_the_price_source():
    lines = summary_text(summary_of("staging"))
    lines = lines[: lines.index("Notices:") - 1] if "Notices:" in lines else lines
    assert lines[-3:] == [
        "  only while scaled up: TPU v6e chips (flex-start): 16 chips, $43.20/h (upper bound (on-demand list))",
        "  only while scaled up: TPU v6e chips (spot): 16 chips, $43.20/h (upper bound (on-demand list))",
        "  prices: 2025 list prices, not re-checked from this offline machine; override with pathways:prices. Estimate from "
        "list prices; not a quote. Network, storage, logging and egress are not included.",
    ]
    unpriced = summary_of("staging", slices=[{"name": "explore", "tpu": "tpu7x-128", "flexStart": True}], workloads=[], region="us-central1",
                          zone="us-central1-c")
    assert "  only while scaled up: TPU tpu7x chips (flex-start): 64 chips, no price (no price: set " \
           "pathways:prices.tpuChipHour.tpu7x.flex-start)" in summary_text(unpriced)


def test_a_quantity_of_64_characters_is_the_longest():
    from decimal import Decimal

    from components.model import quantity

    assert quantity.parse("1" + "0" * 63) == Decimal(10) ** 63
    with pytest.raises(ValueError, match="is not a Kubernetes quantity"):
        quantity.parse("1" + "0" * 64)


def test_plan_says_when_alerts_notify_no_one():
    from components.model.cost.summary import notices
    from infra.offline.stackfile import flatten
    from tests.conftest import config_with

    flat, _ = flatten(config_with())
    assert any(n.startswith("alerts notify no one: pathways:monitoring.notificationChannels is empty") for n in notices(resolve(load(raw_values(flat), "t"))))
    flat, _ = flatten(config_with(monitoring={"notificationChannels": ["projects/test-proj-123/notificationChannels/1"]}))
    assert not [n for n in notices(resolve(load(raw_values(flat), "t"))) if n.startswith("alerts notify")]


def test_an_n2d_head_is_priced_and_the_sources_are_named():
    s = summary_of("dev", headPool={"machineType": "n2d-standard-64"})
    head = next(line for line in s["cost"]["lines"] + s["cost"]["whenUsed"] if line["item"].startswith("head VMs"))
    # Compute Engine's list: n2d $0.027502 per vCPU-hour and $0.003686 per GiB-hour (64 vCPU, 256 GiB)
    assert head["basis"] == "list" and head["unitPricePerHour"] == round(64 * 0.027502 + 256 * 0.003686, 4)
    assert s["cost"]["sources"] == [
        "https://cloud.google.com/tpu/pricing (on-demand, per chip-hour, us-central1/us-east5 list)",
        "https://cloud.google.com/compute/vm-instance-pricing (on-demand per vCPU-hour and GiB-hour, us-central1)",
        "https://cloud.google.com/kubernetes-engine/pricing (cluster management fee, Standard)",
    ]


def test_on_a_cluster_made_elsewhere_the_plan_prices_nothing_and_says_whose_the_nodes_are():
    s = summary_of("dev", cluster={"existing": {"kubeconfig": "/tmp/kubeconfig"}}, bucket={"name": "team-bucket"},
                   kubernetes={"installControllers": False}, headPool={}, slices=[{"name": "dev", "tpu": "v6e-4"}])
    assert s["cost"]["lines"] == [] and s["cost"]["whenUsed"] == [] and s["cost"]["hourly"] == 0
    assert [b["name"] for b in s["buckets"]] == ["team-bucket"]  # no artifacts bucket is created there
    assert s["notices"][0].startswith("a cluster made elsewhere (cluster.existing)")
    assert not [n for n in s["notices"] if n.startswith("alerts notify no one")]  # no alert is created there
    assert "Estimated cost: none. A cluster made elsewhere" in "\n".join(summary_text(s))


def test_what_runs_only_while_scaled_up_is_counted_in_its_own_unit():
    # dev with its notebook suspended: the spot slice and the head VMs (the notebook's, the runs') scale to zero
    suspended = summary_text(summary_of("dev", workloads=[{"name": "notebook", "mode": "interactive", "state": "suspended"}]))
    assert "  only while scaled up: TPU v6e chips (spot): 4 chips, $10.80/h (upper bound (on-demand list))" in suspended
    assert "  only while scaled up: head VMs n2-standard-64 (scale to zero): 2 VMs, $6.22/h (list)" in suspended
    two_heads = summary_text(summary_of("dev", workloads=[{"name": "notebook", "mode": "interactive", "state": "suspended"}],
                                        headPool={"scaleToZero": True, "nodeCount": 3}))
    assert "  only while scaled up: head VMs n2-standard-64 (scale to zero): 3 VMs, $9.32/h (list)" in two_heads


def test_a_serve_workload_on_a_cluster_made_elsewhere_lists_what_that_cluster_must_give_it():
    serve = {"name": "chat", "mode": "serve", "serve": {"model": "meta-llama/Llama-3.1-8B-Instruct", "weights": "gs://acme-models/llama"}}
    existing = {"cluster": {"existing": {"kubeconfig": "/tmp/kubeconfig"}}, "bucket": {"name": "team-bucket"}, "headPool": {},
                "pathwaysVersion": "jax-0.11.2", "slices": [{"name": "main", "tpu": "v6e-16"}], "workloads": [serve]}
    s = summary_of("dev", **existing)
    (pools,) = [n for n in s["notices"] if n.startswith("serve workload chat on a cluster made elsewhere")]
    assert "GCE_METADATA" in pools and "roles/storage.objectViewer on gs://acme-models" in pools
    assert not [n for n in s["notices"] if "installControllers: false" in n]  # the stack installs LWS and Kueue itself
    s = summary_of("dev", **existing, kubernetes={"installControllers": False})
    assert ("serve workloads with kubernetes.installControllers: false: the cluster must run the LeaderWorkerSet controller "
            "(0.6.0 or later) and Kueue with its leaderworkerset.x-k8s.io/leaderworkerset integration enabled") in s["notices"]
    # the stack's own cluster makes its serving pools and the weights grant itself: nothing to say
    own = summary_of("dev", pathwaysVersion="jax-0.11.2", slices=[{"name": "main", "tpu": "v6e-16"}], workloads=[serve])
    assert not [n for n in own["notices"] if n.startswith("serve workload")]
    # without gs:// weights the engine downloads from Hugging Face: the cluster needs a route out
    del serve["serve"]["weights"]
    (pools,) = [n for n in summary_of("dev", **existing)["notices"] if n.startswith("serve workload chat on a cluster made elsewhere")]
    assert "downloads the weights from Hugging Face" in pools and "objectViewer" not in pools


def test_a_jetstream_endpoint_is_told_that_its_engine_is_archived():
    jetstream = {"name": "chat", "mode": "serve", "serve": {"engine": "jetstream", "model": "llama3.1-8b", "weights": "gs://acme-models/llama"}}
    s = summary_of("dev", pathwaysVersion="jax-0.5.3", slices=[{"name": "main", "tpu": "v6e-16"}], workloads=[jetstream])
    (notice,) = [n for n in s["notices"] if "archived" in n]
    assert notice.startswith("serve workload chat runs JetStream, which its maintainers archived on 2026-02-01") and "serve.engine: vllm" in notice
    assert s["workloads"][0]["images"] == {
        "server": "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:jax-0.5.3",
        "proxy": "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/proxy_server:jax-0.5.3",
        "jetstream": "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-pathways:v0.2.0",
        "http": "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.3"}


def test_a_pathways_tag_no_public_source_shows_is_a_notice():
    # issue #72.5: jax-0.7.2 and jax-0.11.2 appear in no public manifest; the examples use jax-0.9.0, pathways-utils'
    # published default, and the plan says when a stack's tag is none of the sourced ones
    from components.model.workloads.images import PATHWAYS_TAG_SOURCES

    def notices(version: str) -> list[str]:
        return stack_summary(resolve(load(raw_values(stackfile.flatten({**config_with(pathwaysVersion=version,
            workloads=[{"name": "nb", "mode": "interactive"}])})[0]), "test")))["notices"]

    assert not [n for n in notices("jax-0.9.0") if "Pathways images" in n]
    [notice] = [n for n in notices("jax-0.7.2") if "Pathways images" in n]
    assert notice.startswith("Pathways images :jax-0.7.2: no public source shows this release")
    assert "gcloud artifacts docker tags list us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server --filter='tags:jax-0.7.2'" in notice
    assert all(tag.startswith("jax-") and source for tag, source in PATHWAYS_TAG_SOURCES.items())


@every_stack()
def test_every_stack_uses_sourced_pathways_tags_or_says_so(stack):
    from components.model.workloads.images import unsourced_pathways_tags

    model = stack_model(stack)
    unsourced = unsourced_pathways_tags([w.server_image for w in model.workloads])
    said = [n for n in stack_summary(model)["notices"] if n.startswith("Pathways images :")]
    assert [n.split()[2].strip(":") for n in said] == unsourced
