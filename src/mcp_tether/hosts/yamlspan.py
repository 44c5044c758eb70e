"""YAML documents as the same span tree the JSONC parser gives (`jsonc.Node`).

Guarantees: every value knows its exact `[start, end)` character span in the text (from
PyYAML's composer marks) and its Python value (PyYAML's safe constructor), so a YAML
config is edited like a JSONC one: only the bytes of the values that change. Block
collections carry `style="block"`, flow ones `style="flow"`. Anchors, tags and merge
keys are refused as "not editable" rather than guessed at. PyYAML is imported where a
YAML file is read: without it, only YAML files fail, with one line.
"""

from __future__ import annotations

from typing import Any

from mcp_tether.errors import ConfigError
from mcp_tether.hosts.jsonc import Member, Node

__all__ = ["parse"]


def parse(text: str, path: str) -> Node:
    try:
        import yaml  # type: ignore[import-untyped]  # no stubs needed: used via Any
    except ImportError:  # pragma: no cover - a declared dependency
        raise ConfigError(path, "reading YAML needs PyYAML (pip install pyyaml)") from None
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return Node("object", 0, 0, {})
        return _convert(loader, root, path, yaml)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        raise ConfigError(path, f"invalid YAML: {exc.problem or exc.context}", line=line,
                          column=col) from None
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise ConfigError(path, f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()


def _convert(loader: Any, node: Any, path: str, yaml: Any) -> Node:
    start, end = node.start_mark.index, node.end_mark.index
    if isinstance(node, yaml.MappingNode):
        out = Node("object", start, end, {}, style="flow" if node.flow_style else "block")
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise ConfigError(path, "a non-scalar mapping key is not editable")
            key = loader.construct_object(key_node, deep=True)
            if key == "<<":
                raise ConfigError(path, "YAML merge keys (<<) are not editable")
            value = _convert(loader, value_node, path, yaml)
            out.members.append(Member(str(key), key_node.start_mark.index,
                                      key_node.end_mark.index, value))
            out.value[str(key)] = value.value
            out.commas.append(-1)
        return out
    if isinstance(node, yaml.SequenceNode):
        out = Node("array", start, end, [], style="flow" if node.flow_style else "block")
        for item in node.value:
            child = _convert(loader, item, path, yaml)
            out.items.append(child)
            out.value.append(child.value)
            out.commas.append(-1)
        return out
    value = loader.construct_object(node, deep=True)
    kind = "string" if isinstance(value, str) else "number"
    return Node(kind, start, end, value, style=node.style or "")
