"""DRA's CEL environment: what a selector sees of a device and the Kubernetes library functions on it."""
from fractions import Fraction

import pytest

from kplan.api.device_cel import CelError, Environment
from kplan.api.dra import Version

DRIVER = "gpu.example.com"
ATTRS = {"model": "a100", "index": 3, "mig": True, "driverVersion": Version("1.10.0"),
         "other.example.com/rack": "r7"}
CAPACITY = {"memory": Fraction(80 * 2**30), "other.example.com/slots": Fraction(4)}


@pytest.fixture(scope="module")
def env():
    return Environment()


@pytest.mark.parametrize("expression, want", [
    ('device.driver == "gpu.example.com"', True),
    ('device.attributes["gpu.example.com"].model == "a100"', True),
    ('device.attributes["gpu.example.com"].index > 2 && device.attributes["gpu.example.com"].mig', True),
    ('device.attributes["other.example.com"].rack == "r7"', True),
    # A domain the device has nothing in reads as an empty map.
    ('device.attributes["nvidia.com"].size() == 0', True),
    ('"model" in device.attributes["gpu.example.com"]', True),
    ('has(device.attributes["gpu.example.com"].uuid)', False),
    ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) > 0', True),
    ('device.capacity["gpu.example.com"].memory == quantity("80Gi")', True),
    ('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("100Gi"))', False),
    ('device.capacity["other.example.com"].slots.asInteger() == 4', True),
    ('device.capacity["gpu.example.com"].memory.add(quantity("1Gi")) == quantity("81Gi")', True),
    ('device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.9.0"))', True),
    ('device.attributes["gpu.example.com"].driverVersion.major() == 1', True),
    ('device.attributes["gpu.example.com"].driverVersion.compareTo(semver("1.10.0-rc.1")) == 1', True),
    ('isSemver("1.2") == false && isSemver("1.2", true)', True),
    ('device.attributes["gpu.example.com"].model.lowerAscii().startsWith("a1")', True),
    ('device.attributes["gpu.example.com"].?uuid.orValue("none") == "none"', True),
    # && and || absorb an error on either side when the other decides.
    ('device.attributes["gpu.example.com"].uuid == "x" && false', False),
    ('device.attributes["gpu.example.com"].uuid == "x" || true', True),
])
def test_selectors(env, expression, want):
    assert env.matches(expression, DRIVER, ATTRS, CAPACITY) is want


def test_missing_identifier_is_a_runtime_error(env):
    with pytest.raises(CelError, match='Key not found in map : "uuid"'):
        env.matches('device.attributes["gpu.example.com"].uuid == "x"', DRIVER, ATTRS, CAPACITY)


@pytest.mark.parametrize("expression, message", [
    ("device.driver ==", "Syntax error"),
    ('device.driver == "x" +', "Syntax error"),
    ('device.attributes["a"].b.nosuchfunction()', "undeclared reference to 'nosuchfunction'"),
    ("1 + 2", "must evaluate to bool"),
])
def test_invalid_expressions_do_not_compile(env, expression, message):
    with pytest.raises(CelError, match=message):
        env.compile(expression)
