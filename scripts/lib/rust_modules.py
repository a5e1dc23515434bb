"""Reading a Rust crate's sources as text, for scripts/module-graph.py: its module tree (as rustc
finds it from `mod` declarations), the paths each module names, and the module each path lands in
(through re-exports). No cargo, no build: comments and string literals are blanked out first, so a
doc link or a message is never taken for an import.
"""

import os
import re
import sys
from collections import defaultdict


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
            # Relative to the file's own folder, or for a `mod` inside an inline module, to
            # the folder that module's files would be in (the Rust reference's rule).
            inline = module.span != (0, len(text))
            base = child_dir if inline else os.path.dirname(module.file)
            file = os.path.normpath(os.path.join(base, explicit.group(1)))
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
