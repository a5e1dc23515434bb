#!/usr/bin/env python3
"""Tests of scripts/module-graph.py on small hand-made workspaces whose counts are known.

    python3 scripts/module-graph-tests.py        # scripts/test.sh runs it before the real check

scripts/test.sh holds the workspace to module-graph's rules (no cycle, no arrow back up, the core
crate on at most 7 floors); these tests show that each rule fails when broken, so the gate is
not one that cannot fail.
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


# lib -> top -> middle -> bottom: four floors, nothing back up, no cycle.
LAYERED = {
    "lib.rs": "mod bottom;\nmod middle;\nmod top;\npub use top::Top;\nfn f(_: top::Top) {}\n",
    "top.rs": "use crate::middle::Middle;\npub struct Top(pub Middle);\n",
    "middle.rs": "use crate::bottom::Bottom;\npub struct Middle(pub Bottom);\n",
    "bottom.rs": "pub struct Bottom;\n",
}


class ModuleGraph(unittest.TestCase):
    def test_a_layered_crate_passes_every_rule(self):
        code, out, err = run(workspace(self, LAYERED), "--strict", "--max-floors", "demo=4")
        self.assertEqual(code, 0, out + err)
        self.assertIn("lib: 4 rooms, 3 arrows, 0 cycles, 0 arrows back up, 4 floors", out)

    def test_one_floor_too_many_fails_max_floors(self):
        code, _, err = run(workspace(self, LAYERED), "--max-floors", "demo=3")
        self.assertEqual(code, 1)
        self.assertIn("module-graph: FAIL demo: 4 floors, at most 3 (--max-floors)", err)

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
        self.assertIn("cycle of 2 rooms: a, b", out)

    def test_a_bad_rule_is_bad_input(self):
        code, _, err = run(workspace(self, LAYERED), "--max-floors", "demo=seven")
        self.assertEqual(code, 2)
        self.assertIn("--max-floors wants CRATE=N", err)
        code, _, err = run(workspace(self, LAYERED), "--max-floors", "other=3")
        self.assertEqual(code, 2)
        self.assertIn("no crate other", err)


if __name__ == "__main__":
    unittest.main()
