#!/usr/bin/env python3
"""Counts any reader can redo from the imports: the module graph of every crate in the workspace.

    scripts/module-graph.py                 # every crate of the workspace this script is in
    scripts/module-graph.py --crate gdrperf # one crate
    scripts/module-graph.py --arrows        # also every arrow, with the file and line it comes from
    scripts/module-graph.py ROOT            # another checkout

For each crate's library (src/lib.rs) and binary (src/main.rs, src/bin/*.rs) it prints:

- rooms: the modules, found by following `mod NAME;` and `mod NAME { ... }` from the root as rustc
  does (`#[path = ...]` honoured); test modules (`#[cfg(test)]`) are left out unless --tests;
- arrows: module A -> module B when A's code names an item of B through a path: `use crate::...`,
  `use super::...`, `use self::...`, `use CHILD::...` and the same paths in expressions and types.
  A path through a re-export (`pub use x::Item` in a parent) is followed to the module that defines
  the item, so `crate::Error` points at `error`, not at the crate root. A `pub use` is the
  module's public face, not a use: it makes an arrow only when the module's own code also names
  the item. Comments and string literals are ignored (a doc link is no import);
- cycles: sets of modules that reach each other through arrows, each with one shortest loop;
- arrows back up: from a module to one of its ancestors in the module tree (`a::b::c -> a`):
  a room reaching into the items of the room that contains it;
- floors: the deepest chain of imports. A module that names no other module of its crate stands
  on floor 1; every other module stands one floor above the highest module it imports. The floors
  of a crate are the highest floor of its modules, i.e. the number of modules on the longest chain
  of arrows. A cycle's modules count as one floor (they stand or fall together).

Then the crates themselves: one arrow per workspace crate named under [dependencies] or
[build-dependencies] of another (dev-dependencies are listed apart: cargo allows them to loop),
with their cycles and floors.

Exit status: 0 when no cycle exists (between modules or crates), 1 when one does, 2 on bad input.
Python 3.11 or later, standard library only; it reads the sources as text (no cargo, no build), so it takes
well under a second. Known limits: macro-generated paths and `use` inside macro bodies are read as
written; a glob re-export (`pub use x::*`) is followed only for items `x` itself defines.
"""

import argparse
import os
import re
import sys
from collections import defaultdict, deque

import tomllib  # Python 3.11 or later


# --- Reading Rust source as text -------------------------------------------------------------


def strip_comments(text, strip_strings):
    """`text` with comments (and, when `strip_strings`, string and char literals) blanked out.

    Newlines are kept, so offsets still give the right line numbers. Lifetimes (`'a`) are kept.
    """
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif raw_string_start(text, i):
            prefix, hashes = raw_string_start(text, i)
            body = i + prefix
            end = text.find('"' + "#" * hashes, body)
            end = n if end < 0 else end + 1 + hashes
            out.append(keep_or_blank(text[i:end], strip_strings))
            i = end
        elif c == '"' or (c == "b" and text.startswith('b"', i) and not word_before(text, i)):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(keep_or_blank(text[i : j + 1], strip_strings))
            i = j + 1
        elif c == "'":
            end = char_literal_end(text, i)
            if end is None:  # a lifetime or a label
                out.append(c)
                i += 1
            else:
                out.append(keep_or_blank(text[i:end], strip_strings))
                i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def blank(piece):
    return re.sub(r"[^\n]", " ", piece)


def keep_or_blank(piece, strip):
    if not strip:
        return piece
    return piece[0] + blank(piece[1:-1]) + piece[-1] if len(piece) >= 2 else blank(piece)


def word_before(text, i):
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")


def raw_string_start(text, i):
    """(length of `r#..#"` or `br#..#"`, number of #) when a raw string starts at `i`."""
    if word_before(text, i):
        return None
    m = re.compile(r'b?r(#*)"').match(text, i)
    return (m.end() - i, len(m.group(1))) if m else None


def char_literal_end(text, i):
    """The offset after a char literal starting at `i`, or None for a lifetime."""
    if text.startswith("\\", i + 1):
        end = text.find("'", i + 2)
        return None if end < 0 else end + 1
    if i + 2 < len(text) and text[i + 2] == "'":
        return i + 3
    return None


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def matching_brace(text, open_at):
    """The offset of the `}` closing the `{` at `open_at` (comments and strings already blank)."""
    depth = 0
    for j in range(open_at, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text)


ATTRIBUTES = r"((?:#\[[^\]]*\]\s*)*)"
VISIBILITY = r"(pub(?:\s*\([^)]*\))?\s+)?"
MOD_DECLARATION = re.compile(ATTRIBUTES + VISIBILITY + r"mod\s+(r#)?([A-Za-z_]\w*)\s*([;{])")
USE_STATEMENT = re.compile(r"(?<![\w$])" + VISIBILITY + r"use\s+([^;]*);")
ITEM_DEFINITION = re.compile(
    r"\b(?:fn|struct|enum|trait|type|const|static|union|macro_rules!)\s+([A-Za-z_]\w*)"
)
PATH_IN_CODE = re.compile(r"(?<![\w:$])((?:::)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)+)")


class Module:
    """One room: a file, or an inline `mod name { ... }` inside one."""

    def __init__(self, path, file, text, span):
        self.path = path  # tuple of names from the crate root
        self.file = file
        self.text = text  # the whole file, comments and strings blanked
        self.span = span  # (start, end) of this module's own code within `text`
        self.children = {}  # name -> Module
        self.uses = []  # (segments, is_public_reexport, alias, offset)
        self.code_paths = []  # (segments, offset)
        self.defined = set()
        self.exclude = []  # spans of child inline modules and removed test modules

    @property
    def name(self):
        return "::".join(self.path) if self.path else "crate"


def own_text(module):
    """The module's own code: its span without the spans of inline child modules."""
    start, end = module.span
    pieces, cursor = [], start
    for a, b in sorted(module.exclude):
        if a < cursor:
            continue
        pieces.append(module.text[cursor:a])
        pieces.append(blank(module.text[a:b]))
        cursor = b
    pieces.append(module.text[cursor:end])
    return start, "".join(pieces)


def read_module_tree(root_file, include_tests):
    """Every module reachable from `root_file` (a lib.rs, main.rs or bin file)."""
    modules = {}
    root = load_file((), root_file, os.path.dirname(root_file), modules, include_tests)
    return root, modules


def load_file(path, file, child_dir, modules, include_tests):
    with open(file, encoding="utf-8") as handle:
        raw = handle.read()
    kept_strings = strip_comments(raw, strip_strings=False)
    text = strip_comments(raw, strip_strings=True)
    module = Module(path, file, text, (0, len(text)))
    modules[path] = module
    scan_module(module, kept_strings, child_dir, modules, include_tests)
    return module


def scan_module(module, kept_strings, child_dir, modules, include_tests):
    """Finds `module`'s child modules (recursing), its uses, paths and definitions."""
    text = module.text
    start, end = module.span
    cursor = start
    while True:
        m = MOD_DECLARATION.search(text, cursor, end)
        if not m:
            break
        cursor = m.end()
        attributes = kept_strings[m.start(1) : m.end(1)]
        name = m.group(4)
        is_test = re.search(r"#\[\s*cfg\s*\(\s*test\s*\)\s*\]", attributes) is not None
        if m.group(5) == "{":
            close = matching_brace(text, m.end(5) - 1)
            module.exclude.append((m.start(), close + 1))
            cursor = close + 1
            if is_test and not include_tests:
                continue
            child = Module(module.path + (name,), module.file, text, (m.end(5), close))
            modules[child.path] = child
            module.children[name] = child
            scan_module(child, kept_strings, os.path.join(child_dir, name), modules, include_tests)
            continue
        module.exclude.append((m.start(), m.end()))
        if is_test and not include_tests:
            continue
        explicit = re.search(r'#\[\s*path\s*=\s*"([^"]*)"\s*\]', attributes)
        if explicit:
            file = os.path.normpath(os.path.join(child_dir, explicit.group(1)))
            grandchildren = os.path.join(os.path.dirname(file), name)
        else:
            file = os.path.join(child_dir, name + ".rs")
            grandchildren = os.path.join(child_dir, name)
            if not os.path.exists(file):
                file = os.path.join(child_dir, name, "mod.rs")
        if not os.path.exists(file):
            print(f"module-graph: {module.file}: mod {name}; has no file ({file})", file=sys.stderr)
            continue
        if os.path.basename(file) == "mod.rs":
            grandchildren = os.path.dirname(file)
        child = load_file(module.path + (name,), file, grandchildren, modules, include_tests)
        module.children[name] = child
    offset, code = own_text(module)
    for m in ITEM_DEFINITION.finditer(code):
        module.defined.add(m.group(1))
    code_without_uses = list(code)
    for m in USE_STATEMENT.finditer(code):
        public = m.group(1) is not None
        for segments, alias in expand_use_tree(m.group(2)):
            module.uses.append((segments, public, alias, offset + m.start()))
        for k in range(m.start(), m.end()):
            if code_without_uses[k] != "\n":
                code_without_uses[k] = " "
    code_without_uses = "".join(code_without_uses)
    module.own_code = code_without_uses
    for m in PATH_IN_CODE.finditer(code_without_uses):
        segments = tuple(re.split(r"\s*::\s*", m.group(1).lstrip(":").strip()))
        module.code_paths.append((segments, offset + m.start()))


def expand_use_tree(tree):
    """`crate::a::{b, c::{self, D as E}}` -> [(('crate','a','b'), None), ...]."""
    tree = re.sub(r"\s+", " ", tree).strip()
    results = []

    def walk(prefix, text):
        text = text.strip()
        if not text:
            return
        brace = text.find("{")
        if brace < 0:
            alias = None
            m = re.match(r"(.*?)\s+as\s+(\w+)$", text)
            if m:
                text, alias = m.group(1), m.group(2)
            segments = tuple(s.strip() for s in text.split("::") if s.strip())
            results.append((prefix + segments, alias))
            return
        head = text[:brace].rstrip().rstrip(":").rstrip()
        inner = text[brace + 1 : text.rfind("}")]
        head_segments = tuple(s.strip() for s in head.split("::") if s.strip())
        for part in split_top_level(inner):
            walk(prefix + head_segments, part)

    walk((), tree.lstrip(":"))
    return results


def split_top_level(text):
    parts, depth, current = [], 0, []
    for c in text:
        if c == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += c == "{"
        depth -= c == "}"
        current.append(c)
    parts.append("".join(current))
    return [p for p in parts if p.strip()]


# --- Resolving paths to rooms ----------------------------------------------------------------


class Resolver:
    def __init__(self, modules):
        self.modules = modules
        self.reexports = defaultdict(dict)  # module path -> name -> absolute segments
        self.globs = defaultdict(list)  # module path -> [absolute module segments]
        for module in modules.values():
            for segments, public, alias, _ in module.uses:
                if not public:
                    continue
                absolute = self.absolute(module, segments)
                if absolute is None:
                    # Another crate's item (or module) under this module's name: no room here.
                    if segments[-1] != "*":
                        name = alias or (segments[-2] if segments[-1] == "self" else segments[-1])
                        self.reexports[module.path][name] = None
                    continue
                if segments[-1] == "*":
                    self.globs[module.path].append(absolute[:-1])
                else:
                    name = alias or (absolute[-2] if absolute[-1] == "self" else absolute[-1])
                    self.reexports[module.path][name] = absolute

    def absolute(self, module, segments):
        """The path from the crate root, or None when it leaves the crate (std, another crate)."""
        if not segments:
            return None
        first = segments[0]
        if first == "crate":
            return segments[1:]
        if first in ("self", "super"):
            base = list(module.path)
            rest = list(segments)
            while rest and rest[0] in ("self", "super"):
                if rest.pop(0) == "super":
                    if not base:
                        return None
                    base.pop()
            return tuple(base) + tuple(rest)
        if first in module.children:
            return module.path + tuple(segments)
        return None

    def room(self, absolute, seen=None):
        """The module that defines what `absolute` names (through re-exports), or None when it is
        another crate's item that this crate re-exports."""
        seen = set() if seen is None else seen
        module = self.modules[()]
        rest = list(absolute)
        while rest and rest[0] in module.children:
            module = module.children[rest.pop(0)]
        if not rest or rest[0] in ("self", "*"):
            return module.path
        name = rest[0]
        key = (module.path, name)
        if key in seen:
            return module.path
        seen.add(key)
        reexported = self.reexports[module.path]
        if name in reexported and name not in module.defined:
            target = reexported[name]
            return None if target is None else self.room(target, seen)
        if name not in module.defined:
            for glob in self.globs[module.path]:
                room = self.room(tuple(glob), seen)
                if name in self.modules[room].defined:
                    return room
        return module.path


def arrows_of(modules):
    """{(from, to): [(file, line), ...]} over every module of one tree."""
    resolver = Resolver(modules)
    arrows = defaultdict(list)
    for module in modules.values():
        wanted = []
        for segments, public, alias, offset in module.uses:
            absolute = resolver.absolute(module, segments)
            if absolute is None:
                continue
            if public:
                name = alias or (absolute[-2] if absolute[-1] == "self" and len(absolute) > 1 else absolute[-1])
                if name == "*" or not re.search(r"(?<![\w:])" + re.escape(name) + r"\b", module.own_code):
                    continue
            wanted.append((absolute, offset))
        for segments, offset in module.code_paths:
            absolute = resolver.absolute(module, segments)
            if absolute is not None:
                wanted.append((absolute, offset))
        for absolute, offset in wanted:
            target = resolver.room(absolute)
            place = (module.file, line_of(module.text, offset))
            if target is not None and target != module.path and place not in arrows[(module.path, target)]:
                arrows[(module.path, target)].append(place)
    return arrows


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


def floors(nodes, edges):
    """(highest floor, one deepest chain from the top): each step of the chain is the list of
    members of one component, a cycle's members sharing one floor."""
    components = strongly_connected(nodes, edges)
    component_of = {v: i for i, members in enumerate(components) for v in members}
    successors = defaultdict(set)
    for a, b in edges:
        if component_of[a] != component_of[b]:
            successors[component_of[a]].add(component_of[b])
    floor, below = {}, {}
    # Tarjan emits components in reverse topological order: what a component imports comes first.
    for i in range(len(components)):
        best = max(successors[i], key=lambda j: (floor[j], -j), default=None)
        floor[i] = 1 + (floor[best] if best is not None else 0)
        below[i] = best
    if not floor:
        return 0, []
    top = max(floor, key=lambda i: (floor[i], -i))
    chain, i = [], top
    while i is not None:
        chain.append(components[i])
        i = below[i]
    return floor[top], chain


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


# --- Report ----------------------------------------------------------------------------------


def name_of(path):
    return "::".join(path) if path else "crate"


def describe_tree(label, modules, arrows, root_dir, show_arrows):
    """Lines for one crate target, and whether it has a cycle."""
    nodes = list(modules)
    edges = list(arrows)
    cycles = [c for c in strongly_connected(nodes, edges) if len(c) > 1]
    back_up = [(a, b) for a, b in edges if len(b) < len(a) and a[: len(b)] == b]
    height, chain = floors(nodes, edges)
    lines = [
        f"{label}: {len(nodes)} rooms, {len(edges)} arrows, {len(cycles)} cycles, "
        f"{len(back_up)} arrows back up, {height} floors"
    ]
    if chain:
        lines.append("  deepest chain: " + chain_text(chain, name_of))
    for component in cycles:
        loop = shortest_loop(component, edges)
        lines.append(f"  cycle of {len(component)} rooms: " + ", ".join(name_of(p) for p in component))
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
    return lines, bool(cycles)


def chain_text(chain, name):
    """`a -> {b, c} -> d`: a step with several members is a cycle standing on one floor."""
    steps = [name(m[0]) if len(m) == 1 else "{" + ", ".join(map(name, m)) + "}" for m in chain]
    return " -> ".join(steps)


def main():
    parser = argparse.ArgumentParser(
        description="Module and crate import graphs of a Cargo workspace: rooms, arrows, cycles, "
        "arrows back up and floors (see the docstring). Exit 1 when any cycle exists.",
    )
    default_root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("root", nargs="?", default=default_root, help="workspace root (default: this checkout)")
    parser.add_argument("--crate", action="append", default=[], help="only this crate (repeatable)")
    parser.add_argument("--arrows", action="store_true", help="list every arrow with where it comes from")
    parser.add_argument("--tests", action="store_true", help="count #[cfg(test)] modules as rooms too")
    options = parser.parse_args()

    if not os.path.exists(os.path.join(options.root, "Cargo.toml")):
        print(f"module-graph: {options.root} has no Cargo.toml", file=sys.stderr)
        return 2
    crates = workspace_crates(options.root)
    names = {name for name, *_ in crates}
    unknown = [c for c in options.crate if c not in names]
    if unknown:
        print(f"module-graph: no crate {', '.join(unknown)} in {options.root}", file=sys.stderr)
        return 2

    any_cycle = False
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
            lines, cycle = describe_tree("  " + label, modules, arrows, options.root, options.arrows)
            any_cycle |= cycle
            print("\n".join(lines[:1] + ["  " + line for line in lines[1:]]))
            totals[0] += len(modules)
            totals[1] += len(arrows)
        if small:
            print(f"  {len(small)} binaries of one room each: {', '.join(small)}")
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
        height, chain = floors(names, crate_edges)
        print(
            f"workspace: {len(names)} crates, {len(crate_edges)} arrows between them "
            f"(+{len(dev_edges)} dev-dependencies), {len(cycles)} cycles, {height} floors"
        )
        print("  deepest chain: " + chain_text(chain, str))
        for component in cycles:
            any_cycle = True
            print("  cycle: " + " -> ".join(shortest_loop(component, crate_edges)))
        print(f"  modules: {totals[0]} rooms, {totals[1]} arrows")
    return 1 if any_cycle else 0


if __name__ == "__main__":
    sys.exit(main())
