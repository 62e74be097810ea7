"""Machine-readable renderers: pure functions from a report dict to text."""
from __future__ import annotations

import json
from typing import Any

import yaml

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def to_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


def to_yaml(report: dict[str, Any]) -> str:
    return yaml.dump(report, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True)
