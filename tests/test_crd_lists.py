"""Lists the pinned CRDs declare unique (#76.2): `x-kubernetes-list-type` set and map, and the CEL "must be unique"
idiom, checked on rendered objects as the API server checks them; every committed stack's objects pass."""

from __future__ import annotations

import copy

from components.manifests import admission, crd_lists
from components.manifests.kueue_api import API_VERSION


def test_a_multikueue_config_naming_a_worker_twice_is_refused_by_the_crds_own_rule():
    obj = {"apiVersion": API_VERSION, "kind": "MultiKueueConfig", "metadata": {"name": "fleet"},
           "spec": {"clusters": ["east", "central", "east"]}}
    found = [str(v) for v in admission.check_kueue(obj).violations]
    assert found == ["[kueue-schema] spec.clusters[2]: duplicate entry 'east' (also [0]); the CRD declares this list's entries unique"]
    obj["spec"]["clusters"] = ["east", "central"]
    assert admission.check_kueue(obj).violations == []


def test_set_and_map_lists_anywhere_in_the_schema():
    schema = {"type": "object", "properties": {
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
                  "items": {"type": "object", "properties": {"port": {"type": "integer"}, "protocol": {"type": "string"},
                                                             "names": {"type": "array", "x-kubernetes-list-type": "set"}}}},
        "free": {"type": "array", "items": {"type": "string"}},
    }}
    obj = {"tags": ["a", "b", "a"], "free": ["x", "x"],
           "ports": [{"port": 80, "protocol": "TCP", "names": ["h", "h"]}, {"port": 80, "protocol": "UDP"}, {"port": 80, "protocol": "TCP"}]}
    assert list(crd_lists.duplicates(obj, schema)) == [
        ("tags[2]", "duplicate entry 'a' (also [0]); the CRD declares this list's entries unique"),
        ("ports[2]", "duplicate entry port=80, protocol='TCP' (also [0]); the CRD declares this list's entries unique"),
        ("ports[0].names[1]", "duplicate entry 'h' (also [0]); the CRD declares this list's entries unique"),
    ]


def test_the_idiom_is_read_from_the_pinned_crd_not_assumed():
    # the v1beta2 schema the stack renders to carries the rule; a schema without it makes no claim
    found = admission._kueue_validator("MultiKueueConfig", "v1beta2")
    assert found is not None
    _, schema = found
    clusters = schema["properties"]["spec"]["properties"]["clusters"]
    assert crd_lists._unique_by_rule(clusters)
    bare = copy.deepcopy(clusters)
    bare.pop("x-kubernetes-validations")
    assert list(crd_lists.duplicates(["a", "a"], bare)) == []
