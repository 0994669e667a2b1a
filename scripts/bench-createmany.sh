#!/usr/bin/env bash
# The createmany benchmark, through the FUSE mount: file creates
# per second for each object allocation policy (dmu.metadnode_backfill),
# measured in one run, like the ZFS measurement it reproduces (createmany
# with 32 threads, 16 x 1M files, backfill on against off).
#
# For each mode (auto, on, off, legacy by default), on a freshly created
# pool mounted with a config file that sets the mode (checked in `poolfs
# status`):
#   1. ITERATIONS times: createmany -o -t THREADS -D $(mktemp -d MNT/XXXXX) COUNT
#      (each iteration into a new folder of the same, growing pool), then a
#      wait for the txg sync; the modes take turns at each iteration (all
#      pools are mounted at once), so that a drift in the machine's load
#      falls on every mode alike;
#   2. the churn pass: a random half of every file created is removed
#      through the mount, the script waits until a txg with those removals
#      has synced (their ids are reusable from then on, as in a workload
#      whose phases are more than txg.timeout_ms apart), then createmany
#      creates as many files again in a new folder;
#   3. `poolfs status` gives the density (live objects / (highest object id
#      + 1)), reused ids and failed holds; then the pool is unmounted and
#      deleted.
# Printed: a table (mode, mean, min, max creates/s over the iterations,
# the churn pass's creates/s, density after it, ids reused, failed holds),
# the ratios auto/off (the target through the mount: >= 0.95) and
# off/legacy (the pathology: >= 1.4 in process), and where the files are:
# OUT/table.txt, OUT/results.json, OUT/iterations.tsv and OUT/creates.png
# (creates/s per iteration for each mode, drawn by gnuplot).
#
# With --datasets N, another comparison instead: one pool, and each
# iteration runs createmany -o -t THREADS COUNT into one dataset, then N
# createmany -o -t THREADS, COUNT/N files each, at once, into N datasets of
# the same pool (the total files alike), each followed by a wait for the
# sync; printed: creates/s per iteration of both, their medians and
# datasets_over_single (OUT/datasets.json). The datasets' lists sync in
# parallel (txg sync runs datasets and allocators at once).
#
# Every command (the daemon, createmany) runs under `taskset -c CPUS`
# (default: the last CPU), as scripts/bench-fs.sh does and for its reason:
# a client and a daemon that land on different cores vary widely, at
# random; --cpus none turns pinning off.
#
# Usage: scripts/bench-createmany.sh [--iterations I] [--count N] [--threads T]
#          [--modes auto,on,off,legacy] [--dir DIR] [--out DIR] [--cpus LIST|none]
#          [--pool-size SIZE] [--no-churn] [--quick] [--datasets N]
#   --iterations I  createmany runs per mode (default 8)
#   --count N       files per createmany run (default 100000; see below)
#   --quick         a smoke test: 2 iterations of 5000 files
#   --datasets N    N datasets at once against one (see above), not the modes
#   --out DIR       where the table, JSON, data and plot go
#                   (default /var/tmp/poolfs-createmany-YYYYmmdd-HHMMSS)
#   --dir DIR       where the pool file and the mount go (default /var/tmp)
# Defaults: 8 x 100,000. A run of 8 x 200,000 on a machine loaded by other
# work once saw its rate fall with every iteration, in every mode alike, and
# its churn pass crawl: it would have taken well over an hour. That was
# before idle dnodes and inodes left the daemon's memory; 8 x 200,000 has
# not been measured since.
# Environment: POOLFS_BUILD (build folder, default "build").
# Progress goes to stderr. Exit 0 when every measurement ran (whether or not
# the targets are met), 1 when one failed, 2 for bad arguments.
set -euo pipefail
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"

ITERATIONS=8
COUNT=100000
THREADS=32
MODES=auto,on,off,legacy
WORKDIR=/var/tmp
OUT=
CPUS=$(($(nproc) - 1))
POOL_SIZE=20G
CHURN=1
DATASETS=0

bench_option() {
  case $1 in
    --iterations) ITERATIONS=${2:?}; BENCH_SHIFT=2 ;;
    --count) COUNT=${2:?}; BENCH_SHIFT=2 ;;
    --threads) THREADS=${2:?}; BENCH_SHIFT=2 ;;
    --modes) MODES=${2:?}; BENCH_SHIFT=2 ;;
    --dir) WORKDIR=${2:?}; BENCH_SHIFT=2 ;;
    --out) OUT=${2:?}; BENCH_SHIFT=2 ;;
    --cpus) CPUS=${2:?}; BENCH_SHIFT=2 ;;
    --pool-size) POOL_SIZE=${2:?}; BENCH_SHIFT=2 ;;
    --no-churn) CHURN=0 ;;
    --datasets) DATASETS=${2:?}; BENCH_SHIFT=2 ;;
    --quick) ITERATIONS=2; COUNT=5000 ;;
    *) return 1 ;;
  esac
}
bench_parse_args "$@"
for n in ITERATIONS COUNT THREADS; do
  [[ ${!n} =~ ^[1-9][0-9]*$ ]] || { echo "bench-createmany.sh: --${n,,} '${!n}': not a positive number" >&2; exit 2; }
done
[[ $DATASETS =~ ^[0-9]+$ ]] || { echo "bench-createmany.sh: --datasets '$DATASETS': not a number" >&2; exit 2; }
if ((DATASETS > 0)); then
  MODES=auto  # one pool, the default policy
  CHURN=0
fi
IFS=, read -r -a MODE_LIST <<<"$MODES"
for m in "${MODE_LIST[@]}"; do
  [[ $m =~ ^(auto|on|off|legacy)$ ]] || { echo "bench-createmany.sh: --modes: '$m' is not auto, on, off or legacy" >&2; exit 2; }
done
PIN=()
if [[ "$CPUS" != none ]]; then
  command -v taskset >/dev/null || die "taskset (util-linux) is missing; use --cpus none"
  taskset -c "$CPUS" true 2>/dev/null || { echo "bench-createmany.sh: --cpus '$CPUS': taskset cannot pin to these CPUs" >&2; exit 2; }
  PIN=(taskset -c "$CPUS")
fi

# --- Programs.
bench_programs
command -v gnuplot >/dev/null || die "gnuplot is missing (scripts/setup.sh installs gnuplot-nox)"

# --- Free space: a pool's file grows by about KIB_PER_FILE per file
# (dnode, directory entry, indirect blocks, copies in flight; measured
# below), and every mode's pool exists at once. Ask for that, plus 1 GiB.
KIB_PER_FILE=2
mkdir -p "$WORKDIR"
FILES_PER_POOL=$((ITERATIONS * COUNT + (CHURN ? ITERATIONS * COUNT / 2 : 0)))
NEED_KIB=$((${#MODE_LIST[@]} * FILES_PER_POOL * KIB_PER_FILE + 1024 * 1024))
AVAIL_KIB=$(df -Pk "$WORKDIR" | awk 'NR == 2 { print $4 }')
if ((AVAIL_KIB < NEED_KIB)); then
  die "$WORKDIR has $((AVAIL_KIB / 1024)) MiB free; $((NEED_KIB / 1024)) MiB needed for ${#MODE_LIST[@]} pools of $FILES_PER_POOL files (use --dir, or fewer --iterations or --count)"
fi

# --- Memory: a poolfs daemon holds its cache (bounded by arc.max_bytes), its
# dirty data (txg.dirty_max_bytes) and about 12 bytes per file the kernel
# holds (scripts/bench-memory.sh: 278 MiB at 2,000,000 files with both
# bounds at 128 MiB), and every mode's pool is mounted at once; the churn
# pass adds half as many files again to one pool at a time. Ask for 512 MiB
# per daemon and 64 bytes per file.
MEM_NEED_KIB=$((${#MODE_LIST[@]} * 512 * 1024 + (${#MODE_LIST[@]} * ITERATIONS * COUNT + (CHURN ? ITERATIONS * COUNT / 2 : 0)) / 16))
MEM_AVAIL_KIB=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
if ((MEM_AVAIL_KIB < MEM_NEED_KIB)); then
  die "$((MEM_AVAIL_KIB / 1024)) MiB of memory available; about $((MEM_NEED_KIB / 1024)) MiB needed by ${#MODE_LIST[@]} daemons holding $((ITERATIONS * COUNT)) files each (use fewer --iterations, --count or --modes)"
fi

# --- The work folder; the trap unmounts and removes it. One pool, config
# file and mount per mode: $W/MODE.pool, $W/MODE.toml, $W/mnt-MODE.
[[ -n "$OUT" ]] || OUT=/var/tmp/poolfs-createmany-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
W=$(mktemp -d "$WORKDIR/poolfs-bench-createmany.XXXXXX")
W=$(realpath "$W")

wait_pools_released() {
  bench_released "$W/*.pool" 120 || die "a poolfs daemon still holds a pool in $W 120 s after its unmount"
}
cleanup() {
  local rc=$? m
  for m in "$W"/mnt-*; do
    if mountpoint -q "$m" 2>/dev/null; then
      "$POOLFS" unmount "$m" >/dev/null 2>&1 || fusermount3 -uz "$m" 2>/dev/null || true
    fi
  done
  bench_released "$W/*.pool" 30 || true
  rm -rf "$W"
  [[ $rc -ne 0 ]] && echo "bench-createmany.sh: failed (exit $rc); mounts and $W cleaned up" >&2
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# read_status MNT: `poolfs status MNT` into $STATUS; status_field REGEX:
# group 1 of the first line REGEX (sed -E, the whole line) matches.
STATUS=
read_status() { STATUS=$("$POOLFS" status "$1") || die "poolfs status $1 failed"; }
status_field() { sed -nE "s/$1/\\1/p" <<<"$STATUS" | head -1; }

# createmany_rate DIR COUNT: creates/s of createmany -o -t THREADS -D DIR COUNT.
createmany_rate() {
  local out
  out=$("${PIN[@]}" "$CREATEMANY" -o -i 0 -t "$THREADS" -D "$1" "$2" 2>&1) ||
    die "createmany on $1 failed: $(tail -3 <<<"$out")"
  log "    $out"
  awk '/^total:/ { printf "%.0f\n", $7 }' <<<"$out"
}

# wait_synced MNT: returns once everything done through MNT so far is in a
# synced txg: a marker file created now is in a txg no older than any
# earlier change, and its fsync returns once that txg has synced.
wait_synced() {
  dd if=/dev/null of="$1/sync-marker.$RANDOM$RANDOM" conv=fsync status=none ||
    die "fsync of a marker file in $1 failed"
}

# churn_pass MNT: removes a random half of every file under MNT, waits for
# the removals to sync, creates as many again; prints the creates/s.
churn_pass() {
  local list=$W/files half dir
  (cd "$1" && find . -type f) >"$list"
  half=$(($(wc -l <"$list") / 2))
  log "  churn on $1: removing $half of $(wc -l <"$list") files (random), then creating $half"
  # Eight rm at once: one rm's unlinks are one FUSE round trip at a time,
  # so a single rm on a loaded machine took over half an hour for an
  # 800,000-file pass.
  shuf -n "$half" "$list" | (cd "$1" && "${PIN[@]}" xargs -d '\n' -P 8 -n 500 rm -f)
  rm -f "$list"
  wait_synced "$1"
  dir=$(mktemp -d "$1/churn.XXXXX")
  createmany_rate "$dir" "$half"
}

median_of_lines() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# --datasets N: one dataset against N at once (see the top of the file).
datasets_run() {
  local name=bench-ds$$ m=$W/mnt-ds i k start end single multi
  "$POOLFS" create "$W/ds.pool" --size "$POOL_SIZE" --name "$name" >/dev/null
  mkdir -p "$m"
  "${PIN[@]}" "$POOLFS" mount "$W/ds.pool" "$m"
  "$POOLFS" dataset create "$name/single" || die "poolfs dataset create $name/single failed"
  for ((k = 1; k <= DATASETS; k++)); do
    "$POOLFS" dataset create "$name/d$k" || die "poolfs dataset create $name/d$k failed"
  done
  log "datasets: $ITERATIONS x (createmany -o -t $THREADS $COUNT into 1 dataset, then $DATASETS x createmany -o -t $THREADS $((COUNT / DATASETS)) into $DATASETS datasets at once); pinning: ${PIN[*]:-none}"
  printf 'iteration\tone_dataset\t%s_datasets\n' "$DATASETS" >"$OUT/datasets.tsv"
  for ((i = 1; i <= ITERATIONS; i++)); do
    single=$(createmany_rate "$(mktemp -d "$m/single/XXXXX")" "$COUNT")
    wait_synced "$m/single"
    local pids=() dirs=()
    for ((k = 1; k <= DATASETS; k++)); do dirs+=("$(mktemp -d "$m/d$k/XXXXX")"); done
    start=$(date +%s.%N)
    for ((k = 1; k <= DATASETS; k++)); do
      "${PIN[@]}" "$CREATEMANY" -o -i 0 -t "$THREADS" -D "${dirs[k - 1]}" $((COUNT / DATASETS)) \
        >"$W/multi.$k.log" 2>&1 &
      pids+=($!)
    done
    for k in "${!pids[@]}"; do
      wait "${pids[k]}" || die "createmany into ${dirs[k]} failed: $(tail -3 "$W/multi.$((k + 1)).log")"
    done
    end=$(date +%s.%N)
    multi=$(awk -v n=$((COUNT / DATASETS * DATASETS)) -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", n / (b - a) }')
    for ((k = 1; k <= DATASETS; k++)); do wait_synced "$m/d$k"; done
    log "  iteration $i: one dataset $single creates/s, $DATASETS datasets $multi creates/s"
    printf '%d\t%s\t%s\n' "$i" "$single" "$multi" >>"$OUT/datasets.tsv"
  done
  local med1 medn
  med1=$(tail -n +2 "$OUT/datasets.tsv" | cut -f2 | median_of_lines)
  medn=$(tail -n +2 "$OUT/datasets.tsv" | cut -f3 | median_of_lines)
  "$POOLFS" unmount "$m" >/dev/null || die "poolfs unmount $m failed"
  {
    column -t -s $'\t' "$OUT/datasets.tsv"
    echo "median creates/s: one dataset $med1, $DATASETS datasets $medn"
    echo "datasets_over_single: $(awk -v a="$medn" -v b="$med1" 'BEGIN { printf "%.3f", a / b }')"
  } | tee "$OUT/table.txt"
  printf '{"datasets": %d, "threads": %d, "count": %d, "iterations": %d, "one_dataset_creates_per_s": %s, "datasets_creates_per_s": %s, "datasets_over_single": %s}\n' \
    "$DATASETS" "$THREADS" "$COUNT" "$ITERATIONS" "$med1" "$medn" \
    "$(awk -v a="$medn" -v b="$med1" 'BEGIN { printf "%.3f", a / b }')" | tee "$OUT/datasets.json"
}
if ((DATASETS > 0)); then
  datasets_run
  exit 0
fi

declare -A MEAN MIN MAX CHURN_RATE DENSITY REUSED FAILED HIGH RATE # RATE[mode,i]
log "modes ${MODES}: $ITERATIONS x createmany -o -t $THREADS COUNT=$COUNT each, interleaved, one fresh pool per mode$([[ $CHURN -eq 1 ]] && echo ", then a churn pass"); pinning: ${PIN[*]:-none}; work in $W, results in $OUT"
for mode in "${MODE_LIST[@]}"; do
  "$POOLFS" create "$W/$mode.pool" --size "$POOL_SIZE" --name "bench-$mode" >/dev/null
  printf '[dmu]\nmetadnode_backfill = "%s"\n' "$mode" >"$W/$mode.toml"
  mkdir -p "$W/mnt-$mode"
  "${PIN[@]}" "$POOLFS" mount --config "$W/$mode.toml" "$W/$mode.pool" "$W/mnt-$mode"
  mountpoint -q "$W/mnt-$mode" || die "poolfs mount returned but $W/mnt-$mode is not a mount point"
  read_status "$W/mnt-$mode"
  shown=$(status_field '.*backfill ([a-z]+);.*')
  [[ $shown == "$mode" ]] || die "poolfs status shows backfill '$shown', not '$mode', after mounting with $W/$mode.toml"
done
# Iteration i runs every mode once, in turn (the order reversed every other
# iteration), each mount synced before the next starts: the machine's load
# drifts over all modes alike, and no mode's sync runs during another's
# createmany.
for ((i = 1; i <= ITERATIONS; i++)); do
  order=("${MODE_LIST[@]}")
  if ((i % 2 == 0)); then
    order=()
    for ((c = ${#MODE_LIST[@]} - 1; c >= 0; c--)); do order+=("${MODE_LIST[$c]}"); done
  fi
  for mode in "${order[@]}"; do
    dir=$(mktemp -d "$W/mnt-$mode/XXXXX")
    RATE[$mode,$i]=$(createmany_rate "$dir" "$COUNT")
    log "  iteration $i $mode: ${RATE[$mode,$i]} creates/s"
    wait_synced "$W/mnt-$mode"
  done
done
for mode in "${MODE_LIST[@]}"; do
  m=$W/mnt-$mode
  rates=()
  for ((i = 1; i <= ITERATIONS; i++)); do rates+=("${RATE[$mode,$i]}"); done
  read -r "MEAN[$mode]" "MIN[$mode]" "MAX[$mode]" < <(printf '%s\n' "${rates[@]}" |
    awk 'NR == 1 { mn = mx = $1 } { s += $1; if ($1 < mn) mn = $1; if ($1 > mx) mx = $1 }
         END { printf "%.0f %.0f %.0f\n", s / NR, mn, mx }')
  CHURN_RATE[$mode]=-
  if [[ $CHURN -eq 1 ]]; then CHURN_RATE[$mode]=$(churn_pass "$m"); fi
  read_status "$m"
  DENSITY[$mode]=$(status_field '.*density ([0-9.]+),.*')
  REUSED[$mode]=$(status_field '.* ([0-9]+) reused.*')
  FAILED[$mode]=$(status_field '.* ([0-9]+) failed holds.*')
  HIGH[$mode]=$(status_field '.*high-water ([0-9]+),.*')
  echo "$STATUS" >"$OUT/status-$mode.txt"
  log "  $mode: pool file $(du -h "$W/$mode.pool" | cut -f1); mean ${MEAN[$mode]} creates/s, churn ${CHURN_RATE[$mode]}/s, density ${DENSITY[$mode]}, reused ${REUSED[$mode]}, failed holds ${FAILED[$mode]}"
  "$POOLFS" unmount "$m" >/dev/null
done
wait_pools_released

DATA=$OUT/iterations.tsv
echo -e "iteration\t${MODE_LIST[*]}" | tr ' ' '\t' >"$DATA"
for ((i = 1; i <= ITERATIONS; i++)); do
  line=$i
  for mode in "${MODE_LIST[@]}"; do line+=$'\t'${RATE[$mode,$i]}; done
  echo "$line" >>"$DATA"
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v >= t) ? "met" : "NOT MET" }'; }
{
  echo "createmany -o -t $THREADS, $ITERATIONS x $COUNT files per mode, each mode on a fresh pool; pinned to CPUs: $CPUS; $(date -u +%Y-%m-%dT%H:%MZ)"
  printf '%-7s %10s %10s %10s %10s %9s %9s %12s %11s\n' mode mean/s min/s max/s churn/s density reused failed-holds high-water
  for mode in "${MODE_LIST[@]}"; do
    printf '%-7s %10s %10s %10s %10s %9s %9s %12s %11s\n' "$mode" "${MEAN[$mode]}" "${MIN[$mode]}" \
      "${MAX[$mode]}" "${CHURN_RATE[$mode]}" "${DENSITY[$mode]}" "${REUSED[$mode]}" "${FAILED[$mode]}" "${HIGH[$mode]}"
  done
  echo "(mean/min/max: the $ITERATIONS createmany runs; the rest after the churn pass: remove a random half, sync, create as many)"
  if [[ -n "${MEAN[auto]:-}" && -n "${MEAN[off]:-}" ]]; then
    r=$(ratio "${MEAN[auto]}" "${MEAN[off]}")
    echo "auto/off    $r   target >= 0.95: $(verdict "$r" 0.95)"
  fi
  if [[ -n "${MEAN[off]:-}" && -n "${MEAN[legacy]:-}" ]]; then
    r=$(ratio "${MEAN[off]}" "${MEAN[legacy]}")
    echo "off/legacy  $r   (in process the target is >= 1.4: $(verdict "$r" 1.4))"
  fi
  if [[ $CHURN -eq 1 && -n "${DENSITY[auto]:-}" ]]; then
    echo "density after churn: auto ${DENSITY[auto]} (target >= 0.95: $(verdict "${DENSITY[auto]}" 0.95))${DENSITY[off]:+, off ${DENSITY[off]} (expected ~0.67)}"
  fi
  echo "plot: $OUT/creates.png; data: $DATA; poolfs status after each mode: $OUT/status-MODE.txt"
} | tee "$OUT/table.txt"

{
  printf '{"threads": %s, "iterations": %s, "count": %s, "cpus": "%s", "modes": [' "$THREADS" "$ITERATIONS" "$COUNT" "$CPUS"
  sep=
  for mode in "${MODE_LIST[@]}"; do
    samples=
    for ((i = 1; i <= ITERATIONS; i++)); do samples+=${samples:+, }${RATE[$mode,$i]}; done
    churn=${CHURN_RATE[$mode]}
    [[ $churn == - ]] && churn=null
    printf '%s{"mode": "%s", "mean": %s, "min": %s, "max": %s, "samples": [%s], "churn_creates_per_s": %s, "density": %s, "reused": %s, "failed_holds": %s, "high_water": %s}' \
      "$sep" "$mode" "${MEAN[$mode]}" "${MIN[$mode]}" "${MAX[$mode]}" "$samples" "$churn" "${DENSITY[$mode]}" "${REUSED[$mode]}" "${FAILED[$mode]}" "${HIGH[$mode]}"
    sep=", "
  done
  printf ']}\n'
} >"$OUT/results.json"

# The plot: creates/s per iteration, one line per mode.
plot_cmds="set terminal pngcairo size 900,560
set output '$OUT/creates.png'
set title 'createmany -o -t $THREADS, $COUNT files per iteration, through the FUSE mount'
set xlabel 'iteration (the pool holds iteration x $COUNT files)'
set ylabel 'creates/s'
set yrange [0:*]
set xtics 1
set key outside right
set grid
plot "
for ((c = 0; c < ${#MODE_LIST[@]}; c++)); do
  plot_cmds+="'$DATA' using 1:$((c + 2)) with linespoints title '${MODE_LIST[$c]}'"
  if ((c + 1 < ${#MODE_LIST[@]})); then plot_cmds+=", "; fi
done
gnuplot <<<"$plot_cmds" || die "gnuplot failed"
log "done: $OUT/table.txt, $OUT/results.json, $OUT/creates.png"
