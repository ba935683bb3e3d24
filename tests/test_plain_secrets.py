"""Security #58.9: a secret-looking value in a plain key reaches the state and every preview's diff; the plan says so,
and a protected stack refuses it."""

from __future__ import annotations

import pytest

from components.model.cost.summary import notices
from components.model.workloads.secrets import secret_looking
from tests.conftest import config_with, example_path, plan_of

VERSION = "jax-0.9.0"


def _train(**changes) -> dict:
    return {"name": "train", "image": "example.com/t:1", **changes}


def _lines(workload: dict, **stack) -> list[str]:
    from components.model.config import load, resolve

    cfg = config_with(pathwaysVersion=VERSION, workloads=[workload], **stack)
    raw = {k.split(":", 1)[1]: v for k, v in cfg.items() if k.startswith("pathways:")}
    return [n for n in notices(resolve(load({**raw, "project": "test-proj-123", "region": "us-east5", "zone": "us-east5-b"}, "test")))
            if "looks like a secret" in n]


@pytest.mark.parametrize(("workload", "keys"), [
    (_train(env={"HF_TOKEN": "hf_abc"}), ["pathways:workloads[0].env.HF_TOKEN"]),
    (_train(env={"WANDB_API_KEY": "k", "AWS_SECRET_ACCESS_KEY": "s", "TOKENIZER": "llama", "STEPS": "5"}),
     ["pathways:workloads[0].env.WANDB_API_KEY", "pathways:workloads[0].env.AWS_SECRET_ACCESS_KEY"]),
    (_train(env={"HF_TOKEN": "$(OTHER)"}), []),  # expanded by Kubernetes: no secret in the manifest
    (_train(args=["--hf_token=hf_abc", "--steps=5"]), ["pathways:workloads[0].args[0]"]),
    (_train(args=["--api-key", "k123", "--tokenizer", "llama"]), ["pathways:workloads[0].args[1]"]),
    (_train(args=["--hf_token=$(HF_TOKEN)"]), []),
    (_train(command=["python3", "train.py", "--password=p"]), ["pathways:workloads[0].command[2]"]),
])
def test_secret_looking_values_are_found_by_their_key(workload, keys):
    from components.model.workloads.workload import Workload

    found = [k for k, _ in secret_looking([Workload.model_validate(workload)], False)]
    assert found == keys
    lines = _lines(workload)
    assert [line.split(":")[0] + ":" + line.split(":")[1] for line in lines] == keys


def test_env_given_as_a_secret_is_not_named():
    from components.model.workloads.workload import Workload

    assert secret_looking([Workload.model_validate(_train(env={"HF_TOKEN": "hf_abc"}))], True) == []


def test_a_protected_stack_refuses_a_plain_token():
    import yaml

    prod = yaml.safe_load(example_path("prod").read_text())["config"]
    workloads = prod["pathways:workloads"]
    index = next(i for i, w in enumerate(workloads) if w.get("mode", "batch") == "batch")
    workloads[index] = {**workloads[index], "env": {**workloads[index].get("env", {}), "HF_TOKEN": "hf_abc"}}
    with pytest.raises(Exception) as e:
        plan_of(prod, "prod")
    assert f"pathways:workloads[{index}].env.HF_TOKEN: env HF_TOKEN looks like a secret given in plain text: a protected stack" in str(e.value)
