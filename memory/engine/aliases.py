"""Subjective aliases: who a viewer thinks everyone else is (seed 000 §1, §3).

Everything here is pure: a viewer is any `AliasHolder` (an object with `.id` and `.aliases`),
so `memory.engine.knowledge.Viewer`, the scenario loader and the tests all hand in what they
already have.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Literal, Protocol

from memory.engine.errors import InvalidInput

UNFAMILIAR = "an unfamiliar figure"
# How a page (never a prompt) shows an empty or blank label, so the person is not hidden.
NO_LABEL = "[no label]"


def shown_label(label: str) -> str:
    """A label as a page shows it: NO_LABEL for an empty or blank one."""
    return label if label.strip() else NO_LABEL


SELF = "you"

AliasState = Literal["known", "descriptor", "unknown"]


class AliasHolder(Protocol):
    """Whoever holds aliases: an id and who that one thinks everyone else is."""

    @property
    def id(self) -> str: ...

    @property
    def aliases(self) -> Mapping[str, str]: ...


class AliasesJsonError(InvalidInput):
    """An `aliases_json` value that is neither omnia's pair array nor a scenario object."""


def resolve_alias(viewer: AliasHolder, target_id: str) -> str:
    """Omnia's `resolveAlias`: self is "you" (a self-alias is ignored); a present key wins even
    when its label is "" (JavaScript's `??` only falls back on a missing key)."""
    if target_id == viewer.id:
        return SELF
    label = viewer.aliases.get(target_id)
    return UNFAMILIAR if label is None else label


# --- the stored form ------------------------------------------------------------------------

_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")
_MAX_ARRAY_INDEX = 2**32 - 2


def _js_key_order(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """Keys in the order a JavaScript object enumerates them: array-index keys first, ascending,
    then the rest in insertion order. A duplicate keeps its first place and its last value."""
    merged: dict[str, str] = {}
    for key, value in pairs:
        merged[key] = value
    index_keys = [k for k in merged if _ARRAY_INDEX.fullmatch(k) and int(k) <= _MAX_ARRAY_INDEX]
    if not index_keys:
        return merged
    ordered = {k: merged[k] for k in sorted(index_keys, key=int)}
    ordered.update((k, v) for k, v in merged.items() if k not in ordered)
    return ordered


def parse_aliases_json(text: str | None) -> dict[str, str]:
    """Read `objects.aliases_json` (`[["bob","the hooded figure"]]`) or a scenario's alias
    object (`{"bob": "the hooded figure"}`), keeping the order omnia's Map would have."""
    if text is None or text == "":
        return {}
    try:
        data = json.loads(text, object_pairs_hook=lambda pairs: pairs)
    except ValueError as exc:
        raise AliasesJsonError(f"aliases_json is not JSON: {exc}") from None
    if data is None:
        # JSON.parse("null") handed to `new Map()` is an empty map.
        return {}
    if isinstance(data, list) and all(isinstance(p, tuple) for p in data) and data:
        # object_pairs_hook turned a JSON object into a list of tuples.
        return _object_form(data)
    if isinstance(data, list):
        return _array_form(data)
    raise AliasesJsonError(
        "aliases_json must be an array of [targetId, label] pairs or an object "
        f"{{targetId: label}}, not {type(data).__name__}"
    )


def _array_form(items: list[object]) -> dict[str, str]:
    result: dict[str, str] = {}
    for i, item in enumerate(items):
        if isinstance(item, tuple):
            raise AliasesJsonError(
                f"aliases_json[{i}] must be a [targetId, label] pair, not an object"
            )
        if not isinstance(item, list) or len(item) != 2:
            raise AliasesJsonError(f"aliases_json[{i}] must be a [targetId, label] pair")
        target, label = item
        if not isinstance(target, str) or not isinstance(label, str):
            raise AliasesJsonError(f"aliases_json[{i}]: targetId and label must both be strings")
        # Map semantics: a repeated key keeps its first position and takes the last label.
        result[target] = label
    return result


def _object_form(pairs: list[tuple[str, object]]) -> dict[str, str]:
    checked: list[tuple[str, str]] = []
    for target, label in pairs:
        if not isinstance(label, str):
            raise AliasesJsonError(f"aliases_json[{json.dumps(target)}]: label must be a string")
        checked.append((target, label))
    return _js_key_order(checked)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def dump_aliases_json(mapping: Mapping[str, str]) -> str:
    """Exactly what `JSON.stringify(Array.from(map.entries()))` writes."""
    text = json.dumps(
        [[k, v] for k, v in mapping.items()], ensure_ascii=False, separators=(",", ":")
    )
    if _LONE_SURROGATE.search(text):
        # Well-formed JSON.stringify (ES2019) escapes unpaired surrogates instead of emitting them.
        text = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


# --- states ----------------------------------------------------------------------------------


def alias_state(label: str | None, true_name: str | None) -> AliasState:
    """ "known" when the label is the target's true name, "descriptor" for any other label."""
    if label is None:
        return "unknown"
    if true_name and label.strip().casefold() == true_name.strip().casefold():
        return "known"
    return "descriptor"


# --- suspicious labels (stored already: called out, never hidden) -----------------------------

# Past this a label reads as a sentence, not a name: omnia prints it whole in every line.
MAX_LABEL_CHARS = 80


def label_suspicions(
    label: str | None, target_id: str, name_owners: Mapping[str, Collection[str]]
) -> tuple[str, ...]:
    """What a person checking a stored label should look at, in words: an empty or blank
    label (omnia prints a blank where the person goes), one longer than MAX_LABEL_CHARS, one
    that is another entity's true name (the viewer would mistake one person for another).
    `name_owners` maps a true name, stripped, to the ids of the entities it names. Nothing
    is refused or changed here: the line still reads as omnia writes it."""
    if label is None:
        return ()
    found: list[str] = []
    stripped = label.strip()
    if not stripped:
        found.append("empty label: lines print a blank where this person goes")
    if len(label) > MAX_LABEL_CHARS:
        found.append(f"label is {len(label)} characters long (over {MAX_LABEL_CHARS})")
    others = sorted(o for o in name_owners.get(stripped, ()) if o != target_id)
    if others:
        found.append(f"label is the true name of another entity ({', '.join(others)})")
    return tuple(found)


# --- validation at the alias door ----------------------------------------------------------

GENERATED_ID = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"  # UUID
    r"|\b[0-7][0-9A-HJKMNP-TV-Z]{25}\b",  # ULID (Crockford base32, upper case as generated)
    re.IGNORECASE,
)


def alias_target_errors(*, viewer_id: str, target_id: str, all_ids: Collection[str]) -> list[str]:
    """What is wrong with `target_id` as the target of one of `viewer_id`'s aliases."""
    errors: list[str] = []
    if target_id not in all_ids:
        errors.append(f"target {target_id!r} is not an object of this world")
    if target_id == viewer_id:
        errors.append('an entity\'s alias for itself is never used (self is always "you")')
    return errors


def alias_label_problems(label: str, *, all_ids: Collection[str]) -> tuple[list[str], list[str]]:
    """(errors, warnings) about `label` itself, whoever it names."""
    errors: list[str] = []
    warnings: list[str] = []
    stripped = label.strip()
    if stripped in all_ids:
        errors.append(f"label {label!r} is a system id")
    elif GENERATED_ID.search(label):
        errors.append(
            f"label {label!r} contains a generated id ({GENERATED_ID.search(label).group()})"
        )
    else:
        for other in sorted(all_ids):
            if other and re.search(rf"(?<![\w-]){re.escape(other)}(?![\w-])", label):
                warnings.append(f"label {label!r} contains the system id {other!r}")
    if not stripped:
        warnings.append("label is empty: lines will read with a blank where the name goes")
    return errors, warnings


def validate_alias_label(
    label: str, *, viewer_id: str, target_id: str, all_ids: Collection[str]
) -> tuple[list[str], list[str]]:
    """(errors, warnings) for setting `viewer_id`'s alias for `target_id` to `label`."""
    errors, warnings = alias_label_problems(label, all_ids=all_ids)
    target = alias_target_errors(viewer_id=viewer_id, target_id=target_id, all_ids=all_ids)
    return target + errors, warnings
