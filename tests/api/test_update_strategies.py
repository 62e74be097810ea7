"""Update strategies: apps/v1 defaults, the API server's checks, and intstr's rounding of percentages."""
import pytest

from kplan.api.update_strategies import (
    daemon_set_strategy, deployment_strategy, scaled, stateful_set_strategy,
)
from kplan.api.validation import Invalid


@pytest.mark.parametrize("value, total, up, want", [
    (3, 10, True, 3), ("25%", 10, True, 3), ("25%", 10, False, 2), ("10%", 5, True, 1), ("10%", 5, False, 0),
    ("100%", 7, False, 7), ("0%", 9, True, 0), ("33%", 3, True, 1), ("33%", 3, False, 0),
])
def test_scaled_value_rounds_as_get_scaled_value_from_int_or_percent(value, total, up, want):
    assert scaled(value, total, up) == want


@pytest.mark.parametrize("rolling, replicas, want", [
    (None, 10, (3, 2)),                                        # defaults 25% / 25%
    ({"maxSurge": "1%", "maxUnavailable": "1%"}, 2, (1, 0)),   # ResolveFenceposts' examples
    ({"maxSurge": 0, "maxUnavailable": "1%"}, 2, (0, 1)),      # both 0 after rounding: unavailable 1
    ({"maxSurge": 0, "maxUnavailable": 5}, 3, (0, 3)),         # MaxUnavailable: at most the replicas
])
def test_deployment_fenceposts(rolling, replicas, want):
    spec = {} if rolling is None else {"strategy": {"rollingUpdate": rolling}}
    assert deployment_strategy(spec).fenceposts(replicas) == want


@pytest.mark.parametrize("strategy, message", [
    ({"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}},
     "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"),
    ({"rollingUpdate": {"maxUnavailable": "110%"}},
     "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 110%: must not be greater than 100%"),
    ({"rollingUpdate": {"maxSurge": -1}},
     "spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0"),
    ({"rollingUpdate": {"maxSurge": "5"}}, 'spec.strategy.rollingUpdate.maxSurge: Invalid value: "5": a valid percent'),
    ({"type": "Recreate", "rollingUpdate": {}},
     "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"),
    ({"type": "Blue"}, 'spec.strategy.type: Unsupported value: "Blue": supported values: "Recreate", "RollingUpdate"'),
])
def test_deployment_strategy_refused_as_the_api_server_refuses_it(strategy, message):
    with pytest.raises(Invalid) as err:
        deployment_strategy({"strategy": strategy})
    assert str(err.value).startswith(message)


def test_stateful_set_defaults_and_max_unavailable_at_least_1():
    s = stateful_set_strategy({})
    assert (s.type, s.partition, s.unavailable(3), s.pod_management) == ("RollingUpdate", 0, 1, "OrderedReady")
    assert stateful_set_strategy({"updateStrategy": {"rollingUpdate": {"maxUnavailable": "10%"}}}).unavailable(5) == 1
    assert stateful_set_strategy({"updateStrategy": {"rollingUpdate": {"maxUnavailable": "50%"}}}).unavailable(5) == 2
    with pytest.raises(Invalid, match="maxUnavailable: Invalid value: 0: cannot be 0"):
        stateful_set_strategy({"updateStrategy": {"rollingUpdate": {"maxUnavailable": 0}}})
    with pytest.raises(Invalid, match="partition: Invalid value: -1"):
        stateful_set_strategy({"updateStrategy": {"rollingUpdate": {"partition": -1}}})


def test_daemon_set_rounds_both_up_and_wants_exactly_one():
    assert daemon_set_strategy({}).counts(10) == (0, 1)
    spec = {"updateStrategy": {"rollingUpdate": {"maxSurge": "10%", "maxUnavailable": 0}}}
    assert daemon_set_strategy(spec).counts(15) == (2, 0)
    with pytest.raises(Invalid, match="maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero"):
        daemon_set_strategy({"updateStrategy": {"rollingUpdate": {"maxSurge": 1}}})
    with pytest.raises(Invalid, match="maxUnavailable: Required value: cannot be 0 when maxSurge is 0"):
        daemon_set_strategy({"updateStrategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}})
