"""Field validation of manifests, as kubectl asks the API server for it (`--validate`).

Since 1.27 kubectl sends `fieldValidation=Strict`: the API server decodes the object against the
schema of its kind and apiVersion and refuses unknown fields and fields given twice, naming each
by its path, in document order (`strict decoding error: unknown field "spec.template.spec.
containers[0].resources.requets", duplicate field "spec.replicas"`; a field both unknown and
repeated is reported once, as unknown). `--validate warn` (fieldValidation=Warn) lets the object
through with a warning per field, and `--validate ignore` drops such fields silently. Whatever the
mode, a value of the wrong JSON type (a string where an object or an integer belongs) cannot be
decoded, and an object of a kind its apiVersion does not serve has nowhere to go (`no matches for
kind "Deploymnet" in version "apps/v1"`): both are errors.

The schema is the official `kubernetes` client's models (their `openapi_types` and
`attribute_map`), kept in kplan/api/schemas.json by scripts/gen_schemas.py, so reading a manifest
never imports the client. Every kind the client models is checked, whichever kplan reads.
The mode is the running command's (`active()`): its --validate option sets it for the command's
run, so the readers of manifests and --add-node files need no parameter for it; Strict otherwise.
Custom resources (ElasticQuota, NodeMetric, …) have no model: the API server checks them against
the schema of the CRD the cluster serves, which kplan does not have, so they are not checked here;
kplan reads those kinds only from the cluster state, which its API server admitted already.
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from kplan.api.validation import Invalid, object_name, wrong_type
from kplan.api.kinds import WORKLOAD_KINDS
from kplan.errors import InputError

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"
# kubectl's --validate values (GetValidationDirective): the three names, and what strconv.ParseBool reads.
FLAG_VALUES = {"strict": STRICT, "warn": WARN, "ignore": IGNORE,
               **dict.fromkeys(("true", "True", "TRUE", "t", "T", "1"), STRICT),
               **dict.fromkeys(("false", "False", "FALSE", "f", "F", "0"), IGNORE)}
# The kinds kplan reads from manifests: an apiVersion that does not serve them is an error, not a custom resource.
READ_KINDS = ("Pod", *WORKLOAD_KINDS, "Service", "Node")
SCHEMAS = Path(__file__).with_name("schemas.json")


@lru_cache(maxsize=1)
def _schemas() -> dict:
    return json.loads(SCHEMAS.read_text(encoding="utf-8"))


def parse_flag(value: str) -> str:
    """Returns the fieldValidation directive of a --validate value, as kubectl reads it."""
    try:
        return FLAG_VALUES[value]
    except KeyError:
        raise InputError(f'invalid - validate option "{value}"; must be one of: strict (or true), warn, '
                         "ignore (or false)") from None


def model_of(obj: Mapping) -> str | None:
    """Returns the client model of the object's apiVersion and kind; None for a custom resource (a group
    and version the client does not model). Raises Invalid when the apiVersion is missing, or when it
    does not serve the kind."""
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if not api_version or not isinstance(api_version, str):
        raise Invalid("Object 'apiVersion' is missing")
    served = _schemas()["kinds"].get(api_version)
    model = (served or {}).get(kind)
    if model is None and (served is not None or kind in READ_KINDS):
        raise Invalid(f'no matches for kind "{kind}" in version "{api_version}"')
    return model


def field_errors(obj: Mapping) -> list[str]:
    """Returns the object's unknown and repeated fields in kubectl's words, in document order. Raises
    Invalid for a value of the wrong JSON type or a kind its apiVersion does not serve."""
    model = model_of(obj)
    found: list[str] = []
    if model is not None:
        _object(obj, model, "", found)
    return found


def _keys(value: Mapping) -> list[str]:
    """The keys as written (repeats included, see kplan.sources.files.RepeatedKeys), then any merged in."""
    written = getattr(value, "keys_read", ())
    return [*written, *(k for k in value if k not in written)] if written else list(value)


def _object(value: Mapping, model: str, path: str, found: list[str]) -> None:
    fields = _schemas()["models"][model]
    seen: set[str] = set()
    unknown: set[str] = set()
    for key in _keys(value):
        where = f"{path}.{key}" if path else str(key)
        if key in seen:
            if key not in unknown:
                found.append(f'duplicate field "{where}"')
            continue
        seen.add(key)
        kind = fields.get(key)
        if kind is None:
            unknown.add(key)
            found.append(f'unknown field "{where}"')
        else:
            _value(value[key], kind, where, found)


def _value(value: Any, kind: str, path: str, found: list[str]) -> None:
    """Checks one value against its descriptor: a model, []X (a list), {}X (a map), int, bool or "" (any)."""
    if value is None or kind == "":
        return
    if kind.startswith("[]"):
        if not isinstance(value, list):
            raise wrong_type(path, value, "array")
        for i, item in enumerate(value):
            _value(item, kind[2:], f"{path}[{i}]", found)
    elif kind.startswith("{}"):
        if not isinstance(value, Mapping):
            raise wrong_type(path, value, "object")
        seen: set[str] = set()
        for key in _keys(value):
            if key in seen:
                found.append(f'duplicate field "{path}.{key}"')
                continue
            seen.add(key)
            _value(value[key], kind[2:], f"{path}.{key}", found)
    elif kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong_type(path, value, "integer")
    elif kind == "bool":
        if not isinstance(value, bool):
            raise wrong_type(path, value, "boolean")
    elif not isinstance(value, Mapping):
        raise wrong_type(path, value, "object")
    else:
        _object(value, kind, path, found)


@dataclass
class FieldValidation:
    """How a command treats the unknown and repeated fields of the manifests it reads (--validate):
    Strict refuses the manifest, Warn says each field once through `warn`, Ignore lets it be."""

    mode: str = STRICT
    warn: Callable[[str], None] | None = None
    warned: set[str] = field(default_factory=set, repr=False)

    def check(self, obj: Mapping, where: str) -> None:
        """Raises an InputError naming the file, document, object and fields when the API server would
        refuse the object as this mode asks it to."""
        try:
            problems = field_errors(obj)
        except Invalid as err:
            raise InputError(f"{object_name(obj)}: {err}", where) from None
        if not problems or self.mode == IGNORE:
            return
        if self.mode == STRICT:
            raise InputError(f"{object_name(obj)}: strict decoding error: {', '.join(problems)}", where)
        for problem in problems:
            line = f"{where}: {object_name(obj)}: {problem}"
            if line not in self.warned:
                self.warned.add(line)
                if self.warn is not None:
                    self.warn(line)


_ACTIVE: ContextVar[FieldValidation] = ContextVar("field_validation")
_STRICT = FieldValidation()


def active() -> FieldValidation:
    """The field validation of the running command (Strict when none was set)."""
    return _ACTIVE.get(_STRICT)


@contextmanager
def validating(fields: FieldValidation) -> Iterator[FieldValidation]:
    """Makes `fields` the active field validation while the block runs."""
    token = _ACTIVE.set(fields)
    try:
        yield fields
    finally:
        _ACTIVE.reset(token)
