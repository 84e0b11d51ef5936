#!/usr/bin/env python3
"""Fails when the files or the modules of a crate depend on each other in a
ring that is not a known one of the baseline, or when the baseline names a
ring that is gone.

Two checks run over every crate of the repository (each `src/lib.rs`,
`src/main.rs`, `src/bin/*`, `tests/*`, `benches/*` and `examples/*` root).

**File loops.** Files a.rs and b.rs depend on each other, directly or
around a longer ring (a -> b -> c -> a). Neither can then be understood or
changed alone. Every file counts, but an edge from a file to one of its
own descendants (a `mod.rs`, or `foo.rs` with `foo/`, to a file below it)
is not counted: a parent declares, re-exports, wires and drives its
children (`mod x;`, `pub use x::Item`, `x::routes()`, `self.m()` where a
child's `impl` block defines `m`) and is read with them as one module.
Edges up, from a child to its ancestors (`super::Thing`, `crate::Config`),
count. So a parent and its own descendant never make a loop between
themselves, while siblings that use each other do, as does a ring that
leaves the parent's subtree and comes back.

**Module loops.** A module is a file or a directory module (`foo/mod.rs`,
or `foo.rs` with `foo/`) with everything below it. Two modules of which
neither contains the other, say `api` and `crons`, form a loop when
something under `api` depends on something under `crons` and something
under `crons` depends on something under `api` (`api/crons.rs ->
crons/fire.rs -> api/state.rs`), or around a longer ring (`api -> lifecycle
-> intake -> webhooks -> api`). Concretely, each file edge u -> v is lifted
to the two children A (holding u) and B (holding v) of the closest module
holding both, and the children of every module must form no ring. A
module and its own ancestor are never a module loop (see above: the edge
between them is not lifted). A module loop whose modules are all plain
files (no directory below them) is the same ring as a file loop and is
reported once, as the file loop.

**What is an edge** (file u depends on file v):

- every path in non-test code that starts with `crate::`, `super::`,
  `self::`, a child module of u (`use state::ApiState` in a `mod.rs`), or
  a name u imported from the crate (`use crate::step::follow_up;` then
  `follow_up::f()`), in `use` statements and inline alike. A path is
  followed to the file that defines the item it names: through directory
  modules, through re-exports (`pub use`, `pub use x::*`, renames with
  `as`, chains of them), so `crate::api::ApiState`, where `api/mod.rs`
  says `pub use state::ApiState`, leads to `api/state.rs`, not to
  `api/mod.rs`. A path that leads out of the crate (`use
  deepfleet_settings as settings;` then `crate::settings::X`) is no edge;
  one that names nothing the script can find stops at the last file it
  reached;
- a `use` in u is an edge to what it names, a re-export (`pub use`, any
  `pub(...)`) included: u's interface is then made of it. A re-export of
  u's own descendants is, like every edge down, not counted: it only
  publishes the child, as `mod child;` declares it (no import either);
- inherent `impl` blocks of one type across files: when type T is defined
  in file X and file Y holds `impl T { ... }` (an inherent impl; `impl
  Trait for T` is not one), Y depends on X; and a call in file F of a
  method that such a block in Y defines is an edge F -> Y. Calls counted:
  `self.m(` and `Self::m(` inside any impl block of T (inherent or trait)
  in F, and `T::m(` anywhere in F where T names that type. So a type whose
  inherent impl is split across files that call each other's methods is a
  file loop. Methods of trait impls are not followed (a trait is how a
  call is meant to reach code it does not name), nor are calls on other
  receivers (`runner.m()`; without types, the receiver is unknown).

**Test code** is left out: files declared under `#[cfg(test)]`
(`#[cfg(test)] mod tests;`, `#[path = "x_tests.rs"]`), inline
`#[cfg(test)] mod tests { ... }` blocks and any other item, impl, method,
use or field under `#[cfg(test)]` (or `#[cfg(all(test, ...))]`). Tests may
import what they test. Comments (doc links included), strings and char
literals are not read.

Each loop is printed as one block: a shortest ring through it, each step
with the file:line of a path that makes it, then any other edges inside the
same loop (breaking the printed ring alone may not end the loop).

**The baseline** (`scripts/import-loops.baseline`) is a ratchet: it lists
the loops that remain for now, and can only shrink. A line names one loop
by its crate root, its kind and its members in any order, so that it stays
the same however the ring is printed:

    # why it remains (each entry needs a `#` line above it, in its paragraph)
    worker/src/lib.rs module crate::agent crate::step crate::tools
    store/tests/conformance.rs file store/tests/conformance/a.rs store/tests/conformance/b.rs

Members are module paths (`crate::a::b`) in a module loop and files from
the repository's root in a file loop. A loop in the baseline is printed as
known, one line (`--known` prints its edges), and passes. The check fails
on any loop not in it, and on any entry that no loop matches any more: a
loop broken must leave the baseline in the same change. A loop that shrank
(fewer members) is a new loop and an unmatched entry at once; the message
gives the smaller line to put in place of the old. One that grew fails:
break what joined it. Malformed, repeated or unexplained entries fail.

Usage: scripts/check-import-loops.py [--known] [ROOT]  (default: the repository)
"""

import re
import sys
from collections import deque
from pathlib import Path

ITEM = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:default\s+)?(?:async\s+|unsafe\s+|const\s+|extern\s+(?:\w+\s+)?)*"
    r"(?:struct|enum|trait|fn|type|const|static|union|mod)\s+(\w+)",
    re.M,
)
MACRO = re.compile(r"\bmacro_rules!\s*(\w+)")
MOD_DECL = re.compile(
    r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;"
)
PATH_ATTR = re.compile(r'#\[path\s*=\s*"([^"]+)"\]')
USE = re.compile(r"(?<![\w])(?:pub(?:\s*\([^)]*\))?\s+)?use\s+([^;]+);", re.S)
INLINE = re.compile(r"(?<![\w:.$'])((?:[A-Za-z_]\w*)(?:::\w+)+)")
CFG_TEST = re.compile(r"#\[cfg\(\s*(?:test|all\(\s*test\b[^\]]*\))\s*\)\]")
ITEM_START = re.compile(
    r"(?:pub\b|fn\b|impl\b|mod\b|use\b|struct\b|enum\b|const\b|static\b|type\b|"
    r"trait\b|async\b|unsafe\b|extern\b|union\b|macro_rules!)"
)
IMPL = re.compile(r"^[ \t]*(?:default\s+)?(?:unsafe\s+)?impl\b", re.M)
FN = re.compile(r"(?<![\w])fn\s+(\w+)")
SELF_CALL = re.compile(r"(?<![\w.])(self\s*\.|Self\s*::)\s*(\w+)\s*(?:::\s*<[^(){};]*>\s*)?\(")
PATH_CALL = re.compile(r"(?<![\w:.])([A-Za-z_]\w*)\s*::\s*(\w+)\s*(?:::\s*<[^(){};]*>\s*)?\(")

LEX = re.compile(r"""//|/\*|b?r#*"|b?"|'""")


def strip_comments_and_strings(text, keep_strings=False):
    """Blanks comments, strings and char literals (strings kept with
    `keep_strings`, for `#[path = "..."]`); keeps every newline."""
    out, pos, n = [], 0, len(text)
    while True:
        m = LEX.search(text, pos)
        if not m:
            out.append(text[pos:])
            break
        i, tok = m.start(), m.group()
        prev = text[i - 1] if i else ""
        ident_before = prev.isalnum() or prev == "_"
        if tok[0] in "br" and ident_before:
            # `xr"` or `xb"`: part of an identifier, the quote starts a plain string.
            out.append(text[pos : i + len(tok) - 1])
            pos = i + len(tok) - 1
            continue
        out.append(text[pos:i])
        if tok == "//":
            end = text.find("\n", i)
            end = n if end < 0 else end
        elif tok == "/*":
            depth, end = 1, i + 2
            while end < n and depth:
                if text.startswith("/*", end):
                    depth, end = depth + 1, end + 2
                elif text.startswith("*/", end):
                    depth, end = depth - 1, end + 2
                else:
                    end += 1
        elif tok.endswith('"') and "r" in tok:
            hashes = tok.count("#")
            close = text.find('"' + "#" * hashes, m.end())
            end = n if close < 0 else close + 1 + hashes
            out.append(text[i:end] if keep_strings else '""')
        elif tok.endswith('"'):
            end = m.end()
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            end += 1
            out.append(text[i:end] if keep_strings else '""')
        else:  # a quote: a char literal or a lifetime
            if text.startswith("\\", i + 1):
                close = text.find("'", i + 3)
                end = n if close < 0 else close + 1
                out.append("' '")
            elif i + 2 < n and text[i + 2] == "'":
                end = i + 3
                out.append("' '")
            else:
                out.append("'")
                pos = i + 1
                continue
        if not (keep_strings and tok.endswith('"')):
            out.append("\n" * text.count("\n", i, end))
        pos = end
    return "".join(out)


def match_brace(text, i):
    """The index just past the `}` that closes the `{` at `i`."""
    depth, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def strip_test_code(text):
    """Blanks every item, statement or field under `#[cfg(test)]`; keeps newlines."""
    out, pos = [], 0
    for m in CFG_TEST.finditer(text):
        if m.start() < pos:
            continue
        i = m.end()
        while True:  # further attributes
            s = re.match(r"\s*#\[", text[i:])
            if not s:
                break
            depth, j = 0, i + s.end() - 1
            while j < len(text):
                depth += {"[": 1, "]": -1}.get(text[j], 0)
                j += 1
                if depth == 0:
                    break
            i = j
        lead = re.match(r"\s*", text[i:]).end()
        is_item = bool(ITEM_START.match(text, i + lead))
        depth = 0
        while i < len(text):
            ch = text[i]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif depth == 0 and ch == ";":
                i += 1
                break
            elif depth == 0 and ch == "{":
                i = match_brace(text, i)
                break
            elif depth <= 0 and not is_item and ch in ",}":
                i += ch == ","
                break
            i += 1
        out.append(text[pos : m.start()])
        out.append("\n" * text.count("\n", m.start(), i))
        pos = i
    out.append(text[pos:])
    return "".join(out)


def expand_use(tree):
    """`a::{b, c::{d as e}, f::*}` -> [(a::b, b), (a::c::d, e), (a::f::*, *)]."""
    tree = re.sub(r"\s+", " ", tree).strip()
    tree = re.sub(r"\s*::\s*", "::", tree)
    tree = re.sub(r"\s*([{},])\s*", r"\1", tree)
    brace = tree.find("{")
    if brace < 0:
        alias = re.match(r"(.*?)\s+as\s+(\w+)$", tree)
        if alias:
            return [(alias.group(1), alias.group(2))]
        return [(tree, tree.split("::")[-1])]
    head, body = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    parts.append(cur)
    paths = []
    for part in filter(None, (p.strip() for p in parts)):
        for sub, name in expand_use(part):
            if sub == "self":
                prefix = head.rstrip(":")
                paths.append((prefix, prefix.split("::")[-1] if name == "self" else name))
            else:
                paths.append((head + sub, name))
    return paths


def line_of(text, index):
    return text.count("\n", 0, index) + 1


def is_within(module, ancestor):
    return module[: len(ancestor)] == ancestor


class Crate:
    def __init__(self, root_file):
        self.files = {}  # module path tuple -> Path
        self.test = set()
        self._code = {}
        self._items = {}
        self._uses = {}
        self._resolved = {}
        self.load(root_file, (), False)

    def load(self, path, module, is_test):
        self.files[module] = path
        if is_test:
            self.test.add(module)
        text = strip_comments_and_strings(path.read_text(errors="replace"), keep_strings=True)
        if path.name in ("mod.rs", "lib.rs", "main.rs") or module == ():
            base = path.parent
        else:
            base = path.parent / path.stem
        for m in MOD_DECL.finditer(text):
            attrs, name = m.group(1), m.group(2)
            custom = PATH_ATTR.search(attrs)
            if custom:
                child = path.parent / custom.group(1)
            else:
                child = base / f"{name}.rs"
                if not child.exists():
                    child = base / name / "mod.rs"
            if child.exists() and module + (name,) not in self.files:
                self.load(child, module + (name,), is_test or bool(CFG_TEST.search(attrs)))

    # What each file holds.

    def code(self, module):
        if module not in self._code:
            text = strip_comments_and_strings(self.files[module].read_text(errors="replace"))
            self._code[module] = strip_test_code(text)
        return self._code[module]

    def items(self, module):
        if module not in self._items:
            code = self.code(module)
            self._items[module] = set(ITEM.findall(code)) | set(MACRO.findall(code))
        return self._items[module]

    def uses(self, module):
        """[(path, name, line)] of every `use` in `module`: `use a::{b as c}`
        gives (a::b, c, line); a glob's name is `*`."""
        if module not in self._uses:
            code, found = self.code(module), []
            for m in USE.finditer(code):
                statement = m.group()
                for path, name in expand_use(m.group(1)):
                    # The line of the path's last name (use trees span lines).
                    last = [seg for seg in path.split("::") if seg != "*"][-1:] or [""]
                    at = re.search(r"\b%s\b" % re.escape(last[0]), statement)
                    found.append((path, name, line_of(code, m.start() + (at.start() if at else 0))))
            self._uses[module] = found
        return self._uses[module]

    def imports(self, module):
        """name -> path of the non-glob `use`s of `module`."""
        return {name: path for path, name, _ in self.uses(module) if name not in ("*", "_")}

    # Following paths.

    def start(self, module, segs, seen):
        """Where a path used in `module` starts: (module, rest) or None (outside the crate)."""
        head = segs[0]
        if head == "crate":
            return (), segs[1:]
        if head in ("self", "super"):
            cur, rest = module, segs
            while rest and rest[0] in ("self", "super"):
                if rest[0] == "super":
                    cur = cur[:-1]
                rest = rest[1:]
            return cur, rest
        if module + (head,) in self.files:
            return module, segs
        imported = self.imports(module).get(head)
        if imported is not None and imported.split("::")[-1] != "*":
            key = ("import", module, head)
            if key in seen:
                return None
            seen.add(key)
            target = imported.split("::")
            if target[0] == "":
                return None
            inner = self.start(module, target, seen)
            if inner is None:
                return None
            return inner[0], inner[1] + segs[1:]
        if head in self.items(module):
            return module, segs
        return None  # another crate, the prelude, or a name only a glob brings in

    def resolve(self, module, path, seen=None):
        """(file module that defines what `path` names, exact) or None when
        the path leads out of the crate. `exact` is False when the path
        stops at a module that names nothing by that name."""
        key = (module, path)
        if seen is None and key in self._resolved:
            return self._resolved[key]
        result = self._resolve(module, path, seen if seen is not None else set())
        if seen is None:
            self._resolved[key] = result
        return result

    def _resolve(self, module, path, seen):
        segs = path.split("::")
        if segs[0] == "":
            return None
        begun = self.start(module, segs, seen)
        if begun is None:
            return None
        cur, rest = begun
        while True:
            while rest and cur + (rest[0],) in self.files:
                cur, rest = cur + (rest[0],), rest[1:]
            if not rest or rest == ["*"]:
                return cur, True
            name = rest[0]
            if name in self.items(cur):
                return cur, True
            if (cur, name) in seen:
                return cur, False
            seen.add((cur, name))
            moved = False
            for target, alias, _ in self.uses(cur):
                if alias == name:
                    begun = self.start(cur, target.split("::"), seen)
                    if begun is None:
                        return None  # an outside item, imported or re-exported here
                    cur, rest = begun[0], begun[1] + rest[1:]
                    moved = True
                    break
            if moved:
                continue
            for target, alias, _ in self.uses(cur):
                if alias == "*":
                    prefix = target[: -len("::*")] if target.endswith("::*") else target
                    found = self._resolve(cur, prefix + "::" + "::".join(rest), seen)
                    if found is not None and found[1]:
                        return found
            # Nothing by that name found here (a macro, a name from an
            # outside glob): the path stops at this file.
            return cur, False

    # Impl blocks.

    def impls(self, module):
        """[(type path, inherent, body start, body end, header line)] of `module`."""
        code, found = self.code(module), []
        for m in IMPL.finditer(code):
            i, depth, n = m.end(), 0, len(code)
            if code[i:].lstrip().startswith("<"):
                i = code.index("<", i)
                while i < n:
                    ch = code[i]
                    if ch == "<":
                        depth += 1
                    elif ch == ">" and code[i - 1] != "-":
                        depth -= 1
                        if depth == 0:
                            i += 1
                            break
                    i += 1
            brace = code.find("{", i)
            semi = code.find(";", i)
            if brace < 0 or 0 <= semi < brace:
                continue
            header = code[i:brace]
            header = re.split(r"\bwhere\b", header)[0]
            inherent = True
            parts = re.split(r"\bfor\b(?![^<]*>)", header)
            if len(parts) > 1:
                inherent = False
                header = parts[-1]
            header = header.strip()
            if header.startswith("dyn ") or header.startswith("!"):
                continue
            header = re.sub(r"\s+", "", header)
            header = re.sub(r"<.*", "", header)
            if not re.fullmatch(r"(?:\w+::)*\w+", header or ""):
                continue  # &T, dyn Trait, tuples: no named self type
            found.append((header, inherent, brace, match_brace(code, brace), line_of(code, m.start())))
        return found

    def type_of(self, module, path):
        """(defining module, name) of the type `path` names in `module`."""
        resolved = self.resolve(module, path)
        if resolved is None:
            return None
        name = path.split("::")[-1]
        target = resolved[0]
        # Follow a rename (`use x::Thing as Other`) to the defined name.
        if name not in self.items(target):
            alias = self.imports(module).get(name)
            if alias:
                name = alias.split("::")[-1]
        return target, name

    # The graph.

    def edges(self):
        """{module: {target: (line, what)}} over the non-test modules."""
        graph = {m: {} for m in self.files if m not in self.test}

        def add(src, dst, line, what):
            if dst is None or dst not in graph or is_within(dst, src):
                return  # itself, test code, or its own descendant
            old = graph[src].get(dst)
            if old is None or line < old[0]:
                graph[src][dst] = (line, what)

        methods = {}  # (type module, type name) -> {method: {(module, line)}}
        blocks = {}  # module -> [(type key, start, end)]
        for module in graph:
            code = self.code(module)
            for path, _, line in self.uses(module):
                path = path[: -len("::*")] if path.endswith("::*") else path
                resolved = self.resolve(module, path)
                if resolved is not None:
                    add(module, resolved[0], line, f"use {path}")
            blanked = USE.sub(lambda m: "\n" * m.group().count("\n"), code)
            for m in INLINE.finditer(blanked):
                path = m.group(1)
                resolved = self.resolve(module, path)
                if resolved is not None:
                    add(module, resolved[0], line_of(blanked, m.start()), path)
            for path, inherent, start, end, line in self.impls(module):
                key = self.type_of(module, path)
                if key is None:
                    continue
                blocks.setdefault(module, []).append((key, start, end))
                if not inherent:
                    continue
                add(module, key[0], line, f"impl {path}")
                body = code[start:end]
                depth = 0
                last = 0
                for f in FN.finditer(body):
                    depth += body.count("{", last, f.start()) - body.count("}", last, f.start())
                    last = f.start()
                    if depth == 1:
                        methods.setdefault(key, {}).setdefault(f.group(1), set()).add(
                            (module, line_of(code, start + f.start()))
                        )
        for module in graph:
            code = self.code(module)
            calls = []  # (type key, method, line, what)
            for key, start, end in blocks.get(module, []):
                for c in SELF_CALL.finditer(code, start, end):
                    recv = "self." if c.group(1).startswith("self") else "Self::"
                    calls.append((key, c.group(2), line_of(code, c.start()), f"{recv}{c.group(2)}()"))
            for c in PATH_CALL.finditer(code):
                name = c.group(1)
                if not name[0].isupper() or name == "Self":
                    continue
                key = self.type_of(module, name)
                if key is not None and key in methods:
                    calls.append((key, c.group(2), line_of(code, c.start()), f"{name}::{c.group(2)}()"))
            for key, method, line, what in calls:
                for target, _ in sorted(methods.get(key, {}).get(method, ())):
                    add(module, target, line, f"{what} (impl {key[1]})")
        return graph


def sccs(graph):
    """Strongly connected components of more than one node."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def shortest_ring(graph, comp, name):
    """A shortest cycle inside `comp`, starting at its first member by name."""
    members = set(comp)
    best = None
    for start in sorted(comp, key=name):
        prev, queue = {start: None}, deque([start])
        while queue:
            v = queue.popleft()
            for w in sorted(graph[v], key=name):
                if w not in members:
                    continue
                if w == start:
                    ring = [v]
                    while prev[ring[-1]] is not None:
                        ring.append(prev[ring[-1]])
                    ring.reverse()
                    if best is None or len(ring) < len(best):
                        best = ring
                    queue.clear()
                    break
                if w not in prev:
                    prev[w] = v
                    queue.append(w)
        if best is not None and len(best) == 2:
            break
    return best


def lift(crate, graph):
    """{parent: {child A: {child B: [(u, v, line, what)]}}} of the file edges
    u -> v whose files lie in different children A and B of `parent`."""
    out = {}
    for u, targets in graph.items():
        for v, (line, what) in targets.items():
            common = 0
            while common < min(len(u), len(v)) and u[common] == v[common]:
                common += 1
            if common == len(u) or common == len(v):
                continue  # one holds the other
            parent = u[:common]
            a, b = u[: common + 1], v[: common + 1]
            out.setdefault(parent, {}).setdefault(a, {}).setdefault(b, []).append((u, v, line, what))
    return out


def report(crate, graph, root):
    """[(key, block)] of every loop of `crate`: `key` names the loop in the
    baseline (see `baseline_key`), `block` is its text."""

    def where(m):
        return str(crate.files[m].relative_to(root))

    def edge_line(u, v):
        line, what = graph[u][v]
        return f"{where(u)}:{line} {what} -> {where(v)}"

    blocks = []
    for comp in sorted(sccs(graph), key=lambda c: sorted(map(where, c))):
        ring = shortest_ring(graph, comp, where)
        key = ("file", tuple(sorted(map(where, comp))))
        lines = ["file loop: " + " -> ".join(where(m) for m in ring + ring[:1])]
        used = set()
        for u, v in zip(ring, ring[1:] + ring[:1]):
            used.add((u, v))
            lines.append("  " + edge_line(u, v))
        others = sorted(
            (where(u), where(v), u, v)
            for u in comp
            for v in graph[u]
            if v in comp and (u, v) not in used
        )
        if others:
            lines.append(f"  also inside this loop ({len(comp)} files):")
            lines.extend("    " + edge_line(u, v) for _, _, u, v in others)
        blocks.append((key, "\n".join(lines)))

    has_children = {m[:-1] for m in graph if m}

    def mod_name(m):
        return "::".join(("crate",) + m)

    def mod_where(m):
        path = crate.files[m]
        if m in has_children and path.name not in ("mod.rs", "lib.rs", "main.rs"):
            return f"{where(m)} + {path.parent.relative_to(root) / path.stem}/"
        return where(m) if m not in has_children else str(path.parent.relative_to(root)) + "/"

    for parent, siblings in sorted(lift(crate, graph).items()):
        sgraph = {m: set() for m in siblings}
        for a, targets in siblings.items():
            for b in targets:
                sgraph.setdefault(b, set())
                sgraph[a].add(b)
        for comp in sorted(sccs(sgraph), key=lambda c: sorted(map(mod_name, c))):
            if not any(m in has_children for m in comp):
                continue  # the same ring as a file loop
            ring = shortest_ring(sgraph, comp, mod_name)
            key = ("module", tuple(sorted(map(mod_name, comp))))
            lines = [
                "module loop: "
                + " -> ".join(mod_name(m) for m in ring + ring[:1])
                + f"  (modules {', '.join(mod_where(m) for m in sorted(comp, key=mod_name))})"
            ]
            used = set()

            def step(a, b):
                via = sorted(siblings[a][b], key=lambda e: (where(e[0]), e[2]))
                out = [f"  {mod_name(a)} -> {mod_name(b)}:"]
                for u, v, _, _ in via[:3]:
                    out.append("    " + edge_line(u, v))
                if len(via) > 3:
                    out.append(f"    ... and {len(via) - 3} more file edge(s)")
                return out

            for a, b in zip(ring, ring[1:] + ring[:1]):
                used.add((a, b))
                lines.extend(step(a, b))
            others = sorted(
                (mod_name(a), mod_name(b), a, b)
                for a in comp
                for b in sgraph[a]
                if b in comp and (a, b) not in used
            )
            if others:
                lines.append(f"  also inside this loop ({len(comp)} modules):")
                for _, _, a, b in others:
                    lines.extend("  " + x for x in step(a, b))
            blocks.append((key, "\n".join(lines)))
    return blocks


def crate_roots(root):
    for manifest in sorted(root.glob("**/Cargo.toml")):
        rel = manifest.relative_to(root).parts
        if "target" in rel or any(p.startswith(".") for p in rel):
            continue
        base = manifest.parent
        for rel in ("src/lib.rs", "src/main.rs"):
            if (base / rel).exists():
                yield base / rel
        for folder in ("tests", "benches", "examples", "src/bin"):
            for entry in sorted((base / folder).glob("*")):
                if entry.suffix == ".rs":
                    yield entry
                elif (entry / "main.rs").exists():
                    yield entry / "main.rs"


BASELINE = "scripts/import-loops.baseline"
KINDS = ("file", "module")


def baseline_line(key):
    """A loop's line in the baseline: crate root, kind, members in order."""
    crate, kind, members = key
    return " ".join((crate, kind) + members)


def read_baseline(path, shown):
    """({key: line number}, [error]) of the baseline file at `path` (empty
    when there is none); `shown` names it in the errors."""
    entries, errors = {}, []
    if not path.exists():
        return entries, errors
    explained = False
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        parts = raw.split()
        if not parts:
            explained = False
            continue
        if parts[0].startswith("#"):
            explained = True
            continue
        if len(parts) < 4 or parts[1] not in KINDS:
            errors.append(f"{shown}:{number}: expected `CRATE_ROOT file|module A B ...`: {raw}")
            continue
        key = (parts[0], parts[1], tuple(sorted(set(parts[2:]))))
        if key in entries:
            errors.append(f"{shown}:{number}: the same loop as line {entries[key]}")
        elif not explained:
            errors.append(f"{shown}:{number}: say why this loop remains, in a `#` line above it")
        entries.setdefault(key, number)
    return entries, errors


def hint(key, stale, shown):
    """What to do about a new loop that overlaps a baseline entry no loop
    matches any more (the same loop, shrunk or changed)."""
    crate, kind, members = key
    for (s_crate, s_kind, s_members), number in sorted(stale.items(), key=lambda e: e[1]):
        if (s_crate, s_kind) != (crate, kind) or not set(members) & set(s_members):
            continue
        if set(members) <= set(s_members):
            return (
                f"  what is left of the loop at {shown}:{number}; replace that line with:\n"
                f"    {baseline_line(key)}"
            )
        return (
            f"  the loop at {shown}:{number} grew or changed into this one; the baseline\n"
            f"  only shrinks, so break what joined it (if a module was only renamed,\n"
            f"  replace that line with: {baseline_line(key)})"
        )
    return f"  not in {shown}: break it"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    show_known = "--known" in argv
    args = [a for a in argv if a != "--known"]
    root = Path(args[0] if args else Path(__file__).resolve().parent.parent).resolve()
    baseline, errors = read_baseline(root / BASELINE, BASELINE)
    new, known, crates = [], [], 0
    for entry in crate_roots(root):
        crates += 1
        crate = Crate(entry)
        name = str(entry.relative_to(root))
        for (kind, members), block in report(crate, crate.edges(), root):
            key = (name, kind, members)
            (known if key in baseline else new).append((key, block))
    found = {key for key, _ in known}
    stale = {key: number for key, number in baseline.items() if key not in found}
    for key, block in known:
        if show_known:
            print(f"== known, {BASELINE}:{baseline[key]}: {key[0]}\n\n{block}\n")
        else:
            print(f"known ({BASELINE}:{baseline[key]}) {key[0]}: {block.splitlines()[0]}")
    if known and not show_known:
        print("(`scripts/check-import-loops.py --known` shows their edges)\n")
    by_crate = {}
    for key, block in new:
        by_crate.setdefault(key[0], []).append(block + "\n" + hint(key, stale, BASELINE))
    for name, blocks in by_crate.items():
        print(f"== {name}: {len(blocks)} loop(s)\n")
        for block in blocks:
            print(block + "\n")
    for key, number in sorted(stale.items(), key=lambda e: e[1]):
        print(f"{BASELINE}:{number}: no such loop any more; remove it from the baseline:")
        print(f"  {baseline_line(key)}\n")
    for error in errors:
        print(error)
    if new or stale or errors:
        print(
            f"{len(new)} import loop(s) not in the baseline, {len(stale)} baseline "
            f"entr{'y' if len(stale) == 1 else 'ies'} matching no loop, "
            f"{len(errors)} error(s) in {BASELINE}"
        )
        return 1
    if known:
        print(f"no new import loops; {len(known)} known in {BASELINE} ({crates} crate roots)")
        return 0
    print(f"no import loops between files or modules ({crates} crate roots)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
