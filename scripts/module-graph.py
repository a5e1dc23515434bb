#!/usr/bin/env python3
"""Counts any reader can redo from the imports: the module graph of every crate in the workspace.

    scripts/module-graph.py                 # every crate of the workspace this script is in
    scripts/module-graph.py --crate gdrperf # one crate
    scripts/module-graph.py --arrows        # also every arrow, with the file and line it comes from
    scripts/module-graph.py ROOT            # another checkout

For each crate's library (src/lib.rs) and binary (src/main.rs, src/bin/*.rs) it prints:

- modules: found by following `mod NAME;` and `mod NAME { ... }` from the root as rustc
  does (`#[path = ...]` honoured); test modules (`#[cfg(test)]`) are left out unless --tests. The
  root (lib.rs, main.rs) is the module `crate`;
- arrows: module A -> module B when A's code names an item of B through a path: `use crate::...`,
  `use super::...`, `use self::...`, `use CHILD::...` and the same paths in expressions and types.
  A path through a re-export (`pub use x::Item` in a parent) is followed to the module that defines
  the item, so `crate::Error` points at `error`, not at the crate root. A `pub use` is the
  module's public face, not a use: it makes an arrow only when the module's own code also names
  the item. Comments and string literals are ignored (a doc link is no import);
- cycles: sets of modules that reach each other through arrows, each with one shortest loop;
- arrows back up: from a module to one of its ancestors in the module tree (`a::b::c -> a`):
  a module reaching into the items of the module that contains it;
- import depth: the longest chain of imports. A module that names no other module of its crate
  has depth 1; every other module is one deeper than the deepest module it imports. A crate's
  import depth is the greatest of its modules', i.e. the number of modules on the longest chain
  of arrows. A cycle's modules count as one step (they stand or fall together).

Then the crates themselves: one arrow per workspace crate named under [dependencies] or
[build-dependencies] of another (dev-dependencies are listed apart: cargo allows them to loop),
with their cycles and import depth.

Exit status: 0 when no cycle exists (between modules or crates), 1 when one does, 2 on bad input.
The layering rules scripts/test.sh holds the workspace to are options: --strict (an arrow back up
fails too) and --layers FILE (scripts/layers.toml: the crates, and the top-level folders of the
crates it lists, in declared layers; an arrow to a sibling or up a layer fails, and so does a
crate or folder the file does not place). --max-depth CRATE=N (a crate's library with an import
depth above N fails; --max-floors is its former name, still accepted) counts depth only and is
kept for a look, not for the gate. Each failure is named
in a `module-graph: FAIL` line on stderr.
Python 3.11 or later, standard library only (scripts/lib/rust_modules.py reads the sources); it
reads them as text, no cargo, no build: about two seconds for the workspace. Known limits: paths
made by macros are not seen; a glob re-export (`pub use x::*`) is followed only for items `x`
itself defines; a path naming a local item that has a child module's name is read as the module.
"""

import argparse
import os
import sys
import tomllib  # Python 3.11 or later
from collections import defaultdict, deque

sys.dont_write_bytecode = True  # no __pycache__ left in scripts/lib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from rust_modules import arrows_of, read_module_tree  # noqa: E402  (found through the line above)


# --- Graph figures ---------------------------------------------------------------------------


def strongly_connected(nodes, edges):
    """Tarjan's strongly connected components, each a sorted list."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []
    counter = [0]
    successors = defaultdict(list)
    for a, b in edges:
        successors[a].append(b)

    def visit(v):
        work = [(v, iter(sorted(successors[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, children = work[-1]
            advanced = False
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(successors[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                components.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return components


def shortest_loop(component, edges):
    """One shortest cycle through the first member of a strongly connected component."""
    members = set(component)
    successors = defaultdict(list)
    for a, b in edges:
        if a in members and b in members:
            successors[a].append(b)
    start = component[0]
    previous = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for w in sorted(successors[node]):
            if w == start:
                loop = [node]
                while previous[loop[-1]] is not None:
                    loop.append(previous[loop[-1]])
                return list(reversed(loop)) + [start]
            if w not in previous:
                previous[w] = node
                queue.append(w)
    return [start]


def import_depth(nodes, edges):
    """(import depth, one deepest chain from the top): each step of the chain is the list of
    members of one component, a cycle's members sharing one step."""
    components = strongly_connected(nodes, edges)
    component_of = {v: i for i, members in enumerate(components) for v in members}
    successors = defaultdict(set)
    for a, b in edges:
        if component_of[a] != component_of[b]:
            successors[component_of[a]].add(component_of[b])
    depth, below = {}, {}
    # Tarjan emits components in reverse topological order: what a component imports comes first.
    for i in range(len(components)):
        best = max(successors[i], key=lambda j: (depth[j], -j), default=None)
        depth[i] = 1 + (depth[best] if best is not None else 0)
        below[i] = best
    if not depth:
        return 0, []
    top = max(depth, key=lambda i: (depth[i], -i))
    chain, i = [], top
    while i is not None:
        chain.append(components[i])
        i = below[i]
    return depth[top], chain


# --- Crates ----------------------------------------------------------------------------------


def read_toml(path):
    with open(path, "rb") as handle:
        return tomllib.load(handle)


def workspace_crates(root):
    """[(name, directory, {dependency kind: [names]})] in the order Cargo.toml lists them."""
    manifest = read_toml(os.path.join(root, "Cargo.toml"))
    members = manifest.get("workspace", {}).get("members", [])
    crates = []
    for member in members:
        directory = os.path.join(root, member)
        package = read_toml(os.path.join(directory, "Cargo.toml"))
        dependencies = {
            kind: sorted(package.get(kind, {}))
            for kind in ("dependencies", "build-dependencies", "dev-dependencies")
        }
        crates.append((package["package"]["name"], directory, dependencies, package))
    return crates


def crate_roots(directory, package):
    """[(label, root file)]: the library, then the binaries."""
    roots = []
    lib = package.get("lib", {}).get("path", "src/lib.rs")
    if os.path.exists(os.path.join(directory, lib)):
        roots.append(("lib", os.path.join(directory, lib)))
    binaries = {}
    declared_paths = {target.get("path") for target in package.get("bin", [])}
    if os.path.exists(os.path.join(directory, "src/main.rs")) and "src/main.rs" not in declared_paths:
        binaries[package["package"]["name"]] = "src/main.rs"
    bin_dir = os.path.join(directory, "src/bin")
    if os.path.isdir(bin_dir):
        for entry in sorted(os.listdir(bin_dir)):
            if entry.endswith(".rs"):
                binaries[entry[:-3]] = os.path.join("src/bin", entry)
            elif os.path.exists(os.path.join(bin_dir, entry, "main.rs")):
                binaries[entry] = os.path.join("src/bin", entry, "main.rs")
    for target in package.get("bin", []):
        if "path" in target:
            binaries[target["name"]] = target["path"]
        elif target["name"] not in binaries and os.path.exists(os.path.join(bin_dir, target["name"] + ".rs")):
            binaries[target["name"]] = os.path.join("src/bin", target["name"] + ".rs")
    for name, path in sorted(binaries.items()):
        roots.append((f"bin {name}", os.path.join(directory, path)))
    return roots


# --- Declared layers ------------------------------------------------------------------------


def read_layers(path, crate_names):
    """The layers of a --layers file: ({crate: rank}, {crate: {folder: rank}}), rank 0 the
    highest layer. Raises ValueError naming what is wrong with the file."""
    try:
        declared = read_toml(path)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"cannot read {path}: {error}") from error

    def ranks(layers, what):
        if not isinstance(layers, list) or not all(isinstance(layer, dict) for layer in layers):
            raise ValueError(f"{path}: {what} is not a list of layers ([[...]] tables)")
        rank = {}
        for index, layer in enumerate(layers):
            members = layer.get("members")
            if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
                raise ValueError(f"{path}: layer {index + 1} of {what} has no members list")
            for member in members:
                if member in rank:
                    raise ValueError(f"{path}: {member} is in two layers of {what}")
                rank[member] = index
        return rank

    crate_rank = ranks(declared.get("crates", []), "crates")
    unknown = sorted(set(crate_rank) - set(crate_names))
    missing = sorted(set(crate_names) - set(crate_rank)) if "crates" in declared else []
    if unknown:
        raise ValueError(f"{path}: no workspace crate {', '.join(unknown)}")
    if missing:
        raise ValueError(f"{path}: the workspace crate(s) {', '.join(missing)} are in no layer")
    folders = declared.get("folders", {})
    if not isinstance(folders, dict):
        raise ValueError(f"{path}: folders is not a table of crates")
    folder_rank = {}
    for crate, layers in folders.items():
        if crate not in crate_names:
            raise ValueError(f"{path}: folders of {crate}, which is no workspace crate")
        folder_rank[crate] = ranks(layers, f"folders.{crate}")
    return crate_rank, folder_rank


def folder_of(path):
    """A module's top-level folder: its first name, `crate` for the root."""
    return path[0] if path else "crate"


def layer_breaks(edges, rank):
    """The arrows that do not go down a layer ([(a, b)]), and the ends in no layer ([name])."""
    unplaced = sorted({end for edge in edges for end in edge if end not in rank})
    breaks = [(a, b) for a, b in edges if a in rank and b in rank and rank[a] >= rank[b]]
    return sorted(breaks), unplaced


# --- Report ----------------------------------------------------------------------------------


def name_of(path):
    return "::".join(path) if path else "crate"


def describe_tree(label, modules, arrows, root_dir, show_arrows):
    """Lines for one crate target, and its counts: (lines, cycles, arrows back up, import depth)."""
    nodes = list(modules)
    edges = list(arrows)
    cycles = [c for c in strongly_connected(nodes, edges) if len(c) > 1]
    back_up = [(a, b) for a, b in edges if len(b) < len(a) and a[: len(b)] == b]
    height, chain = import_depth(nodes, edges)
    lines = [
        f"{label}: {counted(len(nodes), 'module')}, {counted(len(edges), 'arrow')}, "
        f"{counted(len(cycles), 'cycle')}, {counted(len(back_up), 'arrow')} back up, import depth {height}"
    ]
    if chain:
        lines.append("  deepest chain: " + chain_text(chain, name_of))
    for component in cycles:
        loop = shortest_loop(component, edges)
        lines.append(f"  cycle of {len(component)} modules: " + ", ".join(name_of(p) for p in component))
        steps = []
        for a, b in zip(loop, loop[1:]):
            file, line = arrows[(a, b)][0]
            steps.append(f"{name_of(a)} -> {name_of(b)} ({os.path.relpath(file, root_dir)}:{line})")
        lines.append("    loop: " + "; ".join(steps))
    for a, b in sorted(back_up):
        file, line = arrows[(a, b)][0]
        lines.append(f"  back up: {name_of(a)} -> {name_of(b)} ({os.path.relpath(file, root_dir)}:{line})")
    if show_arrows:
        for (a, b), places in sorted(arrows.items()):
            where = ", ".join(f"{os.path.relpath(f, root_dir)}:{n}" for f, n in places[:3])
            more = f" (+{len(places) - 3})" if len(places) > 3 else ""
            lines.append(f"  arrow: {name_of(a)} -> {name_of(b)}  {where}{more}")
    return lines, len(cycles), len(back_up), height


def counted(number, word):
    return f"{number} {word}" if number == 1 else f"{number} {word}s"


def chain_text(chain, name):
    """`a -> {b, c} -> d`: a step with several members is a cycle counted as one step of depth."""
    steps = [name(m[0]) if len(m) == 1 else "{" + ", ".join(map(name, m)) + "}" for m in chain]
    return " -> ".join(steps)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("root", nargs="?", default=default_root, help="workspace root (default: this checkout)")
    parser.add_argument("--crate", action="append", default=[], help="only this crate (repeatable)")
    parser.add_argument("--arrows", action="store_true", help="list every arrow with where it comes from")
    parser.add_argument("--tests", action="store_true", help="count #[cfg(test)] modules too")
    parser.add_argument("--strict", action="store_true", help="exit 1 on an arrow back up too, not only on a cycle")
    parser.add_argument(
        "--layers",
        metavar="FILE",
        help="exit 1 when a crate or a listed crate's folder uses a sibling or a higher layer (scripts/layers.toml)",
    )
    parser.add_argument(
        "--max-depth",
        "--max-floors",
        dest="max_depth",
        action="append",
        default=[],
        metavar="CRATE=N",
        help="exit 1 when CRATE's library has an import depth above N (repeatable; --max-floors is its former name)",
    )
    options = parser.parse_args()
    max_depth = {}
    for rule in options.max_depth:
        crate, _, number = rule.partition("=")
        if not crate or not number.isdigit() or int(number) < 1:
            print(f"module-graph: --max-depth wants CRATE=N with N a whole number from 1, not '{rule}'", file=sys.stderr)
            return 2
        max_depth[crate] = int(number)

    if not os.path.exists(os.path.join(options.root, "Cargo.toml")):
        print(f"module-graph: {options.root} has no Cargo.toml", file=sys.stderr)
        return 2
    crates = workspace_crates(options.root)
    names = {name for name, *_ in crates}
    unknown = [c for c in options.crate + list(max_depth) if c not in names]
    if unknown:
        print(f"module-graph: no crate {', '.join(unknown)} in {options.root}", file=sys.stderr)
        return 2

    crate_rank, folder_rank = {}, {}
    if options.layers:
        try:
            crate_rank, folder_rank = read_layers(options.layers, names)
        except ValueError as error:
            print(f"module-graph: {error}", file=sys.stderr)
            return 2

    any_cycle = False
    failures = []
    totals = [0, 0, 0, 0]
    for name, directory, dependencies, package in crates:
        if options.crate and name not in options.crate:
            continue
        print(f"{name} ({os.path.relpath(directory, options.root)})")
        small = []
        for label, root_file in crate_roots(directory, package):
            _, modules = read_module_tree(root_file, options.tests)
            arrows = arrows_of(modules)
            if label.startswith("bin ") and len(modules) == 1 and not arrows:
                small.append(label[4:])
                continue
            lines, cycles, back_up, height = describe_tree("  " + label, modules, arrows, options.root, options.arrows)
            any_cycle |= cycles > 0
            if options.strict and back_up:
                failures.append(f"{name} ({label}): {counted(back_up, 'arrow')} back up (--strict)")
            if label == "lib" and name in max_depth and height > max_depth[name]:
                failures.append(f"{name}: import depth {height}, at most {max_depth[name]} (--max-depth)")
            if label == "lib" and name in folder_rank:
                folder_edges = sorted({(folder_of(a), folder_of(b)) for a, b in arrows})
                folder_edges = [(a, b) for a, b in folder_edges if a != b]
                for folder in sorted({folder_of(module) for module in modules} - set(folder_rank[name])):
                    failures.append(f"{name}: the folder {folder} is in no layer (--layers)")
                breaks, _ = layer_breaks(folder_edges, folder_rank[name])
                for a, b in breaks:
                    file, line = next(arrows[arrow][0] for arrow in sorted(arrows) if folder_of(arrow[0]) == a and folder_of(arrow[1]) == b)
                    failures.append(
                        f"{name}: {a} -> {b} ({os.path.relpath(file, options.root)}:{line}) does not go down a layer (--layers)"
                    )
                layers = len(set(folder_rank[name].values()))
                lines.append(f"  layers: {len(folder_edges)} arrows between folders, {len(breaks)} not down a layer of {layers}")
            print("\n".join(lines[:1] + ["  " + line for line in lines[1:]]))
            totals[0] += len(modules)
            totals[1] += len(arrows)
        if small:
            print(f"  {len(small)} binaries of one module each: {', '.join(small)}")
            totals[0] += len(small)

    if not options.crate:
        crate_edges = []
        dev_edges = []
        for name, _, dependencies, _ in crates:
            for kind in ("dependencies", "build-dependencies"):
                crate_edges += [(name, d) for d in dependencies[kind] if d in names]
            dev_edges += [(name, d) for d in dependencies["dev-dependencies"] if d in names]
        crate_edges = sorted(set(crate_edges))
        cycles = [c for c in strongly_connected(names, crate_edges) if len(c) > 1]
        height, chain = import_depth(names, crate_edges)
        print(
            f"workspace: {counted(len(names), 'crate')}, {counted(len(crate_edges), 'arrow')} between them "
            f"(+{len(dev_edges)} dev-dependencies), {counted(len(cycles), 'cycle')}, import depth {height}"
        )
        print("  deepest chain: " + chain_text(chain, str))
        for component in cycles:
            any_cycle = True
            print("  cycle: " + " -> ".join(shortest_loop(component, crate_edges)))
        print(f"  all crates: {totals[0]} modules, {totals[1]} arrows")
        if crate_rank:
            breaks, _ = layer_breaks(crate_edges, crate_rank)
            layers = len(set(crate_rank.values()))
            print(f"  layers: {len(crate_edges)} arrows between crates, {len(breaks)} not down a layer of {layers}")
            for a, b in breaks:
                failures.append(f"{a} -> {b}: a crate depends on its own layer or a higher one (--layers)")
    for failure in failures:
        print(f"module-graph: FAIL {failure}", file=sys.stderr)
    return 1 if any_cycle or failures else 0


if __name__ == "__main__":
    sys.exit(main())
