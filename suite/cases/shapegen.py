"""Shape sets written as generators: templates over names, expanded for each product and dtype.

    shapes:
      tile_edges:
        generate:
          shapes: [[N], [N], [N]]                  # one shape per input, in signature order
                                                   # (or each: [N], every input's: a family's)
          N: [tile - 1, tile + 1, cores*tile + 1]  # expressions over hardware and tiling names

Names come from cases/hardware.yaml for the case's product (cores, ub, block, lanes, reach: counts in
elements of the dtype of the operator's primary input) and from the operator's tiling (its `tiling` method, e.g. tile).
A name with one value per chip variant (cores) makes one shape per value. Expressions take integers,
names, + - * // %, parentheses, min() and max(); nothing else is evaluated.
"""
from __future__ import annotations

import ast
import itertools
import operator
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from suite.common.yamlfile import FileError, LineDict, LineList

Shape = Tuple[int, ...]
_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_FUNCS = {"min": min, "max": max}
MAX_GENERATED = 10_000                 # shapes one generator may make for one product and dtype


class Expr:
    """One integer expression, parsed once; `names` it reads."""

    def __init__(self, text: Any, fail: Callable[[str], FileError]) -> None:
        self.text = str(text)
        if isinstance(text, bool) or not isinstance(text, (int, str)):
            raise fail(f"{text!r} is not an integer or an expression")
        try:
            self.tree = ast.parse(self.text.strip(), mode="eval").body
        except SyntaxError:
            raise fail(f"cannot parse {self.text!r} (integers, names, + - * // %, min, max)") from None
        self.names: List[str] = []
        self._check(self.tree, fail)

    def _check(self, node: ast.AST, fail) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return
        if isinstance(node, ast.Name):
            self.names.append(node.id)
            return
        if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            self._check(node.left, fail)
            self._check(node.right, fail)
            return
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            self._check(node.operand, fail)
            return
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS
                and node.args and not node.keywords):
            for a in node.args:
                self._check(a, fail)
            return
        raise fail(f"{self.text!r}: only integers, names, + - * // %, min() and max() are allowed")

    def value(self, env: Mapping[str, int]) -> int:
        return self._eval(self.tree, env)

    def _eval(self, node: ast.AST, env: Mapping[str, int]) -> int:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.BinOp):
            return _BIN[type(node.op)](self._eval(node.left, env), self._eval(node.right, env))
        if isinstance(node, ast.UnaryOp):
            v = self._eval(node.operand, env)
            return -v if isinstance(node.op, ast.USub) else v
        return _FUNCS[node.func.id](*(self._eval(a, env) for a in node.args))


class Generator:
    """A generated shape set: `shapes` (one template per input) and one list of expressions per
    variable; every combination of the variables' values makes one shape combination."""

    def __init__(self, path: Any, set_name: str, node: LineDict, inputs: Sequence[str],
                 known: Sequence[str]) -> None:
        self.path, self.set_name, self.line = path, set_name, node.line
        body = node["generate"]
        where = f"shapes.{set_name}.generate"
        if not isinstance(body, LineDict):
            raise FileError(path, node.line_of("generate"), where,
                            "is a mapping: shapes (templates) and a list of expressions per variable")
        key = "each" if "each" in body else "shapes"     # each: every input's template
        if "each" in body and "shapes" in body:
            raise FileError(path, body.line_of("each"), f"{where}.each",
                            "give shapes (one template per input) or each (every input's), not both")
        if key not in body:
            raise FileError(path, body.line, f"{where}.shapes", "is required (or each: every input's template)")
        self.variables: Dict[str, List[Expr]] = {}
        for k, v in body.items():
            if k == key:
                continue
            if not isinstance(k, str) or not k.isidentifier() or k in known or k in _FUNCS:
                raise FileError(path, body.line_of(k), f"{where}.{k}",
                                "a variable is a new identifier (not a hardware or tiling name)")
            items = v if isinstance(v, list) else [v]
            if not items:
                raise FileError(path, body.line_of(k), f"{where}.{k}", "is empty")
            lines = v.lines if isinstance(v, LineList) else [body.line_of(k)] * len(items)
            self.variables[k] = [Expr(e, self._fail(lines[i], f"{where}.{k}[{i}]")) for i, e in enumerate(items)]
        tmpl = body[key] if key == "shapes" else [body[key]] * len(inputs)
        if not isinstance(tmpl, list) or len(tmpl) != len(inputs):
            raise FileError(path, body.line_of("shapes"), f"{where}.shapes",
                            f"lists {len(inputs)} shapes ({', '.join(inputs)}), each a list of dimensions or scalar")
        self.templates: List[List[Expr]] = []
        for i, (name, t) in enumerate(zip(inputs, tmpl)):
            fail = self._fail(body.line_of(key), f"{where}.{key}" if key == "each" else f"{where}.shapes.{name}")
            if t == "scalar":
                t = []
            if not isinstance(t, list):
                raise fail(f"{t!r} is not a list of dimensions (or scalar)")
            self.templates.append([Expr(d, fail) for d in t])
        allowed = set(known) | set(self.variables)
        for exprs in [*self.variables.values(), *self.templates]:
            for e in exprs:
                for n in e.names:
                    if n not in allowed and n not in self.variables:
                        raise FileError(path, body.line, where,
                                        f"{e.text!r} names {n!r}, which is neither a variable here nor one of "
                                        f"{', '.join(sorted(known))}")
        for k, exprs in self.variables.items():
            for e in exprs:
                if any(n in self.variables for n in e.names):
                    raise FileError(path, body.line_of(k), f"{where}.{k}",
                                    f"{e.text!r}: a variable's expressions use hardware and tiling names only")

    def _fail(self, line: Optional[int], field: str) -> Callable[[str], FileError]:
        return lambda msg: FileError(self.path, line, field, msg)

    def expand(self, names: Mapping[str, Any], inputs: Sequence[str]) -> List[Dict[str, Shape]]:
        """The shape combinations for one product and dtype (`names`: their values; a tuple is one
        value per chip variant), in order, without repeats."""
        multi = [k for k, v in names.items() if isinstance(v, tuple)]
        seen: Dict[Tuple[Shape, ...], None] = {}
        for pick in itertools.product(*(names[k] for k in multi)):
            env = {**names, **dict(zip(multi, pick))}
            values = {}
            for k, exprs in self.variables.items():
                values[k] = [self._value(e, env, k) for e in exprs]
            for combo in itertools.product(*values.values()):
                full = {**env, **dict(zip(values, combo))}
                shapes = tuple(tuple(self._value(d, full, inputs[i]) for d in t)
                               for i, t in enumerate(self.templates))
                seen.setdefault(shapes, None)
                if len(seen) > MAX_GENERATED:
                    raise FileError(self.path, self.line, f"shapes.{self.set_name}",
                                    f"makes more than {MAX_GENERATED} shapes for one product and dtype")
        return [dict(zip(inputs, s)) for s in seen]

    def _value(self, e: Expr, env: Mapping[str, int], what: str) -> int:
        try:
            v = e.value(env)
        except ZeroDivisionError:
            raise FileError(self.path, self.line, f"shapes.{self.set_name}",
                            f"{e.text!r} divides by zero for {what}") from None
        if v < 0:
            raise FileError(self.path, self.line, f"shapes.{self.set_name}",
                            f"{e.text!r} is {v} for {what} (product values {_show(env)}): dimensions are >= 0")
        return int(v)


def _show(env: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in env.items() if not isinstance(v, tuple))
