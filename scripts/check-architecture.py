#!/usr/bin/env python3
"""Fails when docs/architecture.md no longer describes the workspace.

The page states, in forms that read as prose and parse as data:

- **the crate table**, a Markdown table headed `| package | folder | owns |`:
  one row per workspace package, its folder and what it owns;
- **the layers**, a fenced block with the info string `layers`: one line
  per layer from the top down, the crates of that layer separated by
  spaces (`#` starts a comment);
- **the arrows**, a table headed `| crate | depends on | dev-dependencies
  only |`: per crate, its normal dependencies on workspace crates and,
  apart, the workspace crates it has as dev-dependencies only. `—` (or
  nothing) is none;
- **the store's capabilities**, a table whose first header cell is
  `capability`: one row per capability, first cell the trait's name.

In the layers and the arrows, a crate is its package name or that name
without the `deepfleet-` prefix (`proto` for `deepfleet-proto`).

Checks, against `cargo metadata --format-version 1 --no-deps --offline`
(no build, no network) and the tree:

1. every workspace member is in the crate table, and the table lists no
   other package, each once;
2. each crate's folder exists and is its package's directory (the one
   holding its Cargo.toml) or that directory's `src/` (the root package's
   folder is `src/`), and each crate has something in its owns cell;
3. every crate of the table is in exactly one layer, the layers name no
   other, and every arrow of the arrows table (normal dependencies; dev
   ones may point anywhere) points from a layer to a lower one;
4. the arrows table has one row per crate, and its arrows are exactly
   the dependencies between workspace members (those with a `path`) that
   the manifests declare: normal (build and target-specific ones count as
   normal) in *depends on*, dev-only in the last column; a crate that is
   both a normal and a dev-dependency is listed as normal only;
5. the capability table names exactly the supertraits of `pub trait
   Store` in store/src/lib.rs, in the same order (marker traits such as
   `Send`, `Sync` and lifetimes are not capabilities);
6. every repository path the page names is in the tree: a backticked
   token with a `/` (`store/src/redis/`, `step/turn.rs`) or a bare file
   name with a known extension (`keys.rs`), and every relative link
   (`[records.md](records.md)`). A token starting with a top-level entry
   of the repository is read from the root. Inside a paragraph opened by
   a crate's bold folder (one starting with **`worker/`: ..., until the
   next such paragraph or a heading) a token is also read from that crate's folder
   and its `src/`, and a bare file name must exist somewhere under that
   folder. Tokens with `<`, `*`, `{`, spaces or `...` are patterns, not
   paths, and are skipped; so are bare names outside a crate's paragraph.
   Fenced code blocks are not read.

Usage: scripts/check-architecture.py [--metadata FILE] [ROOT]
  ROOT: the repository (default: this script's). --metadata reads cargo
  metadata's JSON from FILE instead of running cargo (for the self-test).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

PAGE = "docs/architecture.md"
STORE_LIB = "store/src/lib.rs"
PREFIX = "deepfleet-"

CRATE_HEADER = ["package", "folder", "owns"]
ARROWS_HEADER = ["crate", "depends on", "dev-dependencies only"]
CAPABILITY_HEADER = "capability"
NONE = {"", "—", "-", "–", "none"}
MARKERS = {"Send", "Sync", "Sized", "Unpin", "?Sized", "Copy", "Clone"}
EXTENSIONS = {"rs", "md", "toml", "py", "sh", "lua", "yaml", "yml", "json", "jsonl", "baseline"}

TOKEN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")
PATH_TOKEN = re.compile(r"^[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)*/?$")
CRATE_PARAGRAPH = re.compile(r"^\*\*`([A-Za-z0-9_.\-]+/)`")
FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w-]*)")


class Page:
    """What docs/architecture.md states, each item with its line number."""

    def __init__(self):
        self.crates = []  # (package, folder, owns, line)
        self.layers = []  # [(name, line)] per layer, top first
        self.layers_line = None
        self.arrows = []  # (crate, [normal], [dev], line)
        self.arrows_line = None
        self.capabilities = []  # (name, line)
        self.capabilities_line = None
        self.crates_line = None
        self.paths = []  # (token, context folder or None, line)
        self.links = []  # (target, line)
        self.errors = []  # malformed page


def cells(line):
    """The cells of a Markdown table row, stripped (no outer pipes)."""
    text = line.strip()
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|"):
        text = text[:-1]
    return [cell.strip() for cell in text.split("|")]


def unquote(cell):
    return cell.strip().strip("`").strip()


def names(cell):
    """`a`, `b` -> [a, b]; a dash or nothing -> []."""
    if unquote(cell).lower() in NONE:
        return []
    return [unquote(part) for part in cell.split(",") if unquote(part)]


def is_separator(row):
    return all(re.fullmatch(r":?-{3,}:?", cell) for cell in row)


def tables(lines):
    """Yields (header cells, [(row cells, line number)], header line) for
    each Markdown table outside fenced blocks."""
    i, fenced = 0, None
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if fence:
            mark = fence.group(1)[0]
            fenced = None if fenced == mark else (fenced or mark)
            i += 1
            continue
        if (
            fenced is None
            and line.lstrip().startswith("|")
            and i + 1 < len(lines)
            and lines[i + 1].lstrip().startswith("|")
            and is_separator(cells(lines[i + 1]))
        ):
            header, start, rows = cells(line), i + 1, []
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append((cells(lines[i]), i + 1))
                i += 1
            yield header, rows, start
            continue
        i += 1


def parse_page(text):
    page = Page()
    lines = text.splitlines()
    seen = set()
    for header, rows, line in tables(lines):
        key = [unquote(cell).lower() for cell in header]
        if key == CRATE_HEADER:
            kind = "crate table"
        elif key == ARROWS_HEADER:
            kind = "arrows table"
        elif key and key[0] == CAPABILITY_HEADER:
            kind = "capability table"
        else:
            continue
        if kind in seen:
            page.errors.append(f"{PAGE}:{line}: a second {kind}; the page must have one")
            continue
        seen.add(kind)
        for row, number in rows:
            if len(row) != len(header):
                page.errors.append(
                    f"{PAGE}:{number}: {kind} row has {len(row)} cells, its header {len(header)}"
                )
                continue
            if kind == "crate table":
                page.crates.append((unquote(row[0]), unquote(row[1]), row[2].strip(), number))
            elif kind == "arrows table":
                page.arrows.append((unquote(row[0]), names(row[1]), names(row[2]), number))
            else:
                page.capabilities.append((unquote(row[0]), number))
        if kind == "crate table":
            page.crates_line = line
        elif kind == "arrows table":
            page.arrows_line = line
        else:
            page.capabilities_line = line
    parse_layers(lines, page)
    parse_paths(lines, page)
    for kind, attr in (
        ("crate table (header `| package | folder | owns |`)", "crates_line"),
        ("arrows table (header `| crate | depends on | dev-dependencies only |`)", "arrows_line"),
        ("store capability table (first header cell `capability`)", "capabilities_line"),
        ("layers block (a ```layers fenced block)", "layers_line"),
    ):
        if getattr(page, attr) is None:
            page.errors.append(f"{PAGE}: no {kind}")
    return page


def parse_layers(lines, page):
    inside = False
    for number, line in enumerate(lines, 1):
        fence = FENCE.match(line)
        if fence and not inside and fence.group(2) == "layers":
            if page.layers_line is not None:
                page.errors.append(f"{PAGE}:{number}: a second layers block; the page must have one")
                return
            inside, page.layers_line = True, number
            continue
        if inside:
            if fence:
                inside = False
                continue
            words = line.split("#", 1)[0].split()
            if words:
                page.layers.append([(word, number) for word in words])
    if inside:
        page.errors.append(f"{PAGE}:{page.layers_line}: the layers block is not closed")


def parse_paths(lines, page):
    context, fenced = None, None
    for number, line in enumerate(lines, 1):
        fence = FENCE.match(line)
        if fence:
            mark = fence.group(1)[0]
            fenced = None if fenced == mark else (fenced or mark)
            continue
        if fenced:
            continue
        if line.startswith("#"):
            context = None
            continue
        opened = CRATE_PARAGRAPH.match(line)
        if opened:
            context = opened.group(1)
        for token in TOKEN.findall(line):
            page.paths.append((token.strip(), context, number))
        for target in LINK.findall(line):
            page.links.append((target, number))


class Workspace:
    """The workspace as cargo metadata describes it."""

    def __init__(self, metadata):
        root = Path(metadata["workspace_root"])
        members = set(metadata["workspace_members"])
        packages = [p for p in metadata["packages"] if p["id"] in members]
        self.folders = {}  # package -> directory relative to the root ("" for the root)
        self.manifests = {}
        for package in packages:
            manifest = Path(package["manifest_path"])
            folder = manifest.parent.relative_to(root).as_posix()
            self.folders[package["name"]] = "" if folder == "." else folder
            self.manifests[package["name"]] = manifest.relative_to(root).as_posix()
        self.normal, self.dev = {}, {}
        for package in packages:
            normal, dev = set(), set()
            for dep in package["dependencies"]:
                if dep.get("path") is None or dep["name"] not in self.folders:
                    continue
                (dev if dep.get("kind") == "dev" else normal).add(dep["name"])
            self.normal[package["name"]] = normal
            self.dev[package["name"]] = dev - normal


def cargo_metadata(root):
    cargo = os.environ.get("CARGO", "cargo")
    command = [cargo, "metadata", "--format-version", "1", "--no-deps", "--offline"]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}` failed:\n{done.stderr.strip()}")
    return json.loads(done.stdout)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def store_supertraits(source):
    """The supertraits of `pub trait Store` (last path segment, generics
    dropped), marker traits and lifetimes left out; None if not found."""
    found = re.search(
        r"\bpub\s+trait\s+Store\b\s*(?:<[^>{]*>)?\s*:(.*?)(?:\bwhere\b|\{|;)",
        strip_comments(source),
        re.S,
    )
    if not found:
        return None
    bounds, depth, current = [], 0, ""
    for char in found.group(1):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "+" and depth == 0:
            bounds.append(current)
            current = ""
            continue
        if depth == 0 and char != ">":
            current += char
    bounds.append(current)
    result = []
    for bound in bounds:
        bound = bound.strip()
        if not bound or bound.startswith("'"):
            continue
        name = bound.split("::")[-1].strip()
        if name not in MARKERS:
            result.append(name)
    return result


def short(package):
    return package[len(PREFIX):] if package.startswith(PREFIX) else package


class Checker:
    def __init__(self, root, page, workspace, supertraits):
        self.root, self.page, self.ws = root, page, workspace
        self.supertraits = supertraits
        self.errors = list(page.errors)
        known = {c[0] for c in page.crates} | set(workspace.folders)
        self.resolve = {}
        for package in known:
            self.resolve[package] = package
            self.resolve.setdefault(short(package), package)

    def error(self, line, message):
        self.errors.append(f"{PAGE}:{line}: {message}" if line else f"{PAGE}: {message}")

    def name(self, word, line, where):
        package = self.resolve.get(word)
        if package is None:
            self.error(line, f"{where} names `{word}`, which is no crate of the crate table")
        return package

    def run(self):
        self.check_crates()
        self.check_layers()
        self.check_arrows()
        self.check_capabilities()
        self.check_paths()
        return self.errors

    def check_crates(self):
        if self.page.crates_line is None:
            return
        listed = {}
        for package, folder, owns, line in self.page.crates:
            if package in listed:
                self.error(line, f"`{package}` is in the crate table twice (first on line {listed[package]})")
                continue
            listed[package] = line
            if package not in self.ws.folders:
                self.error(
                    line,
                    f"the crate table lists `{package}`, which is no workspace member "
                    "(cargo metadata); remove its row or add the crate to Cargo.toml",
                )
                continue
            self.check_folder(package, folder, line)
            if not owns or owns.lower() in NONE:
                self.error(line, f"`{package}` says nothing in its owns cell")
        for package, folder in sorted(self.ws.folders.items()):
            if package not in listed:
                self.error(
                    self.page.crates_line,
                    f"workspace crate `{package}` ({self.ws.manifests[package]}) is not in the "
                    f"crate table; add `| `{package}` | `{folder or 'src'}/` | what it owns |`",
                )

    def check_folder(self, package, folder, line):
        want = self.ws.folders[package]
        allowed = {f"{want}/", f"{want}/src/"} if want else {"src/"}
        written = folder if folder.endswith("/") else folder + "/"
        if not (self.root / written).is_dir():
            self.error(line, f"`{package}`'s folder `{folder}` does not exist")
        elif written not in allowed:
            self.error(
                line,
                f"`{package}`'s folder is `{folder}`, but its manifest is "
                f"{self.ws.manifests[package]}: write `{sorted(allowed)[0]}`",
            )

    def check_layers(self):
        if self.page.layers_line is None:
            return
        level = {}
        depth = len(self.page.layers)
        for index, layer in enumerate(self.page.layers):
            for word, line in layer:
                package = self.name(word, line, "the layers block")
                if package is None:
                    continue
                if package in level:
                    self.error(line, f"`{word}` is in two layers (lines {level[package][1]} and {line})")
                    continue
                level[package] = (depth - index, line)
        for package, _, _, line in self.page.crates:
            if package not in level and package in self.ws.folders:
                self.error(self.page.layers_line, f"`{short(package)}` is in no layer of the layers block")
        for crate, normal, _, line in self.page.arrows:
            source = self.resolve.get(crate)
            if source not in level:
                continue
            for dep in normal:
                target = self.resolve.get(dep)
                if target not in level:
                    continue
                if level[target][0] >= level[source][0]:
                    where = "the same layer as" if level[target][0] == level[source][0] else "a layer above"
                    self.error(
                        line,
                        f"the arrow `{short(source)}` → `{short(target)}` does not point down: "
                        f"`{short(target)}` (line {level[target][1]}) is on {where} "
                        f"`{short(source)}` (line {level[source][1]}); move one of them",
                    )

    def check_arrows(self):
        if self.page.arrows_line is None:
            return
        rows = {}
        for crate, normal, dev, line in self.page.arrows:
            source = self.name(crate, line, "the arrows table")
            if source is None:
                continue
            if source in rows:
                self.error(line, f"`{crate}` has two rows in the arrows table (first on line {rows[source][2]})")
                continue
            page_normal = {self.name(d, line, f"`{crate}`'s row") for d in normal}
            page_dev = {self.name(d, line, f"`{crate}`'s row") for d in dev}
            page_normal.discard(None)
            page_dev.discard(None)
            rows[source] = (page_normal, page_dev, line)
        for source in sorted(set(rows) | set(self.ws.folders)):
            if source not in self.ws.folders:
                if source in rows:
                    self.error(rows[source][2], f"the arrows table has a row for `{short(source)}`, which is no workspace member")
                continue
            if source not in rows:
                self.error(self.page.arrows_line, f"`{short(source)}` has no row in the arrows table")
                continue
            page_normal, page_dev, line = rows[source]
            self.diff_arrows(source, page_normal, page_dev, line)

    def diff_arrows(self, source, page_normal, page_dev, line):
        manifest = self.ws.manifests[source]
        real_normal, real_dev = self.ws.normal[source], self.ws.dev[source]
        s = short(source)
        for target in sorted(page_normal | page_dev | real_normal | real_dev):
            t = short(target)
            said = "normal" if target in page_normal else "dev" if target in page_dev else None
            real = "normal" if target in real_normal else "dev" if target in real_dev else None
            if said == real:
                if target in page_normal and target in page_dev:
                    self.error(line, f"`{s}` lists `{t}` in both columns; a dependency that is both is a normal one")
                continue
            if real is None:
                self.error(
                    line,
                    f"the arrows table says `{s}` → `{t}`"
                    f"{' (dev-only)' if said == 'dev' else ''}, but {manifest} has no such dependency",
                )
            elif said is None:
                column = "depends on" if real == "normal" else "dev-dependencies only"
                section = "[dependencies]" if real == "normal" else "[dev-dependencies]"
                self.error(
                    line,
                    f"`{s}` → `{t}` ({manifest} {section}) is missing from the arrows table: "
                    f"add `{t}` to the {column} column of `{s}`'s row",
                )
            else:
                self.error(
                    line,
                    f"the arrows table lists `{t}` as a {said} dependency of `{s}`, "
                    f"but {manifest} has it as a {real} one",
                )

    def check_capabilities(self):
        if self.page.capabilities_line is None:
            return
        if self.supertraits is None:
            self.error(None, f"no `pub trait Store: ...` found in {STORE_LIB}")
            return
        listed, seen = [], {}
        for name, line in self.page.capabilities:
            if name in seen:
                self.error(line, f"capability `{name}` is in the table twice (first on line {seen[name]})")
                continue
            seen[name] = line
            listed.append(name)
        real = self.supertraits
        for name in listed:
            if name not in real:
                self.error(
                    seen[name],
                    f"the capability table lists `{name}`, which is not a supertrait of "
                    f"`pub trait Store` in {STORE_LIB} ({' + '.join(real)})",
                )
        for name in real:
            if name not in seen:
                self.error(
                    self.page.capabilities_line,
                    f"`{name}` is a supertrait of `pub trait Store` in {STORE_LIB} but not "
                    "in the capability table; add its row",
                )
        if set(listed) == set(real) and listed != real:
            self.error(
                self.page.capabilities_line,
                f"the capability table's order differs from `pub trait Store`'s: "
                f"write them as {STORE_LIB} does ({', '.join(real)})",
            )

    def check_paths(self):
        top = {entry.name for entry in self.root.iterdir()}
        for token, context, line in self.page.paths:
            if not PATH_TOKEN.match(token) or "..." in token:
                continue
            path = token.rstrip("/")
            if "/" not in token:
                extension = path.rsplit(".", 1)[-1] if "." in path else ""
                if context is None or extension not in EXTENSIONS:
                    continue
                base = self.root / context
                if not base.is_dir() or not any(base.rglob(path)):
                    self.error(line, f"`{token}` is no file under `{context}`")
                continue
            candidates = []
            if path.split("/")[0] in top:
                candidates.append(self.root / path)
            if context:
                candidates += [self.root / context / "src" / path, self.root / context / path]
            if not candidates:
                continue
            if not any(c.exists() and (c.is_dir() or not token.endswith("/")) for c in candidates):
                where = f" (read from the root and under `{context}`)" if context else ""
                self.error(line, f"`{token}` names nothing in the tree{where}")
        page_dir = (self.root / PAGE).parent
        for target, line in self.page.links:
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            if path and not (page_dir / path).exists():
                self.error(line, f"the link to `{target}` leads nowhere (from {PAGE})")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    metadata_file = None
    if "--metadata" in argv:
        at = argv.index("--metadata")
        metadata_file = argv[at + 1]
        del argv[at : at + 2]
    root = Path(argv[0] if argv else Path(__file__).resolve().parent.parent).resolve()
    try:
        if metadata_file:
            metadata = json.loads(Path(metadata_file).read_text())
        else:
            metadata = cargo_metadata(root)
    except (RuntimeError, OSError, ValueError) as failure:
        print(f"cannot read the workspace: {failure}")
        return 2
    page_file = root / PAGE
    if not page_file.is_file():
        print(f"{PAGE}: not found under {root}")
        return 1
    page = parse_page(page_file.read_text())
    store_lib = root / STORE_LIB
    supertraits = store_supertraits(store_lib.read_text()) if store_lib.is_file() else None
    workspace = Workspace(metadata)
    errors = Checker(root, page, workspace, supertraits).run()
    if errors:
        for error in errors:
            print(error)
        print(f"{len(errors)} problem(s): {PAGE} does not describe the workspace (see scripts/check-architecture.py)")
        return 1
    arrows = sum(len(n) for n in workspace.normal.values())
    dev = sum(len(d) for d in workspace.dev.values())
    print(
        f"{PAGE} matches the workspace: {len(workspace.folders)} crates in "
        f"{len(page.layers)} layers, {arrows} arrows and {dev} dev-only, "
        f"{len(supertraits or [])} store capabilities, {len(page.paths) + len(page.links)} paths and links read"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
