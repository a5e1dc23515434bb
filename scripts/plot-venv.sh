# Sourced by scripts/plot and scripts/plot-tests.sh: ensure_matplotlib makes the virtual
# environment $VENV (.cache/plot-venv, git-ignored) with matplotlib from PyPI the first time;
# python3-venv is installed with apt-get if the machine lacks it (Debian splits it out).
VENV=${VENV:-.cache/plot-venv}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

ensure_matplotlib() {
    "$VENV/bin/python" -c 'import matplotlib' 2>/dev/null && return
    echo "plot: making $VENV with matplotlib (once)" >&2
    rm -rf "$VENV"
    if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
        echo "plot: installing python3-venv (apt-get)" >&2
        rm -rf "$VENV"
        { as_root apt-get update -q && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends python3-venv; } >/dev/null ||
            { echo "plot: cannot install python3-venv; install it, or matplotlib for python3, by hand" >&2; exit 2; }
        python3 -m venv "$VENV" || { echo "plot: python3 -m venv failed" >&2; exit 2; }
    fi
    "$VENV/bin/pip" install -q matplotlib || { echo "plot: pip install matplotlib failed (no network?)" >&2; exit 2; }
}
