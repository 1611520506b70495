#!/usr/bin/env bash
# Checks one config sharded over several replicas for real: the pods of
# deploy/k8s/statefulset/ played with Podman, scraped by a real Prometheus.
#
# Usage: scripts/shards-check.sh        (after scripts/image-check.sh, whose image it runs)
#
#   1. Renders the StatefulSet's pod template (deploy/k8s/statefulset/statefulset.yaml) into one
#      Pod per replica, as the StatefulSet controller would: hostname convstream-N, the output
#      claim output-convstream-N, CONVSTREAM_SHARDS as the manifest sets it. For a host without
#      a GPU or a cluster: the image built by image-check.sh, no nvidia.com/gpu limit, the API
#      published on a free loopback port per pod, and a ConfigMap of the same name whose
#      pipelines loop a generated clip into `null` on the CPU engine (shard = "auto", as the
#      manifest's). Every pod's file holds the same ConfigMap.
#   2. Plays the pods (podman kube play) and waits until each is ready; each must say which
#      shard it is (GET /pipelines) and run exactly what `convstream check --shards N` assigns
#      it; a request to one pod about another's pipeline gets 421 naming the owner.
#   3. Runs Debian's prometheus scraping the pods every 2 s and asks it (PromQL over
#      /api/v1/query) that every configured pipeline runs exactly once across the replicas:
#        count by (pipeline) (convstream_pipeline_state{state="running"} == 1)
#   4. Stops one pod (podman kube down): its pipelines, and only those, leave the query's
#      answer. Plays it again: they come back, each once. The other pods never restarted: same
#      process start time (process_start_time_seconds), same container start, no counter reset
#      (resets() of their frame counters is 0) and no pipeline restart.
#   5. Prints one line per check (ok / FAIL), the query's JSON answers, and exits non-zero if
#      any check failed. A check it cannot run (a tool missing, no image) is a failure, never a
#      skip.
#
# Needs root (or sudo), podman, runc, prometheus, curl, jq, ffmpeg and python3 with PyYAML;
# .ci/run installs them. Containers run with runc and cgroupfs, as image-check.sh's do.
#
# Environment:
#   IMAGE   the image to run (default localhost/convstream:local, what image-check.sh builds)
#   KEEP    1: leave the pods, Prometheus and the work folder for a look afterwards
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The tally (ok, fail, log, cannot; summary is below), as_root, podman_, the containers' limits.
source scripts/podman-env.sh

image="${IMAGE:-localhost/convstream:local}"
manifest=deploy/k8s/statefulset/statefulset.yaml
# Pod names of this check (their hostnames are the StatefulSet's convstream-N): distinct from
# what image-check.sh plays, so neither removes the other's.
pod_prefix=shards-check
scrape_interval=2

summary() {
    log "shards-check summary ($((SECONDS - started)) s)"
    local line
    for line in "${results[@]}"; do echo "$line"; done
    echo "not covered: GPUs (the CPU engine ran), a Kubernetes scheduler (anti-affinity, the"
    echo "             disruption budget and rescheduling to another node are the cluster's)"
    if ((failed)); then
        echo "shards-check: FAIL, $failed check(s) failed"
    else
        echo "shards-check: PASS, every check passed"
    fi
}

work="$(mktemp -d "${TMPDIR:-/tmp}/convstream-shards-check.XXXXXX")"
chmod 755 "$work"
prometheus_pid=""
replicas=0
kube_() { podman_kube "$work" "$@"; }
cleanup() {
    if [[ ${KEEP:-0} == 1 ]]; then
        echo "kept: $work, the pods $pod_prefix-convstream-*, Prometheus (pid ${prometheus_pid:-none})"
        return
    fi
    # Each step may find nothing to remove: none of them may end the script's own exit code.
    if [[ -n $prometheus_pid ]]; then
        kill "$prometheus_pid" 2>/dev/null || true
        wait "$prometheus_pid" 2>/dev/null || true
    fi
    local index
    for ((index = 0; index < replicas; index++)); do
        if [[ -f $work/pod-$index.yaml ]]; then
            kube_ down "pod-$index.yaml" >/dev/null 2>&1 || true
        fi
        podman_ volume rm -f "output-convstream-$index" >/dev/null 2>&1 || true
    done
    as_root rm -rf "$work" || true
}
trap cleanup EXIT

# ---------------------------------------------------------------------------------------------
log "tools and image"
missing=()
for tool in podman runc prometheus curl jq ffmpeg python3; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
python3 -c 'import yaml' 2>/dev/null || missing+=("python3-yaml")
((${#missing[@]} == 0)) || cannot "tools: ${missing[*]} not installed (apt-get install podman runc prometheus curl jq ffmpeg python3-yaml)"
[[ $(id -u) -eq 0 ]] || command -v sudo >/dev/null || cannot "tools: needs root or sudo (podman runs rootful)"
podman_ image exists "$image" || cannot "image: $image not found; scripts/image-check.sh builds it"
ok "tools: $(podman --version), $(prometheus --version 2>&1 | head -n 1 | cut -d' ' -f1-3); image $image"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ---------------------------------------------------------------------------------------------
log "the pods of $manifest, with a test config"
mkdir -p "$work/in"
ffmpeg -hide_banner -loglevel error -f lavfi -i testsrc=size=160x120:rate=10 -t 4 -c:v mpeg4 -q:v 5 \
    "$work/in/clip.mp4" || cannot "input: ffmpeg could not make the test clip"
chmod 755 "$work/in"
chmod 644 "$work/in/clip.mp4"

pipelines=(lobby gate dock-east dock-west parking roof hall yard stairs)
{
    cat <<'EOF'
[server]
listen = "0.0.0.0:8686"
insecure_no_token = true
# Prometheus and this script reach the pods through ports published on the host's loopback.
allowed_hosts = ["127.0.0.1"]
shutdown_timeout = 10.0
watch = true
shard = "auto"

[log]
level = "info"
format = "json"
EOF
    for name in "${pipelines[@]}"; do
        cat <<EOF

[[pipeline]]
name = "$name"
[pipeline.source]
url = "/data/in/clip.mp4"
loop = true
realtime = true
[pipeline.filter]
mask = "gaussian:size=5"
planes = "luma"
device = "cpu"
[pipeline.sink]
url = "null"
EOF
    done
} >"$work/config.toml"

# The StatefulSet's replicas, and one free loopback port per replica for its API.
replicas=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["spec"]["replicas"])' "$manifest") \
    || cannot "manifest: cannot read spec.replicas from $manifest"
((replicas >= 2)) || cannot "manifest: $manifest has $replicas replica(s); the check needs at least 2"
ports=()
for ((index = 0; index < replicas; index++)); do ports+=("$(free_port)"); done

python3 - "$manifest" "$work" "$image" "$pod_prefix" "${ports[@]}" <<'EOF' || cannot "manifest: rendering the pods from $manifest failed"
import copy, sys, yaml
manifest, work, image, prefix, *ports = sys.argv[1:]
sts = yaml.safe_load(open(manifest))
template = sts["spec"]["template"]
name = sts["metadata"]["name"]
configmap = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": next(v["configMap"]["name"] for v in template["spec"]["volumes"] if "configMap" in v)},
    "data": {"config.toml": open(f"{work}/config.toml").read()},
}
for index, port in enumerate(ports):
    pod_name = f"{name}-{index}"
    spec = copy.deepcopy(template["spec"])
    # What the StatefulSet controller does: the pod's name as its hostname, the claim of each
    # volumeClaimTemplate as <template>-<pod>.
    spec["hostname"] = pod_name
    for claim in sts["spec"].get("volumeClaimTemplates", []):
        spec["volumes"].append({"name": claim["metadata"]["name"],
                                "persistentVolumeClaim": {"claimName": f"{claim['metadata']['name']}-{pod_name}"}})
    # No scheduler and no GPU here.
    spec.pop("affinity", None)
    spec.pop("tolerations", None)
    spec["volumes"].append({"name": "input", "hostPath": {"path": f"{work}/in", "type": "Directory"}})
    for container in spec["containers"]:
        if container["name"] != "convstream":
            continue
        container["image"] = image
        container["resources"]["limits"].pop("nvidia.com/gpu", None)
        container["resources"]["requests"] = {"cpu": "100m", "memory": "256Mi"}
        container["volumeMounts"].append({"name": "input", "mountPath": "/data/in", "readOnly": True})
        for port_spec in container["ports"]:
            if port_spec["name"] == "http":
                port_spec["hostPort"] = int(port)
                port_spec["hostIP"] = "127.0.0.1"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{prefix}-{pod_name}", "labels": template["metadata"]["labels"],
                     "annotations": template["metadata"].get("annotations", {})},
        "spec": spec,
    }
    with open(f"{work}/pod-{index}.yaml", "w") as out:
        yaml.safe_dump_all([configmap, pod], out, sort_keys=False)
EOF
write_containers_conf "$work"
shards_env=$(python3 -c 'import sys, yaml; c = yaml.safe_load(open(sys.argv[1]))["spec"]["template"]["spec"]["containers"][0]; print(next(e["value"] for e in c["env"] if e["name"] == "CONVSTREAM_SHARDS"))' "$manifest" 2>/dev/null || true)
if [[ $shards_env == "$replicas" ]]; then
    ok "manifest: $replicas replicas, CONVSTREAM_SHARDS=$shards_env; pods rendered with hostnames convstream-0..$((replicas - 1)), API on 127.0.0.1:${ports[*]}"
else
    fail "manifest: CONVSTREAM_SHARDS=${shards_env:-unset} but $replicas replicas"
fi

# The assignment as `convstream check` prints it (in the image), to hold the pods to.
podman_ run --rm "${podman_ulimits[@]}" -v "$work/config.toml:/etc/convstream/config.toml:ro" --entrypoint convstream "$image" \
    check --config /etc/convstream/config.toml --shards "$replicas" >"$work/check.txt" 2>&1 \
    || { cat "$work/check.txt"; cannot "check: convstream check --shards $replicas failed"; }
declare -A expected
for ((index = 0; index < replicas; index++)); do
    expected[$index]=$(sed -n "s|^  shard $index/$replicas: [0-9]* pipeline(s): ||p" "$work/check.txt" | tr -d ' ' | tr ',' '\n' | grep -v '^-$' | sort | paste -sd, -)
done
ok "check --shards $replicas: $(for i in "${!expected[@]}"; do printf 'shard %s: %s; ' "$i" "${expected[$i]:-none}"; done)"

api() { # INDEX PATH [curl args...]
    local index=$1 path=$2
    shift 2
    curl -sS -m 5 "$@" "http://127.0.0.1:${ports[$index]}$path" 2>/dev/null || true
}

wait_ready() { # INDEX: waits up to 90 s for /readyz
    local index=$1
    for _ in $(seq 1 180); do
        [[ $(api "$index" /readyz | jq -r '.ready' 2>/dev/null) == true ]] && return 0
        sleep 0.5
    done
    return 1
}

# The running pipelines of a pod, sorted, comma-separated.
running_at() {
    api "$1" /pipelines | jq -r '[.pipelines[] | select(.state == "running") | .name] | sort | join(",")' 2>/dev/null
}

play() { # INDEX
    kube_ play "pod-$1.yaml" >"$work/play-$1.log" 2>&1
}

container_of() { echo "$pod_prefix-convstream-$1-convstream"; }

log "podman kube play: $replicas pods from the same ConfigMap"
for ((index = 0; index < replicas; index++)); do
    play "$index" || { cat "$work/play-$index.log"; cannot "play: podman kube play pod-$index.yaml failed"; }
done
for ((index = 0; index < replicas; index++)); do
    if wait_ready "$index"; then
        shard=$(api "$index" /pipelines | jq -c '.shard | {index, count, pod}' 2>/dev/null)
        hostname=$(podman_ exec "$(container_of "$index")" cat /proc/sys/kernel/hostname 2>/dev/null || true)
        runs=""
        for _ in $(seq 1 20); do
            runs=$(running_at "$index")
            [[ $runs == "${expected[$index]}" ]] && break
            sleep 0.5
        done
        if [[ $shard == "{\"index\":$index,\"count\":$replicas,\"pod\":\"convstream-$index\"}" && $runs == "${expected[$index]}" ]]; then
            ok "pod convstream-$index (hostname $hostname): ready, $shard, runs ${runs:-nothing} as check assigns"
        else
            podman_ logs "$(container_of "$index")" 2>&1 | tail -n 10
            fail "pod convstream-$index (hostname ${hostname:-?}): shard ${shard:-unknown}, runs \"$runs\", check assigns \"${expected[$index]}\""
        fi
    else
        podman_ logs "$(container_of "$index")" 2>&1 | tail -n 20
        fail "pod convstream-$index: not ready within 90 s"
    fi
done

# A request to pod 0 about a pipeline another pod runs: 421 naming that pod.
for name in "${pipelines[@]}"; do
    owner=""
    for ((index = 1; index < replicas; index++)); do
        [[ ,${expected[$index]}, == *",$name,"* ]] && owner=$index
    done
    [[ -n $owner ]] || continue
    status=$(api 0 "/pipelines/$name" -o "$work/421.json" -w '%{http_code}')
    if [[ $status == 421 ]] && jq -e --arg pod "convstream-$owner" '.owner.pod == $pod' "$work/421.json" >/dev/null 2>&1; then
        ok "421: pod convstream-0 about \"$name\": $(jq -r .error "$work/421.json")"
    else
        fail "421: pod convstream-0 about \"$name\" (owned by convstream-$owner) answered $status: $(cat "$work/421.json" 2>/dev/null)"
    fi
    break
done

# ---------------------------------------------------------------------------------------------
log "prometheus scraping the pods every ${scrape_interval} s"
prom_port=$(free_port)
{
    printf 'global:\n  scrape_interval: %ss\n  scrape_timeout: %ss\nscrape_configs:\n  - job_name: convstream\n    static_configs:\n' \
        "$scrape_interval" "$scrape_interval"
    for ((index = 0; index < replicas; index++)); do
        printf '      - targets: ["127.0.0.1:%s"]\n        labels: { pod: convstream-%s }\n' "${ports[$index]}" "$index"
    done
} >"$work/prometheus.yml"
promtool check config "$work/prometheus.yml" >"$work/promtool.log" 2>&1 \
    || { cat "$work/promtool.log"; cannot "prometheus: promtool check config refused the scrape config"; }
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prometheus-data" \
    --web.listen-address="127.0.0.1:$prom_port" --log.level=warn >"$work/prometheus.log" 2>&1 &
prometheus_pid=$!

promql() { # QUERY: the JSON answer of /api/v1/query
    curl -sS -m 10 --data-urlencode "query=$1" "http://127.0.0.1:$prom_port/api/v1/query" 2>/dev/null || true
}

# The query this check is about: each configured pipeline that runs, with the number of
# replicas running it. Exactly once means every value is 1.
once_query='count by (pipeline) (convstream_pipeline_state{state="running"} == 1)'
once() { # the answer as "name=count,..." sorted
    promql "$once_query" | jq -r '[.data.result[] | "\(.metric.pipeline)=\(.value[1])"] | sort | join(",")' 2>/dev/null
}
every_once=$(printf '%s=1\n' "${pipelines[@]}" | sort | paste -sd, -)
# Waits up to SECONDS for once() to equal WANTED; prints what it last saw.
wait_once() {
    local wanted=$1 seconds=$2 seen=""
    for _ in $(seq 1 $((seconds * 2))); do
        seen=$(once)
        [[ $seen == "$wanted" ]] && break
        sleep 0.5
    done
    echo "$seen"
}

up=""
for _ in $(seq 1 60); do
    up=$(promql 'sum(up{job="convstream"})' | jq -r '.data.result[0].value[1] // empty' 2>/dev/null)
    [[ $up == "$replicas" ]] && break
    sleep 0.5
done
if [[ $up == "$replicas" ]]; then
    ok "prometheus: $(prometheus --version 2>&1 | head -n 1), all $replicas targets up"
else
    cat "$work/prometheus.log"
    cannot "prometheus: ${up:-no} of $replicas targets up after 30 s"
fi

seen=$(wait_once "$every_once" 30)
# The answers as Prometheus gives them (/api/v1/query), for the record.
echo "PromQL: $once_query"
promql "$once_query" | jq -c '.data.result |= sort_by(.metric.pipeline)'
where='max by (pipeline, pod, shard) (convstream_pipeline_state{state="running"} == 1)'
echo "PromQL: $where"
promql "$where" | jq -r '.data.result | sort_by(.metric.pipeline)[] | "  \(.metric.pipeline) on \(.metric.pod) (shard \(.metric.shard))"'
if [[ $seen == "$every_once" ]]; then
    ok "every pipeline once: all ${#pipelines[@]} configured pipelines run on exactly one replica ($seen)"
else
    fail "every pipeline once: expected $every_once, Prometheus says $seen"
fi
by_pod=$(promql 'sum by (pod, shard) (convstream_shard_pipelines)' \
    | jq -r '[.data.result[] | "\(.metric.pod) (shard \(.metric.shard)): \(.value[1])"] | sort | join(", ")' 2>/dev/null)
total=$(promql 'sum(convstream_shard_pipelines)' | jq -r '.data.result[0].value[1] // empty' 2>/dev/null)
if [[ $total == "${#pipelines[@]}" ]]; then
    ok "sum(convstream_shard_pipelines) = $total: $by_pod"
else
    fail "sum(convstream_shard_pipelines) = ${total:-nothing}, expected ${#pipelines[@]}: $by_pod"
fi

# ---------------------------------------------------------------------------------------------
stopped=$((replicas / 2))
log "stopping pod convstream-$stopped, then playing it again"
# What must not change on the others: their process start, their container's start.
declare -A process_start container_start
others=()
for ((index = 0; index < replicas; index++)); do
    ((index == stopped)) && continue
    others+=("$index")
    process_start[$index]=$(promql "process_start_time_seconds{pod=\"convstream-$index\"}" | jq -r '.data.result[0].value[1] // empty')
    container_start[$index]=$(podman_ inspect -f '{{.State.StartedAt}}' "$(container_of "$index")" 2>/dev/null || true)
done
others_regex="convstream-($(IFS='|'; echo "${others[*]}"))"

grace=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["spec"]["template"]["spec"]["terminationGracePeriodSeconds"])' "$manifest")
podman_ pod stop -t "$grace" "$pod_prefix-convstream-$stopped" >/dev/null 2>&1 || true
podman_ logs "$(container_of "$stopped")" >"$work/stopped.log" 2>&1 || true
kube_ down "pod-$stopped.yaml" >"$work/down.log" 2>&1 || true
if grep -q 'every pipeline stopped; outputs finalised' "$work/stopped.log"; then
    ok "stop: pod convstream-$stopped drained (\"every pipeline stopped; outputs finalised\") and was taken down"
else
    tail -n 5 "$work/stopped.log"
    fail "stop: pod convstream-$stopped did not log a drained stop"
fi
without=$(for name in "${pipelines[@]}"; do [[ ,${expected[$stopped]}, == *",$name,"* ]] || echo "$name=1"; done | sort | paste -sd, -)
seen=$(wait_once "$without" 30)
echo "PromQL with convstream-$stopped down: $(promql "$once_query" | jq -c '[.data.result[] | {pipeline: .metric.pipeline, replicas_running: .value[1]}] | sort_by(.pipeline)')"
if [[ $seen == "$without" ]]; then
    ok "pod down: its pipelines (${expected[$stopped]:-none}) are gone, the others still run once each"
else
    fail "pod down: expected $without, Prometheus says $seen"
fi

play "$stopped" || { cat "$work/play-$stopped.log"; fail "replay: podman kube play pod-$stopped.yaml failed"; }
if wait_ready "$stopped"; then
    ok "replay: pod convstream-$stopped ready again, runs $(running_at "$stopped")"
else
    podman_ logs "$(container_of "$stopped")" 2>&1 | tail -n 20
    fail "replay: pod convstream-$stopped not ready within 90 s"
fi
seen=$(wait_once "$every_once" 30)
final=$(promql "$once_query")
echo "PromQL after the replay: $once_query"
jq -c '.data.result |= sort_by(.metric.pipeline)' <<<"$final"
if [[ $seen == "$every_once" ]]; then
    ok "replay: every pipeline runs once again ($seen)"
else
    fail "replay: expected $every_once, Prometheus says $seen"
fi

# The others went on untouched the whole time.
for index in "${others[@]}"; do
    now_process=$(promql "process_start_time_seconds{pod=\"convstream-$index\"}" | jq -r '.data.result[0].value[1] // empty')
    now_container=$(podman_ inspect -f '{{.State.StartedAt}}' "$(container_of "$index")" 2>/dev/null || true)
    if [[ -n ${process_start[$index]} && $now_process == "${process_start[$index]}" && $now_container == "${container_start[$index]}" ]]; then
        ok "untouched: convstream-$index kept its process (started $now_process) and container"
    else
        fail "untouched: convstream-$index process start ${process_start[$index]:-?} -> ${now_process:-?}, container ${container_start[$index]:-?} -> ${now_container:-?}"
    fi
done
# The whole run (Prometheus has nothing older).
window="$((SECONDS - started + 60))s"
resets=$(promql "sum(resets(convstream_frames_decoded_total{pod=~\"$others_regex\"}[$window])) + sum(convstream_pipeline_restarts_total{pod=~\"$others_regex\"})" \
    | jq -r '.data.result[0].value[1] // empty')
if [[ $resets == 0 ]]; then
    ok "untouched: no pipeline of ${others[*]/#/convstream-} restarted (frame counters never reset during the run, pipeline restarts 0)"
else
    fail "untouched: counter resets plus pipeline restarts on the other pods: ${resets:-no answer}"
fi

summary
exit $((failed > 0))
