#!/usr/bin/env python3
"""Tests of scripts/module-graph.py on small hand-made workspaces whose counts are known.

    python3 scripts/module-graph-tests.py        # scripts/test.sh runs it before the real check

scripts/test.sh holds the workspace to module-graph's rules (no cycle, no arrow back up, crates
and the core crate's folders in the layers scripts/layers.toml declares); these tests show that
each rule fails when broken, so the gate is not one that cannot fail.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "module-graph.py")


def workspace(test, files):
    """A temporary workspace of one crate `demo`, with FILES ({path under src: text}), removed
    when TEST ends."""
    root = tempfile.mkdtemp(prefix="module-graph-test.")
    test.addCleanup(shutil.rmtree, root)
    os.makedirs(os.path.join(root, "demo", "src"))
    with open(os.path.join(root, "Cargo.toml"), "w") as manifest:
        manifest.write('[workspace]\nmembers = ["demo"]\n')
    with open(os.path.join(root, "demo", "Cargo.toml"), "w") as manifest:
        manifest.write('[package]\nname = "demo"\nversion = "0.1.0"\n')
    for path, text in files.items():
        with open(os.path.join(root, "demo", "src", path), "w") as source:
            source.write(text)
    return root


def run(root, *arguments):
    done = subprocess.run([sys.executable, SCRIPT, root, *arguments], capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


# lib -> top -> middle -> bottom: import depth 4, nothing back up, no cycle.
LAYERED = {
    "lib.rs": "mod bottom;\nmod middle;\nmod top;\npub use top::Top;\nfn f(_: top::Top) {}\n",
    "top.rs": "use crate::middle::Middle;\npub struct Top(pub Middle);\n",
    "middle.rs": "use crate::bottom::Bottom;\npub struct Middle(pub Bottom);\n",
    "bottom.rs": "pub struct Bottom;\n",
}


class ModuleGraph(unittest.TestCase):
    def test_a_layered_crate_passes_every_rule(self):
        code, out, err = run(workspace(self, LAYERED), "--strict", "--max-depth", "demo=4")
        self.assertEqual(code, 0, out + err)
        self.assertIn("lib: 4 modules, 3 arrows, 0 cycles, 0 arrows back up, import depth 4", out)

    def test_one_step_too_deep_fails_max_depth(self):
        code, _, err = run(workspace(self, LAYERED), "--max-depth", "demo=3")
        self.assertEqual(code, 1)
        self.assertIn("module-graph: FAIL demo: import depth 4, at most 3 (--max-depth)", err)
        # The option's former name still works, for scripts written before the rename.
        code, _, err = run(workspace(self, LAYERED), "--max-floors", "demo=3")
        self.assertEqual(code, 1)
        self.assertIn("module-graph: FAIL demo: import depth 4, at most 3 (--max-depth)", err)

    def test_an_arrow_back_up_fails_only_when_strict(self):
        files = {
            "lib.rs": "mod child;\npub struct Shared;\n",
            "child.rs": "use crate::Shared;\npub fn f(_: Shared) {}\n",
        }
        root = workspace(self, files)
        code, out, _ = run(root)
        self.assertEqual(code, 0)
        self.assertIn("1 arrow back up", out)
        code, _, err = run(root, "--strict")
        self.assertEqual(code, 1)
        self.assertIn("module-graph: FAIL demo (lib): 1 arrow back up (--strict)", err)

    def test_a_cycle_fails_always(self):
        files = {
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\npub fn f(_: B) {}\n",
            "b.rs": "use crate::a::A;\npub struct B;\npub fn g(_: A) {}\n",
        }
        code, out, _ = run(workspace(self, files))
        self.assertEqual(code, 1)
        self.assertIn("cycle of 2 modules: a, b", out)

    def test_a_bad_rule_is_bad_input(self):
        code, _, err = run(workspace(self, LAYERED), "--max-depth", "demo=seven")
        self.assertEqual(code, 2)
        self.assertIn("--max-depth wants CRATE=N", err)
        code, _, err = run(workspace(self, LAYERED), "--max-depth", "other=3")
        self.assertEqual(code, 2)
        self.assertIn("no crate other", err)


def layers_file(test, root, text):
    path = os.path.join(root, "layers.toml")
    with open(path, "w") as handle:
        handle.write(text)
    return path


# LAYERED's folders in the order its imports go, and the same with middle and bottom swapped.
IN_ORDER = """
[[crates]]
layer = "all"
members = ["demo"]

[[folders.demo]]
layer = "root"
members = ["crate"]

[[folders.demo]]
layer = "top"
members = ["top"]

[[folders.demo]]
layer = "middle"
members = ["middle"]

[[folders.demo]]
layer = "bottom"
members = ["bottom"]
"""


class DeclaredLayers(unittest.TestCase):
    def test_imports_that_go_down_the_declared_layers_pass(self):
        root = workspace(self, LAYERED)
        code, out, err = run(root, "--strict", "--layers", layers_file(self, root, IN_ORDER))
        self.assertEqual(code, 0, out + err)
        self.assertIn("layers: 3 arrows between folders, 0 not down a layer of 4", out)

    def test_an_import_up_a_layer_fails_and_names_its_line(self):
        root = workspace(self, LAYERED)
        swapped = IN_ORDER.replace('members = ["middle"]', 'members = ["BOTTOM"]')
        swapped = swapped.replace('members = ["bottom"]', 'members = ["middle"]').replace("BOTTOM", "bottom")
        code, _, err = run(root, "--layers", layers_file(self, root, swapped))
        self.assertEqual(code, 1)
        self.assertIn("module-graph: FAIL demo: middle -> bottom (demo/src/middle.rs:1) does not go down a layer", err)

    def test_siblings_in_one_layer_may_not_use_each_other(self):
        root = workspace(self, LAYERED)
        together = IN_ORDER.replace('members = ["middle"]', 'members = ["middle", "bottom"]')
        together = together.replace('[[folders.demo]]\nlayer = "bottom"\nmembers = ["bottom"]\n', "")
        code, _, err = run(root, "--layers", layers_file(self, root, together))
        self.assertEqual(code, 1)
        self.assertIn("middle -> bottom", err)

    def test_a_folder_or_crate_in_no_layer_fails(self):
        root = workspace(self, LAYERED)
        unplaced = IN_ORDER.replace('members = ["bottom"]', "members = []")
        code, _, err = run(root, "--layers", layers_file(self, root, unplaced))
        self.assertEqual(code, 1)
        self.assertIn("module-graph: FAIL demo: the folder bottom is in no layer (--layers)", err)
        no_crate = IN_ORDER.replace('members = ["demo"]', "members = []")
        code, _, err = run(root, "--layers", layers_file(self, root, no_crate))
        self.assertEqual(code, 2)
        self.assertIn("the workspace crate(s) demo are in no layer", err)

    def test_a_crate_depending_on_its_own_layer_fails(self):
        root = workspace(self, LAYERED)
        os.makedirs(os.path.join(root, "base", "src"))
        with open(os.path.join(root, "base", "Cargo.toml"), "w") as manifest:
            manifest.write('[package]\nname = "base"\nversion = "0.1.0"\n')
        with open(os.path.join(root, "base", "src", "lib.rs"), "w") as source:
            source.write("pub struct Base;\n")
        with open(os.path.join(root, "Cargo.toml"), "w") as manifest:
            manifest.write('[workspace]\nmembers = ["demo", "base"]\n')
        with open(os.path.join(root, "demo", "Cargo.toml"), "a") as manifest:
            manifest.write('\n[dependencies]\nbase = { path = "../base" }\n')
        one_layer = IN_ORDER.replace('members = ["demo"]', 'members = ["demo", "base"]')
        code, _, err = run(root, "--layers", layers_file(self, root, one_layer))
        self.assertEqual(code, 1)
        self.assertIn("module-graph: FAIL demo -> base: a crate depends on its own layer or a higher one", err)
        two_layers = IN_ORDER + '\n[[crates]]\nlayer = "below"\nmembers = ["base"]\n'
        code, out, err = run(root, "--layers", layers_file(self, root, two_layers))
        self.assertEqual(code, 0, out + err)

    def test_a_bad_layers_file_is_bad_input(self):
        root = workspace(self, LAYERED)
        code, _, err = run(root, "--layers", layers_file(self, root, IN_ORDER + '\n[[crates]]\nmembers = ["demo"]\n'))
        self.assertEqual(code, 2)
        self.assertIn("demo is in two layers of crates", err)
        code, _, err = run(root, "--layers", layers_file(self, root, "crates = ["))
        self.assertEqual(code, 2)
        self.assertIn("cannot read", err)


if __name__ == "__main__":
    unittest.main()
