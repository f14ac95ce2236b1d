# Shared by scripts/serve and scripts/test (sourced, not run): make sure ./.venv exists with
# Python >= 3.11 and holds qpviz installed in editable mode with the extras in $QPVIZ_EXTRAS.
# Re-runs are fast: pip runs again only when pyproject.toml changed since the last install.
# Usage: QPVIZ_EXTRAS="test" source scripts/_venv.sh   (run from the repository root)

# Relay a step's output (stdin) line by line; after 10 s without a line, print how long step "$1" has
# run, so that the console is never silent for long (pip prints nothing while it unpacks wheels).
heartbeat() {
    local label=$1 start=$SECONDS line status
    while true; do
        if IFS= read -r -t 10 line; then
            printf '%s\n' "$line"
        else
            status=$?
            if [ "$status" -le 128 ]; then  # the end of the output
                [ -z "$line" ] || printf '%s\n' "$line"
                return 0
            fi
            [ -z "$line" ] || printf '%s\n' "$line"  # a partial line so far
            printf '  ... %s (%d s)\n' "$label" $((SECONDS - start))
        fi
    done
}

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
        apt-get -o DPkg::Lock::Timeout=300 update -qq  # the lock: scripts/test may be installing Chromium meanwhile
        local minor
        minor=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "python${minor}-venv" ||
            DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq python3-venv
        "$python" -m venv .venv
    fi
}

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "qpviz: creating the virtual environment .venv (first run only) ..."
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
    echo "qpviz: installing qpviz and its dependencies into .venv (first run only; pip's progress follows) ..."
    # One resolver pass, pip's own lines shown as they come (unbuffered: pip's output is a pipe
    # here), wheels preferred to source builds. The venv's own pip is recent enough (editable
    # installs from pyproject.toml need pip >= 21.3): no separate pip upgrade. (pip compiles every
    # module's bytecode, a third of the install: --no-compile would leave that to each start where
    # PYTHONDONTWRITEBYTECODE is set, as on CI, which made a second start 4x slower.)
    PYTHONUNBUFFERED=1 .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off \
        --prefer-binary -e "$spec" 2>&1 | heartbeat "pip is still installing"
    printf '%s' "$want" >".venv/.qpviz-installed-$kind"
    just_installed=1
    echo "qpviz: installed"
fi

# numba caches written for other sources (an edit, a pull, an upgrade) are dropped here, in one
# explicit step, never by `import qpviz` (see qpviz/cache.py).
.venv/bin/python -m qpviz.cache check
# Right after a test install, compile every kernel the tests use, ahead of time (scripts/serve
# compiles only the first page's before it serves, and the rest in the background).
if [ -n "${just_installed:-}" ] && [ "$kind" = test ]; then
    .venv/bin/python -m qpviz.warmup --what all ||
        echo "qpviz: the kernel warm-up failed; kernels compile on first use" >&2
fi
