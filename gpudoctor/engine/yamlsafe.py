"""Safe YAML for rule files from strangers: size-capped, alias-bomb-proof, and with a line for every value.

PyYAML's composer gives nodes with positions; we build plain Python data from them ourselves so that each
value's line is known (for error messages) and the number of nodes visited is bounded (an alias bomb
expands to billions of nodes from a few hundred bytes).
"""

from __future__ import annotations

from typing import Any

MAX_BYTES = 1024 * 1024
MAX_NODES = 200_000
MAX_DEPTH = 64


class YamlError(Exception):
    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


PLAIN_TAGS = frozenset(
    "tag:yaml.org,2002:" + t for t in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp")
)
Path = tuple  # of str keys and int indexes


def load(text: str) -> tuple[Any, dict[Path, int]]:
    """Parse one YAML document. Returns the data and {path: line} for every node (1-based lines)."""
    import yaml

    if len(text.encode("utf-8", errors="replace")) > MAX_BYTES:
        raise YamlError(f"file is larger than {MAX_BYTES // 1024} KiB")
    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        node = yaml.compose(text, Loader=loader_cls)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e)
        raise YamlError(f"not valid YAML: {problem}", (mark.line + 1) if mark else 0) from None
    except RecursionError:
        raise YamlError("YAML nesting is too deep") from None
    lines: dict[Path, int] = {}
    if node is None:
        return None, lines
    budget = [MAX_NODES]
    constructor = yaml.SafeLoader("")  # only its scalar resolution is used
    data = _build(node, (), lines, budget, constructor, 0)
    return data, lines


def _build(node: Any, path: Path, lines: dict, budget: list, constructor: Any, depth: int) -> Any:
    import yaml

    budget[0] -= 1
    if budget[0] < 0:
        raise YamlError(f"more than {MAX_NODES} values (aliases expanding?)", node.start_mark.line + 1)
    if depth > MAX_DEPTH:
        raise YamlError(f"nested deeper than {MAX_DEPTH} levels", node.start_mark.line + 1)
    lines[path] = node.start_mark.line + 1
    if node.tag not in PLAIN_TAGS:
        raise YamlError(f"unsupported tag {node.tag}", node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlError("mapping keys must be plain values", key_node.start_mark.line + 1)
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise YamlError("merge keys (<<) are not allowed in rule files", key_node.start_mark.line + 1)
            if key_node.tag not in PLAIN_TAGS:
                raise YamlError(f"unsupported tag {key_node.tag}", key_node.start_mark.line + 1)
            key = _scalar(key_node, constructor)
            if not isinstance(key, (str, int, float, bool)):
                raise YamlError("mapping keys must be plain values", key_node.start_mark.line + 1)
            if key in out:
                raise YamlError(f"duplicate key {key!r}", key_node.start_mark.line + 1)
            out[key] = _build(value_node, (*path, key), lines, budget, constructor, depth + 1)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [
            _build(child, (*path, i), lines, budget, constructor, depth + 1)
            for i, child in enumerate(node.value)
        ]
    return _scalar(node, constructor)


def _scalar(node: Any, constructor: Any) -> Any:
    import yaml

    try:
        return constructor.construct_object(node)
    # PyYAML's constructors assume the resolver matched: a date such as 2001-13-45 or an integer longer
    # than int() reads (Python 3.11+) raise ValueError; explicit tags on other text (`!!timestamp x`,
    # `!!bool x`) raise AttributeError or KeyError.
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, AttributeError, LookupError) as e:
        kind = str(node.tag).rsplit(":", 1)[-1]
        shown = repr(node.value) if len(str(node.value)) <= 40 else repr(str(node.value)[:40]) + "..."
        why = f" ({str(e)[:100]})" if isinstance(e, (ValueError, yaml.YAMLError)) else ""
        raise YamlError(f"bad {kind} value {shown}{why}", node.start_mark.line + 1) from None
