#!/usr/bin/env python3
"""Fails when two or more source files of a crate import each other.

An import loop between files (a.rs uses b.rs and b.rs uses a.rs, directly
or around a longer ring) means neither can be understood or changed
alone. Edges come from every `crate::`, `super::` and `self::` path in
non-test code (use statements and inline paths); a path naming an item
that a module only re-exports (`pub use x::Item`) leads to the file that
defines it. Test code (`#[cfg(test)]` modules, inline or in files of their
own) may import what it tests and is left out. Declaring a submodule
(`mod x;`) is not an import.

Usage: scripts/check-import-loops.py [ROOT]  (default: the repository)
"""

import re
import sys
from pathlib import Path

ITEM = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|unsafe\s+|const\s+)*"
    r"(?:struct|enum|trait|fn|type|const|static|union|mod)\s+(\w+)",
    re.M,
)
MOD_DECL = re.compile(
    r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;"
)
PATH_ATTR = re.compile(r'#\[path\s*=\s*"([^"]+)"\]')
USE = re.compile(r"\buse\s+([^;]+);", re.S)
PUB_USE = re.compile(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", re.S)
INLINE = re.compile(r"(?<![\w:])((?:crate|super|self)(?:::\w+)+)")


def strip_comments_and_strings(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return re.sub(r"//[^\n]*", "", text)


def strip_inline_test_modules(text):
    """Removes `#[cfg(test)] mod name { ... }` blocks."""
    out, pos = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub\s+)?mod\s+\w+\s*\{", text):
        if m.start() < pos:
            continue
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out.append(text[pos:m.start()])
        pos = i
    out.append(text[pos:])
    return "".join(out)


def expand_use(tree):
    """`a::{b, c::{d as e}}` -> [a::b, a::c::d]."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    brace = tree.find("{")
    if brace < 0:
        return [tree]
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
    for part in filter(None, parts):
        for sub in expand_use(part):
            paths.append(head + sub if sub != "self" else head.rstrip(":"))
    return paths


class Crate:
    def __init__(self, root_file):
        self.files = {}  # module path tuple -> Path
        self.test = set()
        self.load(root_file, (), False)

    def load(self, path, module, is_test):
        self.files[module] = path
        if is_test:
            self.test.add(module)
        text = strip_comments_and_strings(path.read_text(errors="replace"))
        if path.name in ("mod.rs", "lib.rs", "main.rs"):
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
            if child.exists():
                self.load(child, module + (name,), is_test or "cfg(test)" in attrs)

    def code(self, module):
        text = strip_comments_and_strings(self.files[module].read_text(errors="replace"))
        return strip_inline_test_modules(text)

    def absolute(self, module, path):
        segs = path.split("::")
        if segs[0] == "crate":
            cur, rest = (), segs[1:]
        else:
            cur, rest = module, segs
            while rest and rest[0] in ("self", "super"):
                if rest[0] == "super":
                    cur = cur[:-1]
                rest = rest[1:]
        return cur, rest

    def resolve(self, module, path, seen=None):
        """The file module that defines what `path` (used in `module`) names."""
        cur, rest = self.absolute(module, path)
        while rest and cur + (rest[0],) in self.files:
            cur, rest = cur + (rest[0],), rest[1:]
        if not rest:
            return cur
        seen = seen or set()
        if (cur, rest[0]) in seen:
            return cur
        seen.add((cur, rest[0]))
        code = self.code(cur)
        if rest[0] in set(ITEM.findall(code)):
            return cur
        for m in PUB_USE.finditer(code):
            for target in expand_use(m.group(1)):
                last = target.split("::")[-1]
                if last == rest[0] and target.split("::")[0] in ("crate", "super", "self"):
                    return self.resolve(cur, target, seen)
                if last == "*" and target.split("::")[0] in ("crate", "super", "self"):
                    glob = self.resolve(cur, target[:-3], seen)
                    if rest[0] in set(ITEM.findall(self.code(glob))):
                        return glob
        return cur

    def edges(self):
        graph = {m: set() for m in self.files if m not in self.test}
        for module in graph:
            code = self.code(module)
            paths = set(INLINE.findall(code))
            for m in USE.finditer(code):
                for p in expand_use(m.group(1)):
                    if p.split("::")[0] in ("crate", "super", "self"):
                        paths.add(p.rstrip(":*").rstrip(":"))
            for p in paths:
                target = self.resolve(module, p)
                if target != module and target in graph:
                    graph[module].add(target)
        return graph


def cycles(graph):
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
    for v in graph:
        if v not in index:
            visit(v)
    return out


def crate_roots(root):
    for manifest in sorted(root.glob("**/Cargo.toml")):
        if "target" in manifest.parts or any(p.startswith(".") for p in manifest.relative_to(root).parts):
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


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
    found = 0
    crates = 0
    for entry in crate_roots(root):
        crates += 1
        crate = Crate(entry)
        graph = crate.edges()
        for comp in cycles(graph):
            found += 1
            names = sorted(str(crate.files[m].relative_to(root)) for m in comp)
            print("import loop: " + " <-> ".join(names))
    if found:
        print(f"{found} import loop(s)")
        return 1
    print(f"no import loops between files ({crates} crate roots)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
