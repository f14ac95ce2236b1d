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

# pip's own setting $1 (global.index-url, ...: pip.conf, PIP_* variables), empty when unset.
pip_setting() {
    local name=$1 variable
    variable="PIP_$(printf '%s' "$name" | tr 'a-z-' 'A-Z_')"
    if [ -n "${!variable:-}" ]; then
        printf '%s\n' "${!variable}"
    else
        .venv/bin/python -m pip config get "global.$name" 2>/dev/null || true
    fi
}

# Install "$1" (".[test]" ...) editable into .venv with uv, honouring pip's configuration (its
# indexes, find-links and constraints, which uv does not read), choosing among the indexes as pip does
# (the newest release wherever it is); bytecode compiled, as pip does: without it every process
# compiles what it imports where PYTHONDONTWRITEBYTECODE is set, as on CI (a second start 4x slower).
install_with_uv() {
    local spec=$1 url
    local args=(--python .venv/bin/python --compile-bytecode --index-strategy unsafe-best-match)
    .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off -q uv || return 1
    url=$(pip_setting index-url)
    [ -z "$url" ] || args+=(--index-url "$url")
    for url in $(pip_setting extra-index-url); do args+=(--extra-index-url "$url"); done
    for url in $(pip_setting find-links); do args+=(--find-links "$url"); done
    for url in $(pip_setting constraint); do args+=(--constraint "$url"); done
    .venv/bin/python -m uv pip install "${args[@]}" -e "$spec"
}

# One stamp per install kind, holding the pyproject.toml it was made from. The test install
# (qpviz[test]) also satisfies the runtime one, so serve after test does not reinstall.
want="$(cat pyproject.toml)"
kind="${QPVIZ_EXTRAS:-runtime}"
installed() { [ -f ".venv/.qpviz-installed-$1" ] && [ "$(cat ".venv/.qpviz-installed-$1")" = "$want" ]; }
if ! installed "$kind" && ! { [ "$kind" = runtime ] && installed test; }; then
    spec="."
    [ -z "${QPVIZ_EXTRAS:-}" ] || spec=".[${QPVIZ_EXTRAS}]"
    echo "qpviz: installing qpviz and its dependencies into .venv (first run only; the installer's progress follows) ..."
    # uv (put into the venv by pip) installs the 77 packages of the test install, bytecode compiled, in
    # ~20 s where pip took ~50 s (its unpacking and compiling run one file at a time); pip installs
    # them where uv cannot.
    if ! install_with_uv "$spec" 2>&1 | heartbeat "uv is still installing"; then
        echo "qpviz: uv could not install; pip installs instead (slower) ..."
        # One resolver pass, pip's own lines shown as they come (unbuffered: pip's output is a pipe
        # here), wheels preferred to source builds. The venv's own pip is recent enough (editable
        # installs from pyproject.toml need pip >= 21.3): no separate pip upgrade.
        PYTHONUNBUFFERED=1 .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off \
            --prefer-binary -e "$spec" 2>&1 | heartbeat "pip is still installing"
    fi
    printf '%s' "$want" >".venv/.qpviz-installed-$kind"
    just_installed=1
    echo "qpviz: installed"
fi

# numba caches written for other sources (an edit, a pull, an upgrade) are dropped here, in one
# explicit step, never by `import qpviz` (see qpviz/cache.py).
.venv/bin/python -m qpviz.cache check
# Right after a test install, compile every kernel the tests use, ahead of time (scripts/serve
# compiles only the first page's before it serves, and the rest in the background), in two processes
# where there are two cores: the machine is the tests' (the load average pip's install leaves, with
# Chromium's install beside it, made the warm-up's own default one process: 51 s instead of 28 s).
if [ -n "${just_installed:-}" ] && [ "$kind" = test ]; then
    warmup_jobs=1
    [ "$(nproc 2>/dev/null || echo 1)" -lt 2 ] || warmup_jobs=2
    .venv/bin/python -m qpviz.warmup --what all --jobs "$warmup_jobs" ||
        echo "qpviz: the kernel warm-up failed; kernels compile on first use" >&2
fi
