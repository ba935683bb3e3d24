"""The stacks the CI workflows name, read and edited where a team would edit them by hand (issue #75.1):

- pull-request.yml: the stacks the test job hands `python -m infra.ci_previews` (which of them get a real preview);
- deploy.yml: one job per stack, `uses: ./.github/workflows/pulumi-stack.yml` with `stack: NAME`, each `needs:` the
  one before it (the deploy chain, after `test`);
- verify.yml: the daily verify's `matrix.stack`.

Edits are textual and minimal (the files' comments stay), and each edited file is parsed again and checked to name
exactly the stacks intended before it is written. `new-stack --wire-workflows` adds a stack; `remove-stack` takes
one out; tests/test_workflows.py holds the three lists equal on every run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

WORKFLOWS = Path(".github") / "workflows"
PULL_REQUEST, DEPLOY, VERIFY = "pull-request.yml", "deploy.yml", "verify.yml"
_PREVIEWS = re.compile(r"(infra\.ci_previews)((?: +[A-Za-z0-9_.-]+)*)( *>>)")
_MATRIX = re.compile(r"(\n\s+matrix:\n\s+stack: \[)([^\]]*)(\])")
_JOB = re.compile(r"^  ([A-Za-z0-9_-]+):\n", re.M)


class WorkflowError(ValueError):
    """A workflow whose stack lists the tools cannot find or keep: edit it by hand (docs/adopting.md)."""


@dataclass(frozen=True)
class WorkflowStacks:
    previews: list[str]  # pull-request.yml: handed to infra.ci_previews
    deploys: list[str]  # deploy.yml: the chain, in order
    verifies: list[str]  # verify.yml: matrix.stack


def _read(root: Path, name: str) -> str:
    path = root / WORKFLOWS / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise WorkflowError(f"{WORKFLOWS / name} cannot be read ({type(e).__name__})") from None


def _deploy_chain(text: str) -> list[str]:
    """The stacks of deploy.yml's pulumi-stack jobs, in the order their needs chain them (from `test`)."""
    jobs = (yaml.safe_load(text) or {}).get("jobs") or {}
    stack_jobs = {name: job for name, job in jobs.items()
                  if isinstance(job, dict) and str(job.get("uses", "")).endswith("pulumi-stack.yml")}
    order, prev = [], "test"
    while True:
        nxt = [n for n, j in stack_jobs.items() if j.get("needs") == prev and n not in order]
        if len(nxt) != 1:
            break
        order.append(nxt[0])
        prev = nxt[0]
    if len(order) != len(stack_jobs):
        raise WorkflowError(f"{WORKFLOWS / DEPLOY}: its stack jobs are not one chain from `test` ({', '.join(stack_jobs)}); "
                            "edit it by hand (docs/adopting.md, 'Add an environment')")
    for name in order:
        if (stack_jobs[name].get("with") or {}).get("stack") != name:
            raise WorkflowError(f"{WORKFLOWS / DEPLOY}: job {name} deploys stack {(stack_jobs[name].get('with') or {}).get('stack')!r}, "
                                "not its own name; edit it by hand")
    return order


def read(root: Path) -> WorkflowStacks:
    pr, deploy, verify = (_read(root, n) for n in (PULL_REQUEST, DEPLOY, VERIFY))
    previews = _PREVIEWS.search(pr)
    matrix = _MATRIX.search(verify)
    if previews is None or matrix is None:
        raise WorkflowError(f"{WORKFLOWS / (PULL_REQUEST if previews is None else VERIFY)}: its stack list is not where the "
                            "tools look (`infra.ci_previews A B >>`, `matrix: stack: [A, B]`); edit it by hand")
    return WorkflowStacks(previews=previews.group(2).split(), deploys=_deploy_chain(deploy),
                          verifies=[s.strip() for s in matrix.group(2).split(",") if s.strip()])


def _job_block(text: str, name: str) -> tuple[int, int]:
    """The span of deploy.yml's job `name` (its key line to the next job's, blank lines before that included)."""
    starts = [(m.group(1), m.start()) for m in _JOB.finditer(text)]
    for i, (job, start) in enumerate(starts):
        if job == name:
            return start, starts[i + 1][1] if i + 1 < len(starts) else len(text)
    raise WorkflowError(f"{WORKFLOWS / DEPLOY}: no job {name}")


def _write(root: Path, name: str, text: str) -> None:
    (root / WORKFLOWS / name).write_text(text, encoding="utf-8")


def remove(root: Path, stack: str) -> list[str]:
    """Take `stack` out of the three workflows (the deploy chain closed over it). Returns the files changed."""
    before = read(root)
    changed = []
    pr = _read(root, PULL_REQUEST)
    if stack in before.previews:
        pr = _PREVIEWS.sub(lambda m: m.group(1) + "".join(f" {s}" for s in m.group(2).split() if s != stack) + m.group(3), pr)
        _write(root, PULL_REQUEST, pr)
        changed.append(PULL_REQUEST)
    verify = _read(root, VERIFY)
    if stack in before.verifies:
        verify = _MATRIX.sub(lambda m: m.group(1) + ", ".join(s for s in before.verifies if s != stack) + m.group(3), verify)
        _write(root, VERIFY, verify)
        changed.append(VERIFY)
    deploy = _read(root, DEPLOY)
    if stack in before.deploys:
        i = before.deploys.index(stack)
        prev = "test" if i == 0 else before.deploys[i - 1]
        start, end = _job_block(deploy, stack)
        deploy = deploy[:start] + deploy[end:]
        if i + 1 < len(before.deploys):
            nstart, nend = _job_block(deploy, before.deploys[i + 1])
            block = re.sub(rf"(\n    needs: ){re.escape(stack)}\n", rf"\g<1>{prev}\n", deploy[nstart:nend], count=1)
            deploy = deploy[:nstart] + block + deploy[nend:]
        deploy = deploy.rstrip("\n") + "\n"
        _write(root, DEPLOY, deploy)
        changed.append(DEPLOY)
    after = read(root)
    expected = WorkflowStacks(*[[s for s in lst if s != stack] for lst in (before.previews, before.deploys, before.verifies)])
    if after != expected:
        raise WorkflowError(f"the workflows name {after} after removing {stack}, not {expected}; check them by hand")
    return changed


def add(root: Path, stack: str) -> list[str]:
    """Add `stack` to the previews, the verify matrix and the end of the deploy chain (a job copied from the last
    one). Returns the files changed; a list that names it already is left as it is."""
    before = read(root)
    changed = []
    if stack not in before.previews:
        _write(root, PULL_REQUEST, _PREVIEWS.sub(lambda m: m.group(1) + m.group(2) + f" {stack}" + m.group(3), _read(root, PULL_REQUEST)))
        changed.append(PULL_REQUEST)
    if stack not in before.verifies:
        _write(root, VERIFY, _MATRIX.sub(lambda m: m.group(1) + ", ".join([*before.verifies, stack]) + m.group(3), _read(root, VERIFY)))
        changed.append(VERIFY)
    if stack not in before.deploys:
        deploy = _read(root, DEPLOY)
        if not before.deploys:
            raise WorkflowError(f"{WORKFLOWS / DEPLOY} has no stack job to copy; add one by hand")
        last = before.deploys[-1]
        start, end = _job_block(deploy, last)
        block = deploy[start:end].rstrip("\n") + "\n"
        block = block.replace(f"  {last}:\n", f"  {stack}:\n", 1)
        block = re.sub(r"(\n    needs: )[A-Za-z0-9_-]+\n", rf"\g<1>{last}\n", block, count=1)
        block = re.sub(rf"(\n      stack: ){re.escape(last)}\n", rf"\g<1>{stack}\n", block, count=1)
        _write(root, DEPLOY, deploy.rstrip("\n") + "\n\n" + block)
        changed.append(DEPLOY)
    after = read(root)
    expected = WorkflowStacks(*[lst if stack in lst else [*lst, stack] for lst in (before.previews, before.deploys, before.verifies)])
    if after != expected:
        raise WorkflowError(f"the workflows name {after} after adding {stack}, not {expected}; check them by hand")
    return changed
