"""Reading DRA objects: v1 and the beta versions converted, defaults applied, and objects the API server
would refuse reported with the file, the object and the field."""
import json

import pytest

from dra_builders import claim, device, device_class, exact, gpus, resource_slice, template
from kplan.api.dra import ALL, EXACT_COUNT, Version
from kplan.errors import InputError
from kplan.sources.snapshot import load_snapshot
from run_kplan import run_kplan


def load(tmp_path, *objects):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))
    return load_snapshot([str(path)])


def test_defaults_and_attribute_types(tmp_path):
    no_count = claim("c", {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}},
                     exact("all", mode="All"))
    snap = load(tmp_path, no_count, resource_slice("n1", [device("d", {"memory": "16Gi"}, v="v:1.2.3", n=2,
                                                                     ok=True, s="x")]))
    first, every = snap.devices.claims[("default", "c")].spec.requests
    assert (first.exactly.mode, first.exactly.count) == (EXACT_COUNT, 1)
    assert (every.exactly.mode, every.exactly.count) == (ALL, 0)
    d = snap.devices.slices["n1-gpu.example.com"].devices[0]
    assert d.attributes == {"v": Version("1.2.3"), "n": 2, "ok": True, "s": "x"}
    assert d.capacity == {"memory": 16 * 2**30}


def test_objects_of_other_versions_are_skipped_with_a_reason(tmp_path):
    snap = load(tmp_path, {**device_class(), "apiVersion": "resource.k8s.io/v1alpha3"})
    assert snap.skipped == {"DeviceClass (resource.k8s.io/v1alpha3)": 1}
    assert "v1beta1" in snap.skip_reasons["DeviceClass (resource.k8s.io/v1alpha3)"]


@pytest.mark.parametrize("obj, message", [
    (claim("c", exact(count=0)), 'ResourceClaim "default/c": spec.devices.requests[0].exactly.count: Invalid '
                                 'value: 0: must be greater than zero'),
    (claim("c", exact(mode="Some")), 'spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some"'),
    (claim("c", {"name": "gpu"}), "spec.devices.requests[0]: Required value: exactly one of `exactly` or "
                                  "`firstAvailable` is required"),
    (claim("c", exact(), exact()), 'spec.devices.requests[1].name: Duplicate value: "gpu"'),
    (claim("c", exact(), constraints=[{"requests": ["nope"], "matchAttribute": "gpu.example.com/numa"}]),
     'spec.devices.constraints[0].requests[0]: Invalid value: "nope": must be the name of a request'),
    ({**resource_slice("n1", gpus(1)), "spec": {"driver": "d.example.com", "nodeName": "n1",
                                                "pool": {"generation": 1, "resourceSliceCount": 1}}},
     "spec.pool.name: Required value"),
    (resource_slice("n1", [{"name": "d", "attributes": {"x": {"int": 1, "string": "a"}}}]),
     "spec.devices[0].attributes[x]: Invalid value: "),
    (resource_slice("n1", [{"name": "d", "attributes": {"v": {"version": "1.2"}}}]),
     'spec.devices[0].attributes[v].version: Invalid value: "1.2": must be a string compatible with semver'),
    (resource_slice("n1", [{"name": "d", "capacity": {"mem": {"value": "lots"}}}]),
     'spec.devices[0].capacity[mem].value: Invalid value: "lots"'),
    (template("t", exact(device_class_name="")), 'ResourceClaimTemplate "default/t": '
                                                 "spec.spec.devices.requests[0].exactly.deviceClassName: Required"),
])
def test_invalid_objects_are_input_errors(tmp_path, obj, message):
    with pytest.raises(InputError) as err:
        load(tmp_path, obj)
    assert message in str(err.value) and "c.json" in str(err.value)


def test_invalid_claim_is_one_line_and_exit_2(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [claim("c", exact(count=-1))]}))
    pod = tmp_path / "p.json"
    pod.write_text(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                               "spec": {"containers": [{"name": "c", "image": "x"}]}}))
    code, out, err = run_kplan("place", str(pod), "-f", str(path))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert 'ResourceClaim "default/c": spec.devices.requests[0].exactly.count: Invalid value: -1' in err


def test_slices_published_to_nodes_by_selector_are_read(tmp_path):
    snap = load(tmp_path, resource_slice("", gpus(1), pool="net", allNodes=True))
    assert snap.devices.slices["net-gpu.example.com"].all_nodes
