#!/usr/bin/env python3
"""Self-test of scripts/check-architecture.py over a tiny workspace made in
a temporary directory, with cargo metadata's JSON written by the test (no
cargo run): a page that matches passes, and each kind of drift (a crate
missing or extra, a folder moved, an arrow missing, extra or of the wrong
kind, an arrow pointing up the layers, a store capability added, dropped
or reordered, a path or a link that leads nowhere) fails with a message
that names it.

Usage: scripts/test_check_architecture.py  (`make lint` runs it)
"""

import contextlib
import importlib.util
import io
import json
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

sys.dont_write_bytecode = True
_SPEC = importlib.util.spec_from_file_location(
    "check_architecture", Path(__file__).resolve().parent / "check-architecture.py"
)
arch = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(arch)

# package -> (folder, [(dependency, kind)]); kind None is normal, as cargo writes it.
WORKSPACE = {
    "deepfleet-proto": ("proto", []),
    "deepfleet-store": ("store", [("deepfleet-proto", None), ("serde", None)]),
    "deepfleet-worker": (
        "worker",
        [("deepfleet-proto", None), ("deepfleet-store", None), ("deepfleet-testkit", "dev")],
    ),
    "deepfleet-testkit": ("testkit", [("deepfleet-worker", None), ("deepfleet-proto", "dev")]),
    "deepfleet": (
        "",
        [("deepfleet-worker", None), ("deepfleet-store", None), ("deepfleet-testkit", "dev")],
    ),
}

STORE_LIB = """\
//! The store.
pub mod specs;

/// Everything at once. `pub trait Store: Nothing` in a comment is not read.
pub trait Store:
    Specs
    // a comment between bounds
    + Runs
    + crate::checkpoints::Checkpoints
    + Send
    + Sync
    + 'static
{
}
"""

PAGE = """\
# Architecture

## The crates

| package | folder | owns |
|---|---|---|
| `deepfleet-proto` | `proto/` | the wire contract |
| `deepfleet-store` | `store/` | what a run keeps |
| `deepfleet-worker` | `worker/` | the harness |
| `deepfleet-testkit` | `testkit/` | test support |
| `deepfleet` | `src/` | the binary |

## The arrows

```layers
deepfleet            # the binary
testkit
worker
store
proto                # the wire contract
```

| crate | depends on | dev-dependencies only |
|---|---|---|
| `proto` | — | — |
| `store` | `proto` | — |
| `worker` | `proto`, `store` | `testkit` |
| `testkit` | `worker` | `proto` |
| `deepfleet` | `worker`, `store` | `testkit` |

## What each crate owns

**`store/`: what a run keeps.** Capabilities in `store/src/lib.rs`:

| capability | holds |
|---|---|
| `Specs` | specs |
| `Runs` | runs |
| `Checkpoints` | checkpoints |

Back ends in `redis/` and `store/src/embedded/`; the trait in `mod.rs`
of `store/src/<capability>/`. See [records](records.md#keys) and
[the web](https://example.invalid/x).

**`worker/`: the harness.** The step in `step/turn.rs`, its driver
`driver.rs`.

## Where a change lands

A capability: `mod.rs` under `store/src/<capability>/`, in `scripts/`.
"""


class Fixture(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()
        self.root = Path(self._dir.name)
        self.files = {
            "store/src/lib.rs": STORE_LIB,
            "store/src/specs/mod.rs": "",
            "store/src/redis/mod.rs": "",
            "store/src/embedded/mod.rs": "",
            "worker/src/step/turn.rs": "",
            "worker/src/step/driver.rs": "",
            "proto/src/lib.rs": "",
            "testkit/src/lib.rs": "",
            "src/main.rs": "",
            "docs/records.md": "",
            "scripts/check.py": "",
        }
        self.workspace = {k: (f, list(d)) for k, (f, d) in WORKSPACE.items()}
        self.page = PAGE

    def tearDown(self):
        self._dir.cleanup()

    def metadata(self):
        root = self.root.resolve()
        packages = []
        for name, (folder, deps) in self.workspace.items():
            directory = root / folder if folder else root
            packages.append({
                "name": name,
                "id": f"path+file://{directory}#{name}@0.1.0",
                "manifest_path": str(directory / "Cargo.toml"),
                "dependencies": [
                    {
                        "name": dep,
                        "kind": kind,
                        "path": str(root / self.workspace[dep][0]) if dep in self.workspace else None,
                    }
                    for dep, kind in deps
                ],
            })
        return {
            "packages": packages,
            "workspace_members": [p["id"] for p in packages],
            "workspace_root": str(root),
        }

    def check(self):
        """Writes the tree, the page and the metadata; returns (rc, output)."""
        for rel, text in self.files.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        (self.root / "docs" / "architecture.md").write_text(self.page)
        metadata = self.root / "metadata.json"
        metadata.write_text(json.dumps(self.metadata()))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = arch.main(["--metadata", str(metadata), str(self.root)])
        return rc, out.getvalue()

    def edit(self, old, new):
        self.assertIn(old, self.page)
        self.page = self.page.replace(old, new, 1)

    def assert_passes(self):
        rc, out = self.check()
        self.assertEqual(rc, 0, out)
        self.assertIn("matches the workspace", out)
        return out

    def assert_fails(self, *fragments):
        rc, out = self.check()
        self.assertEqual(rc, 1, out)
        for fragment in fragments:
            self.assertIn(fragment, out)
        return out


class Clean(Fixture):
    def test_matching_page_passes(self):
        out = self.assert_passes()
        self.assertIn("5 crates in 5 layers", out)
        self.assertIn("3 store capabilities", out)

    def test_both_normal_and_dev_is_listed_as_normal(self):
        self.workspace["deepfleet-store"][1].append(("deepfleet-proto", "dev"))
        self.assert_passes()

    def test_full_package_names_are_accepted(self):
        self.edit("| `store` | `proto` |", "| `deepfleet-store` | `deepfleet-proto` |")
        self.assert_passes()

    def test_a_dependency_outside_the_workspace_is_no_arrow(self):
        self.workspace["deepfleet-proto"][1].append(("vendored", None))
        self.assert_passes()


class Crates(Fixture):
    def test_a_workspace_crate_missing_from_the_table(self):
        self.edit("| `deepfleet-testkit` | `testkit/` | test support |\n", "")
        self.assert_fails(
            "workspace crate `deepfleet-testkit` (testkit/Cargo.toml) is not in the crate table"
        )

    def test_a_listed_crate_that_does_not_exist(self):
        self.edit("| `deepfleet` | `src/` |", "| `deepfleet-gone` | `src/` | x |\n| `deepfleet` | `src/` |")
        self.assert_fails("lists `deepfleet-gone`, which is no workspace member")

    def test_a_crate_twice(self):
        self.edit("| `deepfleet` | `src/` |", "| `deepfleet-proto` | `proto/` | again |\n| `deepfleet` | `src/` |")
        self.assert_fails("`deepfleet-proto` is in the crate table twice")

    def test_a_folder_that_is_not_the_crates(self):
        self.edit("| `deepfleet-worker` | `worker/` |", "| `deepfleet-worker` | `store/` |")
        self.assert_fails("`deepfleet-worker`'s folder is `store/`, but its manifest is worker/Cargo.toml")

    def test_a_folder_that_does_not_exist(self):
        self.edit("| `deepfleet-worker` | `worker/` |", "| `deepfleet-worker` | `harness/` |")
        self.assert_fails("`deepfleet-worker`'s folder `harness/` does not exist")

    def test_the_crates_src_folder_is_its_folder_too(self):
        self.edit("| `deepfleet-worker` | `worker/` |", "| `deepfleet-worker` | `worker/src/` |")
        self.assert_passes()

    def test_an_empty_owns_cell(self):
        self.edit("| the harness |", "| — |")
        self.assert_fails("`deepfleet-worker` says nothing in its owns cell")

    def test_a_missing_table(self):
        self.edit("| package | folder | owns |", "| name | folder | owns |")
        self.assert_fails("no crate table")


class Layers(Fixture):
    def test_an_arrow_up_the_layers(self):
        self.edit("worker\nstore\n", "store\nworker\n")
        self.assert_fails("the arrow `worker` → `store` does not point down")

    def test_an_arrow_within_one_layer(self):
        self.edit("worker\nstore\n", "worker  store\n")
        self.assert_fails("`store` (line 18) is on the same layer as `worker` (line 18)")

    def test_dev_arrows_may_point_up(self):
        # worker -> testkit and testkit -> proto are dev-only: only normal arrows count.
        self.assert_passes()

    def test_a_crate_in_no_layer(self):
        self.edit("testkit\n", "")
        self.assert_fails("`testkit` is in no layer of the layers block")

    def test_a_crate_in_two_layers(self):
        self.edit("proto                #", "proto  store        #")
        self.assert_fails("`store` is in two layers")

    def test_an_unknown_name(self):
        self.edit("testkit\n", "testkit  gizmo\n")
        self.assert_fails("the layers block names `gizmo`, which is no crate of the crate table")


class Arrows(Fixture):
    def test_a_real_dependency_missing(self):
        self.workspace["deepfleet-worker"][1].append(("deepfleet-testkit", None))
        self.workspace["deepfleet-worker"][1].remove(("deepfleet-testkit", "dev"))
        self.edit("| `worker` | `proto`, `store` | `testkit` |", "| `worker` | `proto`, `store` | — |")
        self.assert_fails(
            "`worker` → `testkit` (worker/Cargo.toml [dependencies]) is missing from the arrows table"
        )

    def test_a_dev_dependency_missing(self):
        self.edit("| `testkit` | `worker` | `proto` |", "| `testkit` | `worker` | — |")
        self.assert_fails(
            "`testkit` → `proto` (testkit/Cargo.toml [dev-dependencies]) is missing from the arrows "
            "table: add `proto` to the dev-dependencies only column of `testkit`'s row"
        )

    def test_an_arrow_that_is_not_a_dependency(self):
        self.edit("| `deepfleet` | `worker`, `store` |", "| `deepfleet` | `worker`, `store`, `proto` |")
        self.assert_fails("the arrows table says `deepfleet` → `proto`, but Cargo.toml has no such dependency")

    def test_a_dev_dependency_listed_as_normal(self):
        self.edit(
            "| `worker` | `proto`, `store` | `testkit` |", "| `worker` | `proto`, `store`, `testkit` | — |"
        )
        self.assert_fails(
            "lists `testkit` as a normal dependency of `worker`, but worker/Cargo.toml has it as a dev one"
        )

    def test_a_crate_without_a_row(self):
        self.edit("| `store` | `proto` | — |\n", "")
        self.assert_fails("`store` has no row in the arrows table")

    def test_a_row_of_a_crate_that_does_not_exist(self):
        self.edit("| `proto` | — | — |", "| `proto` | — | — |\n| `gizmo` | — | — |")
        self.assert_fails("the arrows table names `gizmo`, which is no crate of the crate table")

    def test_a_new_workspace_crate_fails_everywhere_it_belongs(self):
        self.workspace["deepfleet-api"] = ("api", [("deepfleet-store", None)])
        self.workspace["deepfleet"][1].append(("deepfleet-api", None))
        self.files["api/src/lib.rs"] = ""
        self.assert_fails(
            "workspace crate `deepfleet-api` (api/Cargo.toml) is not in the crate table",
            "`api` has no row in the arrows table",
            "`deepfleet` → `api` (Cargo.toml [dependencies]) is missing",
        )

    def test_a_malformed_row(self):
        self.edit("| `store` | `proto` | — |", "| `store` | `proto` |")
        self.assert_fails("arrows table row has 2 cells, its header 3")


class Capabilities(Fixture):
    def test_supertraits_are_parsed(self):
        self.assertEqual(arch.store_supertraits(STORE_LIB), ["Specs", "Runs", "Checkpoints"])
        self.assertEqual(
            arch.store_supertraits("pub trait Store<T>: A<T, X> + b::B where T: C {}"), ["A", "B"]
        )
        self.assertIsNone(arch.store_supertraits("pub trait Other: A {}"))

    def test_a_capability_added_to_the_trait(self):
        self.files["store/src/lib.rs"] = STORE_LIB.replace("+ Runs", "+ Runs\n    + Slots")
        self.assert_fails("`Slots` is a supertrait of `pub trait Store` in store/src/lib.rs but not in the capability table")

    def test_a_capability_that_is_not_a_supertrait(self):
        self.edit("| `Runs` | runs |", "| `Runs` | runs |\n| `Admission` | windows |")
        self.assert_fails("the capability table lists `Admission`, which is not a supertrait")

    def test_the_order_of_the_trait(self):
        self.edit("| `Specs` | specs |\n| `Runs` | runs |", "| `Runs` | runs |\n| `Specs` | specs |")
        self.assert_fails("the capability table's order differs from `pub trait Store`'s")

    def test_no_store_trait(self):
        self.files["store/src/lib.rs"] = "pub trait Stores: A {}\n"
        self.assert_fails("no `pub trait Store: ...` found in store/src/lib.rs")


class Paths(Fixture):
    def test_a_root_path_that_moved(self):
        self.files.pop("store/src/embedded/mod.rs")
        self.assert_fails("`store/src/embedded/` names nothing in the tree")

    def test_a_path_under_the_paragraphs_crate(self):
        self.files.pop("worker/src/step/turn.rs")
        self.assert_fails("`step/turn.rs` names nothing in the tree (read from the root and under `worker/`)")

    def test_a_bare_file_name_under_the_paragraphs_crate(self):
        self.files.pop("worker/src/step/driver.rs")
        self.assert_fails("`driver.rs` is no file under `worker/`")

    def test_a_folder_token_that_is_a_file(self):
        self.edit("`store/src/lib.rs`", "`store/src/lib.rs/`")
        self.assert_fails("`store/src/lib.rs/` names nothing in the tree")

    def test_a_broken_link(self):
        self.files.pop("docs/records.md")
        self.files["docs/other.md"] = ""
        self.assert_fails("the link to `records.md#keys` leads nowhere")

    def test_patterns_bare_names_outside_a_crate_and_urls_are_not_read(self):
        # `store/src/<capability>/` is a pattern, `mod.rs` a bare name outside
        # a crate's paragraph, the https link a URL: none is read, and the
        # page passes. A path under a top-level folder is read anywhere.
        self.assert_passes()
        self.edit("in `scripts/`.", "in `scripts/missing.py`.")
        out = self.assert_fails("`scripts/missing.py` names nothing in the tree")
        self.assertEqual(out.count("docs/architecture.md:"), 1, out)

    def test_a_heading_ends_the_crates_paragraph(self):
        # `driver.rs` is a file under worker/, read inside its paragraph;
        # after a heading it is not read at all (no context).
        self.edit("A capability: `mod.rs`", "A capability: `nowhere.rs`")
        self.assert_passes()

    def test_fenced_blocks_are_not_read(self):
        self.edit("proto                #", "proto  # `no/such/file.rs`\n#")
        self.assert_passes()


class Tables(Fixture):
    def test_cells_and_names(self):
        self.assertEqual(arch.cells("| `a` | b, c |"), ["`a`", "b, c"])
        self.assertEqual(arch.names("`a`, `b`"), ["a", "b"])
        self.assertEqual(arch.names("—"), [])
        self.assertEqual(arch.names(""), [])

    def test_a_second_table_of_a_kind(self):
        self.page += textwrap.dedent("""
            | capability | holds |
            |---|---|
            | `Specs` | again |
            """)
        self.assert_fails("a second capability table")


if __name__ == "__main__":
    unittest.main()
