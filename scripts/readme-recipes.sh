#!/usr/bin/env bash
# Runs every recipe of README.md (each ```sh block after a `<!-- recipe -->` line) against the
# committed example files, as a user would paste it, and checks that each ends with exit 0 and
# writes nothing into the checkout: the recipes run in a scratch folder whose results/ and
# scripts/ are links to the checkout's (and .cache/, for the plot environment).
#   scripts/readme-recipes.sh [BIN_DIR]     # BIN_DIR holds gdrperf [default: target/release]
# Ends with "N passed, N failed"; exit 1 if a recipe failed, 2 if none was found or gdrperf is
# missing.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
bin=$(cd "${1:-target/release}" 2>/dev/null && pwd) || { echo "readme-recipes.sh: no folder ${1:-target/release}" >&2; exit 2; }
[ -x "$bin/gdrperf" ] || { echo "readme-recipes.sh: $bin/gdrperf not built" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
ln -s "$root/results" "$scratch/results"
ln -s "$root/scripts" "$scratch/scripts"
mkdir -p "$root/.cache"
ln -s "$root/.cache" "$scratch/.cache"

# The recipe blocks, one file each.
count=$(awk -v dir="$scratch" '
    /^<!-- recipe -->$/ { armed = 1; next }
    armed && /^```sh$/ { n++; inside = 1; armed = 0; file = sprintf("%s/recipe-%d.sh", dir, n); next }
    inside && /^```$/ { inside = 0; close(file); next }
    inside { print > file }
    END { print n + 0 }' README.md)
[ "$count" -gt 0 ] || { echo "readme-recipes.sh: no recipe in README.md" >&2; exit 2; }
before=$(git status --porcelain)
passed=0; failed=0
for number in $(seq 1 "$count"); do
    recipe="$scratch/recipe-$number.sh"
    first=$(grep -m1 -v '^E=' "$recipe")
    (cd "$scratch" && PATH="$bin:$PATH" bash -euo pipefail "$recipe") >"$scratch/log-$number" 2>&1
    status=$?
    if [ $status = 0 ]; then
        passed=$((passed + 1)); echo "ok   - recipe $number: $first"
    else
        failed=$((failed + 1)); echo "FAIL - recipe $number (exit $status): $first"; tail -5 "$scratch/log-$number" | sed 's/^/       /'
    fi
done
if [ "$(git status --porcelain)" != "$before" ]; then
    failed=$((failed + 1)); echo "FAIL - the recipes changed the checkout:"; git status --porcelain
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
