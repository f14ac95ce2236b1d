# Shared by scripts/serve and scripts/test (sourced, not run): make sure ./.venv exists with
# Python >= 3.11 and holds qpviz installed in editable mode with the extras in $QPVIZ_EXTRAS.
# Re-runs are fast: pip runs again only when pyproject.toml changed since the last install.
# Usage: QPVIZ_EXTRAS="test" source scripts/_venv.sh   (run from the repository root)

find_python() {
    local candidate
    for candidate in "${PYTHON:-}" python3.11 python3.12 python3.13 python3; do
        [ -n "$candidate" ] || continue
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    echo "error: qpviz needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
    return 1
}

make_venv() {
    local python
    python=$(find_python)
    if ! "$python" -m venv .venv 2>/dev/null; then
        # Debian's own Python ships venv/ensurepip separately.
        echo "python -m venv failed; installing Debian's venv package" >&2
        rm -rf .venv
        apt-get update -qq
        local minor
        minor=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "python${minor}-venv" ||
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
        "$python" -m venv .venv
    fi
}

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    rm -rf .venv
    make_venv
fi

# One stamp per install kind, holding the pyproject.toml it was made from. The test install
# (qpviz[test]) also satisfies the runtime one, so serve after test does not reinstall.
want="$(cat pyproject.toml)"
kind="${QPVIZ_EXTRAS:-runtime}"
installed() { [ -f ".venv/.qpviz-installed-$1" ] && [ "$(cat ".venv/.qpviz-installed-$1")" = "$want" ]; }
if ! installed "$kind" && ! { [ "$kind" = runtime ] && installed test; }; then
    spec="."
    [ -z "${QPVIZ_EXTRAS:-}" ] || spec=".[${QPVIZ_EXTRAS}]"
    .venv/bin/python -m pip install --disable-pip-version-check -q --upgrade pip
    .venv/bin/python -m pip install --disable-pip-version-check -q -e "$spec"
    printf '%s' "$want" >".venv/.qpviz-installed-$kind"
    just_installed=1
fi

# numba caches written for other sources (an edit, a pull, an upgrade) are dropped here, in one
# explicit step, never by `import qpviz` (see qpviz/cache.py).
.venv/bin/python -m qpviz.cache check
# Right after an install, compile every kernel the app and the fits use, ahead of time (the
# first page and the first fit then load them from numba's cache).
if [ -n "${just_installed:-}" ]; then
    .venv/bin/python -m qpviz.warmup --what all ||
        echo "qpviz: the kernel warm-up failed; kernels compile on first use" >&2
fi
