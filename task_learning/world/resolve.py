"""Naming objects the way users do: by id, by a type naming exactly one object, or as
"<type> in|on <place>" ("mug in dish rack", "steak-knife on the counter").

Names match ignoring case and treating '-', '_' and spaces alike; a type is also known by its
spoken name and aliases from the catalogue ("table" for DiningTable, "refrigerator" for Fridge).
"""
from __future__ import annotations

import difflib
import re
from typing import Any, Mapping

from task_learning.errors import UnknownObjectError
from task_learning.inputs.names import normalize_name
from task_learning.world.catalog import relation_for, spoken_name, type_names

_ARTICLE = re.compile(r"^(the|a|an)\s+")
_RELATION = re.compile(r"\s(in|on|inside|on top of)\s")


def _objects(metadata: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(metadata.get("objects") or [])


def _strip_article(text: str) -> str:
    return _ARTICLE.sub("", text).strip()


def describe_object(metadata: Mapping[str, Any], object_id: str) -> tuple[str, str, str]:
    """(spoken type, "in"/"on", spoken place): ("mug", "in", "dish rack"). A held object is
    ("mug", "in", "hand"); an object resting on nothing (furniture) has place ""."""
    by_id = {o["objectId"]: o for o in _objects(metadata)}
    record = by_id.get(object_id)
    if record is None:
        raise UnknownObjectError(f"no object with id {object_id!r} in the world")
    kind = spoken_name(record["objectType"])
    held = {o.get("objectId") for o in metadata.get("inventoryObjects") or []}
    if object_id in held or record.get("isPickedUp"):
        return kind, "in", "hand"
    parents = record.get("parentReceptacles") or []
    if not parents or parents[0] not in by_id:
        return kind, "in", ""
    parent = by_id[parents[0]]
    return kind, relation_for(parent["objectType"], parent), spoken_name(parent["objectType"])


def describe(metadata: Mapping[str, Any], object_id: str) -> str:
    """'mug in dish rack' (or just 'dining table' for furniture)."""
    kind, relation, place = describe_object(metadata, object_id)
    return f"{kind} {relation} {place}" if place else kind


def resolve_object(metadata: Mapping[str, Any], name: str) -> str:
    """The objectId a user's name refers to; UnknownObjectError (saying why) when it names no
    object or several."""
    if not isinstance(name, str) or not name.strip():
        raise UnknownObjectError("empty object name")
    objects = _objects(metadata)
    ids: set[str] = {o["objectId"] for o in objects}
    text = name.strip()
    if text in ids:
        return text
    if "|" in text:
        wanted = normalize_name(text)
        matches = [oid for oid in ids if normalize_name(oid) == wanted]
        if len(matches) == 1:
            return matches[0]
        raise UnknownObjectError(f"no object with id {text!r}" + _suggest(text, sorted(ids)))
    spoken = _strip_article(normalize_name(text))
    by_type = _of_type(objects, spoken)
    if len(by_type) == 1:
        return by_type[0]
    if len(by_type) > 1:
        listed = ", ".join(f"{oid} ({describe(metadata, oid)})" for oid in sorted(by_type))
        raise UnknownObjectError(f"'{name}' names {len(by_type)} objects: {listed}; name one by id or as "
                                 "'<type> in|on <place>'")
    located = _resolve_located(metadata, objects, spoken, name)
    if located is not None:
        return located
    vocabulary = sorted({n for o in objects for n in type_names(o["objectType"])})
    raise UnknownObjectError(f"no object called '{name}' in the world" + _suggest(spoken, vocabulary))


def _of_type(objects: list[Mapping[str, Any]], spoken: str) -> list[str]:
    return [o["objectId"] for o in objects if spoken in type_names(o["objectType"])]


def _resolve_located(metadata: Mapping[str, Any], objects: list[Mapping[str, Any]], spoken: str,
                     original: str) -> str | None:
    """Try every "<type> in|on <place>" split; the first split whose place resolves decides."""
    for match in _RELATION.finditer(f" {spoken} "):
        start, end = match.start(), match.end()
        padded = f" {spoken} "
        type_part = _strip_article(padded[:start].strip())
        place_part = _strip_article(padded[end:].strip())
        if not type_part or not place_part:
            continue
        candidates = _of_type(objects, type_part)
        if not candidates:
            continue
        # the place may itself be a type with several instances ("counter" in a kitchen with
        # three counter tops): the object must then be in/on one of them
        places = _of_type(objects, place_part)
        if not places:
            try:
                places = [resolve_object(metadata, place_part)]
            except UnknownObjectError:
                continue
        by_id = {o["objectId"]: o for o in objects}
        inside = [oid for oid in candidates if set(places) & set(by_id[oid].get("parentReceptacles") or [])]
        if len(inside) == 1:
            return inside[0]
        if len(inside) > 1:
            raise UnknownObjectError(f"'{original}' names {len(inside)} objects ({', '.join(sorted(inside))}); "
                                     "name one by id")
        raise UnknownObjectError(f"no {type_part} {match.group(1)} the {place_part} ({', '.join(places)}); "
                                 f"{type_part} objects: " + ", ".join(
                                     f"{oid} ({describe(metadata, oid)})" for oid in sorted(candidates)))
    return None


def _suggest(text: str, vocabulary: list[str]) -> str:
    hint = difflib.get_close_matches(text, vocabulary, n=1)
    return f" (did you mean '{hint[0]}'?)" if hint else ""
