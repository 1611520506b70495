#!/usr/bin/env bash
# The checks of a GPU host, one entry point. Each check is a script of its own in
# scripts/gpu-check/ (its header gives its usage, its results and its environment variables);
# this one runs it with the arguments and the environment given, unchanged, and exits with its
# status.
#
#   scripts/gpu-check.sh CHECK [ARGS...]            run CHECK
#   scripts/gpu-check.sh [help]                     the checks, one line each
#   scripts/gpu-check.sh help CHECK                 CHECK's header (also: CHECK --help)
#   scripts/gpu-check.sh all [DIST] [--end-to-end]  engines, serve and graph-serve, one after
#                                                   another, each into $OUT/CHECK (or
#                                                   ./gpu-results/CHECK); --end-to-end goes to engines
#
# Most checks take the portable build's folder, DIST (scripts/build-portable.sh; default
# dist/portable), copied to the GPU host; their results go to $OUT or a folder of their own in
# the current one. The checks that need more than DIST (a clip, a wheel, media) are left out of
# `all`: run them by name.
set -uo pipefail

checks_dir="$(dirname "${BASH_SOURCE[0]}")/gpu-check"
# In the order the help lists them.
checks=(engines serve graph-serve nvdec nvdec-snapshot nvdec-oversubscribe nvdec-admission nvdec-seats
    host-fill hiccup host-soak soak startup python)
all=(engines serve graph-serve)

known() { # CHECK: one of the checks, with its script in place
    local check
    for check in "${checks[@]}"; do
        [[ $1 == "$check" && -f $checks_dir/$check.sh ]] && return 0
    done
    return 1
}
# A check's line in the list: line 2 of its script, "# CHECK: what it checks".
summary() { sed -n "2s/^# $1: //p" "$checks_dir/$1.sh"; }
# A check's header: the comment lines from line 2 to the first line of code.
header() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$checks_dir/$1.sh"; }
usage() {
    echo "usage: $0 CHECK [ARGS...]   (help CHECK, or CHECK --help: its usage, results and environment)"
    echo
    local check
    for check in "${checks[@]}"; do
        printf '  %-20s %s\n' "$check" "$(summary "$check")"
    done
    printf '  %-20s %s\n' all "[DIST] [--end-to-end]: engines, serve and graph-serve, one after another"
}

run_all() { # [DIST] [--end-to-end]
    local dist=dist/portable base="${OUT:-gpu-results}" engines_args=() failed=() check arg status
    for arg in "$@"; do
        if [[ $arg == --end-to-end ]]; then engines_args+=("$arg"); else dist="$arg"; fi
    done
    for check in "${all[@]}"; do
        printf '\n##### %s\n' "$check"
        if [[ $check == engines ]]; then
            OUT="$base/$check" bash "$checks_dir/$check.sh" "$dist" "${engines_args[@]+"${engines_args[@]}"}"
        else
            OUT="$base/$check" bash "$checks_dir/$check.sh" "$dist"
        fi
        status=$?
        ((status == 0)) || failed+=("$check (exit $status)")
    done
    printf '\n##### all: %s checks, failed: %s\n' "${#all[@]}" "${failed[*]:-none}"
    ((${#failed[@]} == 0))
}

case "${1:-help}" in
    help | -h | --help)
        if [[ -z ${2:-} ]]; then
            usage
        elif [[ $2 == all ]]; then
            sed -n '/^#   scripts\/gpu-check.sh all/,/^#$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        elif known "$2"; then
            header "$2"
        else
            echo "no check $2" >&2
            usage >&2
            exit 2
        fi
        ;;
    all)
        shift
        run_all "$@"
        ;;
    *)
        check="$1"
        shift
        if ! known "$check"; then
            echo "no check $check" >&2
            usage >&2
            exit 2
        fi
        if [[ $# == 1 && ($1 == --help || $1 == -h) ]]; then
            header "$check"
            exit 0
        fi
        # What the script's own #!/usr/bin/env bash line runs: $0 stays the path given here.
        exec bash "$checks_dir/$check.sh" "$@"
        ;;
esac
