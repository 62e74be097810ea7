"""Which resource names are extended resources (v1helper.IsExtendedResourceName)."""
import pytest

from kplan.framework.resource_scoring import is_extended_resource


@pytest.mark.parametrize("name, extended", [
    ("nvidia.com/gpu", True), ("example.com/dongle", True),
    # Native: no domain, or a kubernetes.io domain (IsPrefixedNativeResource), subdomains included.
    ("cpu", False), ("hugepages-2Mi", False), ("kubernetes.io/batch-cpu", False),
    ("scheduling.kubernetes.io/foo", False),
    # A quota's requests.* name is not a resource a node offers.
    ("requests.example.com/dongle", False),
])
def test_extended_resource_names(name, extended):
    assert is_extended_resource(name) is extended
