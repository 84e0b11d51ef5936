#!/usr/bin/env python3
"""Self-test of scripts/check-import-loops.py over tiny crates made in a
temporary directory: each kind of loop is found, and what is not a loop
(a parent and its children, re-exports, test code, trait impls, comments)
is not; and the baseline ratchet: known loops pass, new loops and entries
that match no loop fail.

Usage: scripts/test_check_import_loops.py  (`make lint` runs it)
"""

import contextlib
import importlib.util
import io
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

sys.dont_write_bytecode = True
_SPEC = importlib.util.spec_from_file_location(
    "check_import_loops", Path(__file__).resolve().parent / "check-import-loops.py"
)
loops = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(loops)


class CrateTest(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()
        self.root = Path(self._dir.name)
        (self.root / "Cargo.toml").write_text('[package]\nname = "t"\n')

    def tearDown(self):
        self._dir.cleanup()

    def crate(self, files):
        """Writes `files` ({path under src/: text}) and runs the check."""
        for rel, text in files.items():
            path = self.root / "src" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = loops.main([str(self.root)])
        return rc, out.getvalue()

    def assert_clean(self, files):
        rc, out = self.crate(files)
        self.assertEqual(rc, 0, out)
        self.assertIn("no import loops", out)

    def loaded(self):
        return loops.Crate(self.root / "src" / "lib.rs")


class FileLoops(CrateTest):
    def test_one_way_is_clean(self):
        self.assert_clean({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A(B);\n",
            "b.rs": "pub struct B;\n",
        })

    def test_two_files_importing_each_other(self):
        rc, out = self.crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": "pub struct B;\n\nfn f() {\n    let _ = crate::a::A;\n}\n",
        })
        self.assertEqual(rc, 1)
        self.assertIn("file loop: src/a.rs -> src/b.rs -> src/a.rs", out)
        self.assertIn("src/a.rs:1 use crate::b::B -> src/b.rs", out)
        self.assertIn("src/b.rs:4 crate::a::A -> src/a.rs", out)
        self.assertIn("1 import loop(s)", out)

    def test_line_of_a_name_in_a_use_tree(self):
        rc, out = self.crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::{\n    b::{\n        B,\n        C,\n    },\n};\npub struct A;\n",
            "b.rs": "pub struct B;\npub struct C;\nfn f() { let _ = crate::a::A; }\n",
        })
        self.assertEqual(rc, 1)
        self.assertIn("src/a.rs:3 use crate::b::B -> src/b.rs", out)

    def test_longer_ring_through_super_and_self(self):
        rc, out = self.crate({
            "lib.rs": "mod m;\n",
            "m/mod.rs": "mod a;\nmod b;\nmod c;\n",
            "m/a.rs": "use super::b::B;\npub struct A;\n",
            "m/b.rs": "use super::c::C;\npub struct B;\n",
            "m/c.rs": "pub struct C;\nfn f() { let _ = super::a::A; }\n",
        })
        self.assertEqual(rc, 1)
        self.assertIn("file loop: src/m/a.rs -> src/m/b.rs -> src/m/c.rs -> src/m/a.rs", out)

    def test_path_attribute_modules_are_read(self):
        rc, out = self.crate({
            "lib.rs": 'mod a;\n#[path = "elsewhere/b_impl.rs"]\nmod b;\n',
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "elsewhere/b_impl.rs": "use crate::a::A;\npub struct B;\n",
        })
        self.assertEqual(rc, 1)
        self.assertIn("file loop: src/a.rs -> src/elsewhere/b_impl.rs -> src/a.rs", out)

    def test_parent_and_child_are_not_a_loop(self):
        # The parent declares, re-exports and calls its child; the child
        # uses the parent's items: one module, no loop.
        self.assert_clean({
            "lib.rs": "mod api;\n",
            "api/mod.rs": """\
                mod routes;
                pub use routes::Route;
                pub struct Shared;
                fn all() { routes::table(); }
                """,
            "api/routes.rs": """\
                use super::Shared;
                pub struct Route(Shared);
                pub fn table() {}
                """,
        })

    def test_comments_strings_and_chars_are_not_read(self):
        self.assert_clean({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": """\
                //! See [`crate::a::A`].
                /* crate::a::A /* nested */ crate::a::A */
                pub struct B;
                fn f() -> (&'static str, char) {
                    let _q = '"';
                    ("crate::a::A", r#"crate::a::A "quoted""#.len() as u8 as char)
                }
                """,
        })


class ModuleLoops(CrateTest):
    API_AND_CRONS = {
        "lib.rs": "pub mod api;\npub mod crons;\npub use crons::CronLoop;\n",
        "api/mod.rs": "pub mod crons;\npub mod state;\npub use state::ApiState;\n",
        "api/state.rs": "pub struct ApiState;\n",
        "api/crons.rs": "use crate::crons::fire::following;\npub fn routes() { following(); }\n",
        "crons/mod.rs": "pub mod fire;\npub use fire::CronLoop;\n",
        "crons/fire.rs": "use crate::api::ApiState;\npub struct CronLoop(ApiState);\npub fn following() {}\n",
    }

    def test_sibling_subtrees_through_a_reexport(self):
        rc, out = self.crate(self.API_AND_CRONS)
        self.assertEqual(rc, 1)
        self.assertIn("module loop: crate::api -> crate::crons -> crate::api", out)
        self.assertIn("src/api/crons.rs:1 use crate::crons::fire::following -> src/crons/fire.rs", out)
        # The re-export in api/mod.rs is followed to the defining file.
        self.assertIn("src/crons/fire.rs:1 use crate::api::ApiState -> src/api/state.rs", out)
        self.assertNotIn("file loop", out)

    def test_one_way_between_subtrees_is_clean(self):
        files = dict(self.API_AND_CRONS)
        files["api/crons.rs"] = "pub fn routes() {}\n"
        self.assert_clean(files)

    def test_cousins_lift_to_their_closest_common_module(self):
        rc, out = self.crate({
            "lib.rs": "mod x;\n",
            "x/mod.rs": "mod p;\nmod q;\n",
            "x/p/mod.rs": "mod deep;\n",
            "x/p/deep.rs": "pub fn d() { crate::x::q::inner::i(); }\n",
            "x/q/mod.rs": "pub mod inner;\npub fn top() {}\n",
            "x/q/inner.rs": "pub fn i() {}\nfn g() { let _ = crate::x::p::deep::d; }\n",
        })
        self.assertEqual(rc, 1)
        self.assertIn("module loop: crate::x::p -> crate::x::q -> crate::x::p", out)

    def test_a_module_and_its_ancestor_are_not_a_loop(self):
        self.assert_clean({
            "lib.rs": "mod crons;\npub struct Config;\nfn f() { crons::fire::go(); }\n",
            "crons/mod.rs": "pub mod fire;\npub struct Entry;\n",
            "crons/fire.rs": "use crate::Config;\nuse super::Entry;\npub fn go() {}\n",
        })

    def test_loop_of_plain_files_is_reported_once(self):
        rc, out = self.crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": "use crate::a::A;\npub struct B;\n",
        })
        self.assertEqual(rc, 1)
        self.assertEqual(out.count("loop: "), 1, out)
        self.assertIn("file loop", out)


class Reexports(CrateTest):
    FILES = {
        "lib.rs": "pub mod api;\nmod other;\npub use api::ApiState;\n",
        "api/mod.rs": """\
            mod state;
            mod more;
            pub mod shapes;
            pub use state::ApiState;
            pub use state::Inner as Renamed;
            pub use more::*;
            pub use self::shapes as forms;
            """,
        "api/state.rs": "pub struct ApiState;\npub struct Inner;\n",
        "api/more.rs": "pub struct Extra;\n",
        "api/shapes.rs": "pub struct Square;\n",
        "other.rs": "use std::sync::Arc;\npub fn f() {}\n",
    }

    def resolve(self, path, module=("other",)):
        self.crate(self.FILES)
        found = self.loaded().resolve(module, path)
        return found and found[0]

    def test_through_a_module_reexport(self):
        self.assertEqual(self.resolve("crate::api::ApiState"), ("api", "state"))

    def test_through_two_reexports(self):
        self.assertEqual(self.resolve("crate::ApiState"), ("api", "state"))

    def test_through_a_rename(self):
        self.assertEqual(self.resolve("crate::api::Renamed"), ("api", "state"))

    def test_through_a_glob(self):
        self.assertEqual(self.resolve("crate::api::Extra"), ("api", "more"))

    def test_through_a_module_alias(self):
        self.assertEqual(self.resolve("crate::api::forms::Square"), ("api", "shapes"))

    def test_outside_the_crate(self):
        self.assertIsNone(self.resolve("Arc"))

    def test_a_reexport_of_an_outside_module_is_no_edge(self):
        self.assert_clean({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub use std::sync as shared;\npub struct A;\n",
            "b.rs": "pub struct B;\nfn f() { let _ = crate::a::shared::Arc::new(1); }\n",
        })

    def test_a_reexport_of_a_sibling_is_an_edge(self):
        rc, out = self.crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "pub use crate::b::B;\npub struct A;\n",
            "b.rs": "use crate::a::A;\npub struct B;\n",
        })
        self.assertEqual(rc, 1)
        self.assertIn("src/a.rs:1 use crate::b::B -> src/b.rs", out)

    def test_names_imported_then_used_inline(self):
        rc, out = self.crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b;\npub struct A;\nfn f() { b::g(); }\n",
            "b.rs": "pub fn g() {}\nfn h() { let _ = crate::a::A; }\n",
        })
        self.assertEqual(rc, 1)
        self.assertIn("file loop", out)


class SplitImpls(CrateTest):
    def files(self, driver_calls, check_body="self.ack()"):
        return {
            "lib.rs": "mod step;\n",
            "step/mod.rs": "mod check;\npub mod driver;\npub use driver::Runner;\n",
            "step/driver.rs": f"""\
                pub struct Runner;

                impl Runner {{
                    pub fn ack(&self) {{}}

                    pub fn run(&self) {{
                        {driver_calls}
                    }}
                }}
                """,
            "step/check.rs": f"""\
                use crate::step::Runner;

                impl Runner {{
                    pub(super) fn check(&self) {{
                        {check_body};
                    }}
                }}
                """,
        }

    def test_methods_called_across_files_both_ways(self):
        rc, out = self.crate(self.files("self.check();"))
        self.assertEqual(rc, 1)
        self.assertIn("file loop: src/step/check.rs -> src/step/driver.rs -> src/step/check.rs", out)
        self.assertIn("src/step/driver.rs:7 self.check() (impl Runner) -> src/step/check.rs", out)
        self.assertIn("src/step/check.rs:1 use crate::step::Runner -> src/step/driver.rs", out)

    def test_associated_function_by_type_name(self):
        files = self.files("self.ack();")
        files["step/mod.rs"] += "mod other;\n"
        files["step/other.rs"] = (
            "use super::driver::Runner;\npub struct Tag;\n"
            "fn f(r: &Runner) { Runner::check(r); }\n"
        )
        files["step/check.rs"] = files["step/check.rs"].replace(
            "use crate::step::Runner;", "use crate::step::Runner;\nuse super::other::Tag;"
        )
        rc, out = self.crate(files)
        self.assertEqual(rc, 1)
        self.assertIn("src/step/other.rs:3 Runner::check() (impl Runner) -> src/step/check.rs", out)

    def test_self_path_call(self):
        rc, out = self.crate(self.files("Self::check(self);"))
        self.assertEqual(rc, 1)
        self.assertIn("src/step/driver.rs:7 Self::check() (impl Runner) -> src/step/check.rs", out)

    def test_impl_without_calls_back_is_clean(self):
        self.assert_clean(self.files("self.ack();"))

    def test_impl_edge_without_an_import(self):
        # `impl super::driver::Runner` names the type by path.
        files = self.files("self.check();")
        files["step/check.rs"] = (
            "impl super::driver::Runner {\n    pub(super) fn check(&self) {}\n}\n"
        )
        rc, out = self.crate(files)
        self.assertEqual(rc, 1)
        self.assertIn("src/step/check.rs:1 super::driver::Runner -> src/step/driver.rs", out)

    def test_type_in_the_parent_impl_split_over_children(self):
        files = {
            "lib.rs": "mod life;\n",
            "life/mod.rs": """\
                mod queue;
                mod status;
                pub struct Life;
                impl Life {
                    pub fn tick(&self) { self.head(); self.active(); }
                }
                """,
            "life/queue.rs": "use super::Life;\nimpl Life {\n    pub fn head(&self) {}\n}\n",
            "life/status.rs": "use super::Life;\nimpl Life {\n    pub fn active(&self) {}\n}\n",
        }
        # The parent calling its children's methods is no loop ...
        self.assert_clean(files)
        # ... two children calling each other's are.
        files["life/queue.rs"] = files["life/queue.rs"].replace("{}", "{ self.active() }")
        files["life/status.rs"] = files["life/status.rs"].replace("{}", "{ self.head() }")
        rc, out = self.crate(files)
        self.assertEqual(rc, 1)
        self.assertIn("file loop: src/life/queue.rs -> src/life/status.rs -> src/life/queue.rs", out)
        self.assertIn("src/life/queue.rs:3 self.active() (impl Life) -> src/life/status.rs", out)

    def test_trait_impls_are_not_followed(self):
        files = self.files("self.describe();")
        files["step/check.rs"] = textwrap.dedent("""\
            use crate::step::Runner;

            pub trait Describe {
                fn describe(&self);
            }

            impl Describe for Runner {
                fn describe(&self) {
                    self.ack();
                }
            }
            """)
        self.assert_clean(files)

    def test_calls_on_other_types_are_not_counted(self):
        files = self.files("self.ack();")
        files["step/driver.rs"] += textwrap.dedent("""\

            pub struct Other;

            impl Other {
                fn go(&self) {
                    self.check();
                }

                fn check(&self) {}
            }
            """)
        self.assert_clean(files)

    def test_test_only_methods_and_calls_are_left_out(self):
        files = self.files("self.ack();")
        files["step/driver.rs"] += textwrap.dedent("""\

            #[cfg(test)]
            impl Runner {
                fn probe(&self) {
                    self.check();
                }
            }
            """)
        self.assert_clean(files)


class TestCode(CrateTest):
    def test_inline_and_file_test_modules_and_items(self):
        self.assert_clean({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b_tests.rs": "use crate::a::A;\n",
            "b.rs": """\
                #[cfg(test)]
                #[path = "b_tests.rs"]
                mod tests;

                pub struct B {
                    #[cfg(test)]
                    pub seen: crate::a::A,
                    pub x: u8,
                }

                #[cfg(test)]
                use crate::a::A;

                impl B {
                    #[cfg(test)]
                    pub(crate) fn with(a: crate::a::A, x: [u8; 2]) -> Vec<u8> {
                        x.to_vec()
                    }

                    pub fn keep(&self) {}
                }

                #[cfg(test)]
                mod tests {
                    use crate::a::A;
                }

                #[cfg(all(test, feature = "slow"))]
                fn slow() { let _ = crate::a::A; }
                """,
        })

    def test_non_test_code_after_test_items_is_still_read(self):
        rc, out = self.crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": """\
                pub struct B;

                #[cfg(test)]
                fn helper() {}

                fn f() { let _ = crate::a::A; }
                """,
        })
        self.assertEqual(rc, 1)
        self.assertIn("src/b.rs:6 crate::a::A -> src/a.rs", out)


class Baseline(CrateTest):
    """The ratchet: loops in scripts/import-loops.baseline are known and
    pass; any other loop fails, and so does an entry that matches none."""

    TWO = {
        "lib.rs": "mod a;\nmod b;\nmod c;\n",
        "a.rs": "use crate::b::B;\npub struct A;\n",
        "b.rs": "use crate::a::A;\npub struct B;\n",
        "c.rs": "pub struct C;\n",
    }
    THREE = {
        "lib.rs": "mod a;\nmod b;\nmod c;\n",
        "a.rs": "use crate::b::B;\npub struct A;\n",
        "b.rs": "use crate::c::C;\npub struct B;\n",
        "c.rs": "use crate::a::A;\npub struct C;\n",
    }

    def baseline(self, text):
        path = self.root / "scripts" / "import-loops.baseline"
        path.parent.mkdir(exist_ok=True)
        path.write_text(textwrap.dedent(text))

    def test_a_known_loop_passes(self):
        self.baseline("""\
            # a and b share their types; being split.
            src/lib.rs file src/b.rs src/a.rs
            """)
        rc, out = self.crate(self.TWO)
        self.assertEqual(rc, 0, out)
        self.assertIn(
            "known (scripts/import-loops.baseline:2) src/lib.rs: "
            "file loop: src/a.rs -> src/b.rs -> src/a.rs",
            out,
        )
        self.assertNotIn("src/a.rs:1 use crate::b::B", out)
        self.assertIn("no new import loops; 1 known", out)

    def test_known_shows_the_edges_of_known_loops(self):
        self.baseline("# why\nsrc/lib.rs file src/a.rs src/b.rs\n")
        self.crate(self.TWO)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = loops.main([str(self.root), "--known"])
        self.assertEqual(rc, 0)
        self.assertIn("src/a.rs:1 use crate::b::B -> src/b.rs", out.getvalue())

    def test_a_known_module_loop_is_named_by_its_modules(self):
        self.baseline("# why\nsrc/lib.rs module crate::api crate::crons\n")
        rc, out = self.crate(ModuleLoops.API_AND_CRONS)
        self.assertEqual(rc, 0, out)
        self.assertIn("known (scripts/import-loops.baseline:2) src/lib.rs: module loop", out)

    def test_a_loop_not_in_the_baseline_fails(self):
        files = dict(self.TWO)
        files["lib.rs"] += "mod d;\nmod e;\n"
        files["d.rs"] = "use crate::e::E;\npub struct D;\n"
        files["e.rs"] = "use crate::d::D;\npub struct E;\n"
        self.baseline("# why\nsrc/lib.rs file src/a.rs src/b.rs\n")
        rc, out = self.crate(files)
        self.assertEqual(rc, 1)
        self.assertIn("known (scripts/import-loops.baseline:2)", out)
        self.assertIn("file loop: src/d.rs -> src/e.rs -> src/d.rs", out)
        self.assertIn("not in scripts/import-loops.baseline: break it", out)
        self.assertIn("1 import loop(s) not in the baseline", out)

    def test_an_entry_matching_no_loop_fails(self):
        self.baseline("# why\nsrc/lib.rs file src/a.rs src/b.rs\n")
        files = dict(self.TWO)
        files["b.rs"] = "pub struct B;\n"
        rc, out = self.crate(files)
        self.assertEqual(rc, 1)
        self.assertIn(
            "scripts/import-loops.baseline:2: no such loop any more; remove it from the baseline:\n"
            "  src/lib.rs file src/a.rs src/b.rs",
            out,
        )
        self.assertIn("1 baseline entry matching no loop", out)

    def test_a_shrunk_loop_asks_for_its_smaller_line(self):
        self.baseline("# why\nsrc/lib.rs file src/a.rs src/b.rs src/c.rs\n")
        rc, out = self.crate(self.TWO)
        self.assertEqual(rc, 1)
        self.assertIn(
            "what is left of the loop at scripts/import-loops.baseline:2; replace that line with:\n"
            "    src/lib.rs file src/a.rs src/b.rs",
            out,
        )

    def test_a_grown_loop_fails(self):
        self.baseline("# why\nsrc/lib.rs file src/a.rs src/b.rs\n")
        files = dict(self.THREE)
        files["b.rs"] = "use crate::c::C;\nuse crate::a::A;\npub struct B;\n"
        rc, out = self.crate(files)
        self.assertEqual(rc, 1)
        self.assertIn("the loop at scripts/import-loops.baseline:2 grew or changed", out)
        self.assertIn("no such loop any more", out)

    def test_the_crate_root_is_part_of_the_name(self):
        self.baseline("# why\ntests/other.rs file src/a.rs src/b.rs\n")
        rc, out = self.crate(self.TWO)
        self.assertEqual(rc, 1)
        self.assertIn("not in scripts/import-loops.baseline", out)
        self.assertIn("no such loop any more", out)

    def test_a_baseline_of_comments_only_is_empty(self):
        # Once the last loop is broken, the file keeps its header.
        self.baseline("# Import loops that remain for now.\n# None do.\n")
        self.assert_clean({"lib.rs": "mod a;\n", "a.rs": "pub struct A;\n"})
        rc, out = self.crate(self.TWO)
        self.assertEqual(rc, 1)
        self.assertIn("not in scripts/import-loops.baseline: break it", out)
        self.assertIn("0 baseline entries matching no loop, 0 error(s)", out)

    def test_entries_say_why_and_are_well_formed(self):
        self.baseline("""\
            # a and b: why.
            src/lib.rs file src/a.rs src/b.rs
            src/lib.rs file src/b.rs src/a.rs

            src/lib.rs module crate::x crate::y
            # broken:
            src/lib.rs loop src/a.rs src/b.rs
            """)
        rc, out = self.crate(self.TWO)
        self.assertEqual(rc, 1)
        self.assertIn("scripts/import-loops.baseline:3: the same loop as line 2", out)
        self.assertIn("scripts/import-loops.baseline:5: say why this loop remains", out)
        self.assertIn("scripts/import-loops.baseline:7: expected `CRATE_ROOT file|module", out)
        self.assertIn("3 error(s)", out)


class Lexer(unittest.TestCase):
    def test_keeps_lines_and_lifetimes(self):
        text = "fn f<'a>(x: &'a str) {}\n/* one\ntwo */ let c = '\\'';\nlet s = \"a\nb\";\n"
        out = loops.strip_comments_and_strings(text)
        self.assertEqual(out.count("\n"), text.count("\n"))
        self.assertIn("<'a>", out)
        self.assertNotIn("one", out)
        self.assertNotIn("a\nb", out)

    def test_expand_use(self):
        self.assertEqual(
            loops.expand_use("a::{b, c::{d as e, self}, f::*}"),
            [("a::b", "b"), ("a::c::d", "e"), ("a::c", "c"), ("a::f::*", "*")],
        )


if __name__ == "__main__":
    unittest.main()
