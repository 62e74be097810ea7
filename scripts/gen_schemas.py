"""Regenerates kplan/api/schemas.json from the installed `kubernetes` client's models.

kplan checks manifests against the schema of their kind and apiVersion as the API server's strict
field validation does (kubectl's --validate). The schema is the client's own: each model's
`openapi_types` (the type of every attribute) and `attribute_map` (the attribute's JSON name). A
kind's group and version come from the API class that creates it (`create_namespaced_deployment` of
AppsV1Api, posting to /apis/apps/v1/...). The table is written once here, so kplan never imports
the client (0.3 s) to read a manifest.

    python scripts/gen_schemas.py          # after upgrading the client
    python scripts/gen_schemas.py --check  # exit 1 when the table differs from the installed client's
"""
from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from pathlib import Path

TABLE = Path(__file__).resolve().parents[1] / "kplan" / "api" / "schemas.json"
# Attribute types kplan checks the JSON type of; every other scalar (str, float, datetime, object…) is "".
CHECKED_SCALARS = {"int": "int", "bool": "bool"}
SCALARS = {"str", "int", "float", "bool", "datetime", "date", "object", "bytearray", "bytes", "Any"}
RESOURCE_PATH = re.compile(r"""['"](/apis?/[^'"]*)['"]""")
VERSION = re.compile(r"V\d+(?:alpha\d+|beta\d+)?$")


def _api_classes(client):
    for name in sorted(dir(client)):
        cls = getattr(client, name)
        if inspect.isclass(cls) and name.endswith("Api") and VERSION.search(name[:-len("Api")]):
            yield name[:-len("Api")], cls


def _body_model(cls, method: str, client) -> str | None:
    """The model a create method posts: its `body` annotation (new clients) or docstring (older ones)."""
    function = getattr(cls, method)
    annotation = inspect.signature(function).parameters.get("body")
    if annotation is not None and inspect.isclass(annotation.annotation):
        return annotation.annotation.__name__
    if annotation is not None and isinstance(annotation.annotation, str):
        return annotation.annotation
    found = re.search(r":param (\w+) body:", function.__doc__ or "")
    return found.group(1) if found and hasattr(client, found.group(1)) else None


def _resource_path(cls, method: str) -> str | None:
    for name in (f"_{method}_serialize", f"{method}_with_http_info", method):
        if hasattr(cls, name):
            found = RESOURCE_PATH.search(inspect.getsource(getattr(cls, name)))
            if found:
                return found.group(1)
    return None


def _group_version(path: str) -> str:
    """/api/v1/namespaces/{namespace}/pods -> v1; /apis/apps/v1/... -> apps/v1."""
    parts = path.strip("/").split("/")
    return parts[1] if parts[0] == "api" else f"{parts[1]}/{parts[2]}"


def _kind(model: str, prefix: str) -> str:
    """V1Deployment -> Deployment; ResourceV1ResourceClaim (ResourceV1Api) -> ResourceClaim."""
    for head in (prefix, VERSION.search(prefix).group(0)):
        if model.startswith(head) and model[len(head):][:1].isupper():
            return model[len(head):]
    raise SystemExit(f"cannot tell the kind of model {model} (API {prefix})")


def kinds(client) -> dict[str, dict[str, str]]:
    """apiVersion -> kind -> model, for every kind an API class creates (subresources left out)."""
    out: dict[str, dict[str, str]] = {}
    for prefix, cls in _api_classes(client):
        for method in sorted(m for m in vars(cls) if m.startswith("create_") and not m.endswith("_with_http_info")
                             and not m.endswith("_without_preload_content")):
            path = _resource_path(cls, method)
            model = _body_model(cls, method, client)
            if not path or not model or "{name}" in path:
                continue
            out.setdefault(_group_version(path), {})[_kind(model, prefix)] = model
    return out


def descriptor(type_name: str) -> str:
    """The client's type of an attribute, as the table keeps it: a model name, []X for a list, {}X for a
    map's values, int or bool for the scalars whose JSON type is checked, "" for other scalars."""
    t = type_name.strip()
    listed = re.fullmatch(r"(?:List|list)\[(.*)\]", t)
    if listed:
        return "[]" + descriptor(listed.group(1))
    mapped = re.fullmatch(r"Dict\[str,\s*(.*)\]|dict\(str,\s*(.*)\)", t)
    if mapped:
        return "{}" + descriptor(mapped.group(1) or mapped.group(2))
    if t in SCALARS:
        return CHECKED_SCALARS.get(t, "")
    return t


def models(client, roots) -> dict[str, dict[str, str]]:
    """model -> JSON field name -> descriptor, for the models reachable from the roots."""
    out: dict[str, dict[str, str]] = {}
    todo = sorted(set(roots))
    while todo:
        name = todo.pop()
        if name in out:
            continue
        cls = getattr(client, name)
        fields = {cls.attribute_map[attr]: descriptor(t) for attr, t in cls.openapi_types.items()}
        out[name] = dict(sorted(fields.items()))
        todo.extend(d.lstrip("[]{}") for d in fields.values() if d.lstrip("[]{}") not in ("", "int", "bool"))
    return dict(sorted(out.items()))


def table() -> dict:
    import kubernetes
    from kubernetes import client
    by_version = kinds(client)
    roots = [m for ks in by_version.values() for m in ks.values()]
    return {"client": kubernetes.__version__,
            "kinds": {v: dict(sorted(ks.items())) for v, ks in sorted(by_version.items())},
            "models": models(client, roots)}


def render(data: dict) -> str:
    return json.dumps(data, separators=(",", ":"), sort_keys=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    text = render(table())
    if parser.parse_args().check:
        if TABLE.read_text() != text:
            print(f"{TABLE} differs from the installed client's models: run scripts/gen_schemas.py", file=sys.stderr)
            return 1
        return 0
    TABLE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
