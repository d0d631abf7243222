#!/usr/bin/env bash
# Starts a real Kubernetes control plane on loopback for Clearhouse's tests and for the
# walkthrough in docs/kubernetes.md: etcd (Debian's etcd-server), kube-apiserver,
# kube-controller-manager and kube-scheduler at v1.37.2 (built from tools/kube), and kwok
# running fake nodes whose pods become Running. Then it prints
#   export CLEARHOUSE_TEST_KUBECONFIG=$STATE/kubeconfig
#
# Idempotent: what already runs is left running, what is missing is started, and a second
# run prints the same export line. scripts/kube-down.sh stops everything and removes the
# state. Usage: scripts/kube-up.sh [--no-kueue]
#
#   CLEARHOUSE_KUBE_STATE  state dir: certificates, etcd's data, logs, pids, kubeconfig
#                          (default /tmp/clearhouse-kube)
#   KUBE_BIN               the binaries (default: scripts/kube-build.sh's cache dir)
#   KUBE_NODES             number of fake nodes (default 4; each 32 cpu, 128Gi, 4 GPUs)
#   KUBE_APISERVER_PORT    default 6443; KUBE_ETCD_PORT default 23790 (peer: +10);
#   KUBE_CONTROLLER_MANAGER_PORT 10257, KUBE_SCHEDULER_PORT 10259, KUBE_KWOK_PORT 10247
#   KUBE_KUEUE_WEBHOOK_PORT 10263, KUBE_KUEUE_HEALTH_PORT 10264 (Kueue's controller)
#   KUEUE_BIN              Kueue's controller (default: scripts/kueue-build.sh's cache dir)
#   --no-kueue             no Kueue: neither its CRDs nor its controller
#
# Kueue (sigs.k8s.io/kueue v0.17.0): its CRDs, its controller (cmd/kueue, built from
# tools/kueue) and its webhooks for Jobs and Kueue's own objects, registered with a url:
# client config on 127.0.0.1. Kueue v0.17.0 reads its metrics certificate from the
# hard-coded /etc/kueue/metrics/certs; a self-signed one is made there when missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kueue=1
for arg in "$@"; do
  case "$arg" in
    --no-kueue) kueue=0 ;;
    --kueue) kueue=1 ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "kube-up: unknown argument $arg" >&2; exit 2 ;;
  esac
done

state="${CLEARHOUSE_KUBE_STATE:-/tmp/clearhouse-kube}"
nodes="${KUBE_NODES:-4}"
api_port="${KUBE_APISERVER_PORT:-6443}"
etcd_port="${KUBE_ETCD_PORT:-23790}"
etcd_peer_port=$((etcd_port + 10))
kcm_port="${KUBE_CONTROLLER_MANAGER_PORT:-10257}"
sched_port="${KUBE_SCHEDULER_PORT:-10259}"
kwok_port="${KUBE_KWOK_PORT:-10247}"
kueue_webhook_port="${KUBE_KUEUE_WEBHOOK_PORT:-10263}"
kueue_health_port="${KUBE_KUEUE_HEALTH_PORT:-10264}"
kueue_version=v0.17.0

log() { echo "kube-up: $*" >&2; }
die() { log "$*"; exit 1; }

# --- etcd and openssl -------------------------------------------------------------------
need=()
command -v etcd >/dev/null || need+=(etcd-server)
command -v openssl >/dev/null || need+=(openssl)
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "install ${need[*]} (apt-get install ${need[*]}) and run again"
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# --- binaries ---------------------------------------------------------------------------
bin="$("$root/scripts/kube-build.sh")"
kubectl() { "$bin/kubectl" --kubeconfig "$state/kubeconfig" "$@"; }

mkdir -p "$state/pki" "$state/logs" "$state/run"
# kube-down.sh removes only a directory that carries this marker.
touch "$state/.clearhouse-kube"
pki="$state/pki"

# --- certificates and keys (made once per state dir) ------------------------------------
ossl() { openssl "$@" 2>>"$state/logs/openssl.log" >/dev/null; }
if [ ! -s "$pki/ca.crt" ]; then
  log "certificates in $pki"
  ossl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=clearhouse-test-ca" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt"
fi
# cert NAME SUBJECT [SANs]: a key and a certificate signed by the CA.
cert() {
  local name=$1 subj=$2 san=${3:-} ext
  [ -s "$pki/$name.crt" ] && return 0
  ext="$pki/$name.ext"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [ -n "$san" ]; then
      echo "extendedKeyUsage=serverAuth,clientAuth"
      echo "subjectAltName=$san"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } >"$ext"
  ossl req -newkey rsa:2048 -nodes -subj "$subj" -keyout "$pki/$name.key" -out "$pki/$name.csr"
  ossl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 3650 -extfile "$ext" -out "$pki/$name.crt"
  rm -f "$pki/$name.csr" "$ext"
}
cert apiserver "/CN=kube-apiserver" \
  "IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert admin "/O=system:masters/CN=clearhouse-admin"
cert controller-manager "/CN=system:kube-controller-manager"
cert scheduler "/CN=system:kube-scheduler"
cert kwok "/O=system:masters/CN=kwok"
if [ ! -s "$pki/sa.key" ]; then
  ossl genrsa -out "$pki/sa.key" 2048
  ossl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
fi
chmod 600 "$pki"/*.key

# kubeconfig FILE CERTNAME: a kubeconfig with the CA, the client certificate and key inline.
kubeconfig() {
  local file=$1 name=$2
  [ -s "$file" ] && return 0
  cat >"$file.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: clearhouse-test
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority-data: $(base64 -w0 <"$pki/ca.crt")
users:
- name: $name
  user:
    client-certificate-data: $(base64 -w0 <"$pki/$name.crt")
    client-key-data: $(base64 -w0 <"$pki/$name.key")
contexts:
- name: clearhouse-test
  context: {cluster: clearhouse-test, user: $name}
current-context: clearhouse-test
EOF
  chmod 600 "$file.tmp"
  mv "$file.tmp" "$file"
}
kubeconfig "$state/kubeconfig" admin
kubeconfig "$pki/controller-manager.kubeconfig" controller-manager
kubeconfig "$pki/scheduler.kubeconfig" scheduler
kubeconfig "$pki/kwok.kubeconfig" kwok

# --- processes --------------------------------------------------------------------------
# running NAME: the component's pid file names a live process of that program.
running() {
  local pid
  pid="$(cat "$state/run/$1.pid" 2>/dev/null)" || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2"
}
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# start NAME PORT PROGRAM ARGS...: starts PROGRAM in its own session unless it runs.
start() {
  local name=$1 port=$2 prog=$3
  shift 3
  if running "$name" "$prog"; then return 0; fi
  port_free "$port" || die "port $port (for $name) is taken by another program; set its KUBE_*_PORT"
  log "starting $name (log: $state/logs/$name.log)"
  setsid "$prog" "$@" >>"$state/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$state/run/$name.pid"
}
# wait_for WHAT SECONDS LOG COMMAND...: retries COMMAND each second.
wait_for() {
  local what=$1 secs=$2 logfile=$3 i
  shift 3
  for ((i = 0; i < secs; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  log "$what not ready after ${secs}s; the end of $logfile:"
  tail -n 30 "$logfile" >&2 || true
  exit 1
}

start etcd "$etcd_port" "$(command -v etcd)" \
  --name clearhouse-test --data-dir "$state/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" \
  --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
  --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
  --initial-cluster "clearhouse-test=http://127.0.0.1:$etcd_peer_port" \
  --listen-metrics-urls "" --quota-backend-bytes $((2 * 1024 * 1024 * 1024))
wait_for etcd 30 "$state/logs/etcd.log" curl -sf "http://127.0.0.1:$etcd_port/health"

# --endpoint-reconciler-type=none: with etcd 3.4 on loopback the lease reconciler of the
# "kubernetes" Service's endpoints fails; nothing here needs those endpoints.
# WatchList=false: Debian's etcd 3.4 lacks what the API server needs to serve client-go's
# streaming lists (RequestWatchProgress); left on, the server accepts such a watch and then
# ends it with an error, clients (client-go asks for streaming lists by default since 1.35)
# re-list after a backoff, and kwok saw pods and leases tens of seconds late. Off, the
# server refuses the request and clients fall back to a plain list at once.
# Admission: the defaults, with ResourceQuota, Priority and ServiceAccount named
# explicitly since the tests rely on real quota admission and on priority classes.
start kube-apiserver "$api_port" "$bin/kube-apiserver" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
  --etcd-servers "http://127.0.0.1:$etcd_port" \
  --endpoint-reconciler-type none \
  --cert-dir "$pki" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
  --client-ca-file "$pki/ca.crt" \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
  --service-cluster-ip-range 10.0.0.0/24 \
  --authorization-mode RBAC \
  --enable-admission-plugins NamespaceLifecycle,ServiceAccount,Priority,ResourceQuota \
  --feature-gates WatchList=false \
  --allow-privileged=true --profiling=false --anonymous-auth=false
wait_for kube-apiserver 120 "$state/logs/kube-apiserver.log" kubectl get --raw /readyz

# The resourcequota controller recomputes quota usage (pods deleted, completed); the
# serviceaccount controllers make each namespace's "default" ServiceAccount and tokens.
start kube-controller-manager "$kcm_port" "$bin/kube-controller-manager" \
  --kubeconfig "$pki/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$pki/controller-manager.kubeconfig" \
  --authorization-kubeconfig "$pki/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$kcm_port" \
  --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
  --use-service-account-credentials=true \
  --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
  --controllers '*' --leader-elect=false --profiling=false \
  --resource-quota-sync-period 30s
start kube-scheduler "$sched_port" "$bin/kube-scheduler" \
  --kubeconfig "$pki/scheduler.kubeconfig" \
  --authentication-kubeconfig "$pki/scheduler.kubeconfig" \
  --authorization-kubeconfig "$pki/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$sched_port" \
  --leader-elect=false --profiling=false
start kwok "$kwok_port" "$bin/kwok" \
  --kubeconfig "$pki/kwok.kubeconfig" --config "$root/tools/kube/kwok-stages.yaml" \
  --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
  --node-ip 10.1.0.1 --cidr 10.2.0.1/16 --node-lease-duration-seconds 40 \
  --server-address "127.0.0.1:$kwok_port" \
  --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key"
insecure_health() { curl -skf "https://127.0.0.1:$1/healthz"; }
wait_for kube-controller-manager 60 "$state/logs/kube-controller-manager.log" insecure_health "$kcm_port"
wait_for kube-scheduler 60 "$state/logs/kube-scheduler.log" insecure_health "$sched_port"
for c in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
  running "$c" "" || die "$c exited; the end of $state/logs/$c.log: $(tail -n 20 "$state/logs/$c.log")"
done

# --- fake nodes -------------------------------------------------------------------------
for ((i = 0; i < nodes; i++)); do
  cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
status:
  allocatable: {cpu: "32", memory: 128Gi, nvidia.com/gpu: "4", pods: "110"}
  capacity: {cpu: "32", memory: 128Gi, nvidia.com/gpu: "4", pods: "110"}
EOF
done >"$state/nodes.yaml"
# create, not apply: a node that exists keeps its status (kwok keeps it up to date).
kubectl create -f "$state/nodes.yaml" 2>&1 | grep -v AlreadyExists >&2 || true
wait_for "kwok's nodes" 90 "$state/logs/kwok.log" \
  kubectl wait --for=condition=Ready node -l type=kwok --timeout=5s

# --- Kueue's CRDs -----------------------------------------------------------------------
if [ "$kueue" = 1 ]; then
  dir="$(cd / && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kueue@$kueue_version" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -d "$dir/config/components/crd/bases" ] || die "Kueue $kueue_version's CRDs not found (go mod download)"
  kubectl apply --server-side --force-conflicts --field-manager clearhouse-kube-up \
    -f "$dir/config/components/crd/bases" >"$state/logs/kueue-crds.log"
  kubectl wait --for condition=Established --timeout=60s \
    $(kubectl get crd -o name | grep 'kueue.x-k8s.io') >>"$state/logs/kueue-crds.log" 2>&1
  log "Kueue $kueue_version CRDs established"

  # Kueue's controller, as a process of this state dir like the control plane's.
  kueue_bin="$("$root/scripts/kueue-build.sh")"
  kdir="$state/kueue"
  mkdir -p "$kdir/webhook-certs"
  # Its identity: a client certificate in system:masters (a real install binds Kueue's
  # ClusterRole to its ServiceAccount; this test cluster does not model that part).
  cert kueue "/O=system:masters/CN=kueue"
  kubeconfig "$pki/kueue.kubeconfig" kueue
  # Its webhook server's certificate, signed by the state dir's CA (the webhook
  # configurations below carry that CA).
  cert kueue-webhook "/CN=kueue-webhook" "IP:127.0.0.1,DNS:localhost"
  cp "$pki/kueue-webhook.crt" "$kdir/webhook-certs/tls.crt"
  cp "$pki/kueue-webhook.key" "$kdir/webhook-certs/tls.key"
  chmod 600 "$pki"/*.key "$kdir/webhook-certs/tls.key"
  # With internal certificate management off, Kueue v0.17.0 reads a metrics certificate
  # from a path it hard-codes (cmd/kueue/main.go) and exits without it, even with its
  # metrics server off (bindAddress "0", as below). Any key pair serves.
  metrics_certs=/etc/kueue/metrics/certs
  if [ ! -s "$metrics_certs/tls.crt" ] || [ ! -s "$metrics_certs/tls.key" ]; then
    { mkdir -p "$metrics_certs" && [ -w "$metrics_certs" ]; } 2>/dev/null ||
      die "Kueue $kueue_version reads its metrics certificate from $metrics_certs (hard-coded): run as root once, or 'sudo mkdir -p $metrics_certs && sudo chown $(id -un) $metrics_certs', or use --no-kueue"
    ossl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=kueue-metrics" \
      -keyout "$metrics_certs/tls.key" -out "$metrics_certs/tls.crt"
    chmod 600 "$metrics_certs/tls.key"
    log "made a self-signed metrics certificate for Kueue in $metrics_certs"
  fi
  # Only the batch/job integration: the webhooks registered below are those of Jobs and of
  # Kueue's own objects, and a registered webhook whose integration is off would refuse
  # every request it matches (failurePolicy Fail, and Kueue not serving its path).
  cat >"$kdir/config.yaml" <<EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:$kueue_health_port
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: $kueue_webhook_port
  certDir: $kdir/webhook-certs
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
clientConnection:
  qps: 50
  burst: 100
integrations:
  frameworks:
  - batch/job
EOF
  kubectl create namespace kueue-system 2>&1 | grep -v AlreadyExists >&2 || true
  port_free "$kueue_health_port" || running kueue "$kueue_bin/kueue" ||
    die "port $kueue_health_port (for Kueue's health probes) is taken by another program; set KUBE_KUEUE_HEALTH_PORT"
  # VisibilityOnDemand off: its API server would need a certificate at another hard-coded
  # path (/visibility/tls.crt), and nothing here asks for pending workloads through it.
  start kueue "$kueue_webhook_port" "$kueue_bin/kueue" \
    --config "$kdir/config.yaml" --kubeconfig "$pki/kueue.kubeconfig" \
    --feature-gates VisibilityOnDemand=false
  wait_for kueue 120 "$state/logs/kueue.log" curl -sf "http://127.0.0.1:$kueue_health_port/readyz"

  # Kueue's webhooks, from its own manifests, with a url: client config in place of its
  # Service (no Service routing here): mutating and validating for Jobs, ClusterQueues,
  # Cohorts, ResourceFlavors and Workloads. The mutating Job webhook suspends a new Job
  # that names a LocalQueue, so its pods wait for Kueue's admission.
  awk -v url="https://127.0.0.1:$kueue_webhook_port" -v ca="$(base64 -w0 <"$pki/ca.crt")" '
    function flush() { if (buf != "" && keep) printf "%s", buf; buf = ""; keep = 0 }
    /^---$/ || /^apiVersion:/ || /^kind:/ || /^metadata:/ || /^webhooks:/ { flush(); print; next }
    /^  name: (mutating|validating)-webhook-configuration$/ { flush(); sub(/name: /, "name: kueue-"); print; next }
    /^- admissionReviewVersions:/ { flush() }
    /^    service:$/ || /^      name: webhook-service$/ || /^      namespace: system$/ { next }
    /^      path: / { buf = buf "    url: " url $2 "\n    caBundle: " ca "\n"; next }
    /^  name: [mv](job|clusterqueue|cohort|resourceflavor|workload)\.kb\.io$/ { keep = 1 }
    { buf = buf $0 "\n" }
    END { flush() }
  ' "$dir/config/components/webhook/manifests.yaml" >"$kdir/webhooks.yaml"
  grep -q "url: https://127.0.0.1:$kueue_webhook_port/mutate-batch-v1-job" "$kdir/webhooks.yaml" ||
    die "Kueue's Job webhook not found in $dir/config/components/webhook/manifests.yaml"
  kubectl apply --server-side --force-conflicts --field-manager clearhouse-kube-up \
    -f "$kdir/webhooks.yaml" >"$state/logs/kueue-webhooks.log"
  # Ready when the API server calls the Job webhook: a dry run of a Job naming a
  # LocalQueue comes back suspended.
  cat >"$kdir/probe-job.yaml" <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: kueue-webhook-probe
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: probe}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: probe, image: probe}]
EOF
  kueue_webhook_called() {
    [ "$(kubectl create --dry-run=server -f "$kdir/probe-job.yaml" -o jsonpath='{.spec.suspend}')" = true ]
  }
  wait_for "Kueue's webhooks" 60 "$state/logs/kueue.log" kueue_webhook_called
  log "Kueue $kueue_version controller ready (log: $state/logs/kueue.log)"
fi

log "ready: $(kubectl get nodes -l type=kwok --no-headers | wc -l) nodes; kubectl: $bin/kubectl"
echo "export CLEARHOUSE_TEST_KUBECONFIG=$state/kubeconfig"
