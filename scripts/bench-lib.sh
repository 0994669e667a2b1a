# shellcheck shell=bash
# The preamble of the benchmark scripts (bench-space.sh, bench-memory.sh,
# bench-createmany.sh, bench-peers.sh, bench-fsync.sh), to be sourced by
# each, first thing, as
#   source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"
# It moves to the top of the checkout (where the script's paths start) and
# sets BUILD (POOLFS_BUILD, default "build"). Then:
#
#   usage                 prints the script's head comment from "# Usage:"
#                         to the line that starts "# Exit" or "# Progress"
#                         (the one that gives the exit codes), to stderr
#   die MESSAGE           prints "SCRIPT: MESSAGE" to stderr and exits 1
#   log MESSAGE           prints "SCRIPT: MESSAGE" to stderr
#   bench_parse_args ARGS...
#                         the argument loop: -h and --help print the usage
#                         and exit 0; every other argument goes to the
#                         script's own function
#                           bench_option ARG [VALUE...]
#                         which returns 0 when it took ARG (setting
#                         BENCH_SHIFT=2 when it took VALUE too) and 1 when it
#                         does not know ARG: then the usage is printed and
#                         the script exits 2
#   now                   the time, in seconds with nanoseconds
#   median VALUE...       their median, to one decimal
#   bench_holders PATTERN the pids of the processes that hold a file whose
#                         path matches PATTERN (a find -lname pattern)
#   bench_released PATTERN SECONDS
#                         waits until no process holds such a file (a
#                         poolfs daemon's final sync after an unmount), at
#                         most SECONDS; returns 1 if one still does
#   bench_programs        sets CREATEMANY and POOLFS to the absolute paths of
#                         $BUILD's createmany and poolfs, building them when
#                         either is missing (configuring $BUILD RelWithDebInfo
#                         when it is not); dies when fusermount3 is missing
#
# SCRIPT is the sourcing script's file name (BENCH_NAME).

BENCH_SCRIPT=$(realpath "${BASH_SOURCE[1]}")  # before the cd below
BENCH_NAME=$(basename "$BENCH_SCRIPT")
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
BUILD=${POOLFS_BUILD:-build}

usage() { sed -n '/^# Usage:/,/^# \(Exit\|Progress\)/p' "$BENCH_SCRIPT" | sed 's/^# \{0,1\}//' >&2; }
die() {
  echo "$BENCH_NAME: $*" >&2
  exit 1
}
log() { echo "$BENCH_NAME: $*" >&2; }

bench_parse_args() {
  while [[ $# -gt 0 ]]; do
    case $1 in
      -h | --help) usage; exit 0 ;;
    esac
    BENCH_SHIFT=1
    if ! bench_option "$@"; then
      echo "$BENCH_NAME: unknown argument '$1'" >&2
      usage
      exit 2
    fi
    shift "$BENCH_SHIFT"
  done
}

now() { date +%s.%N; }
median() {
  printf '%s\n' "$@" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f\n", m }'
}
bench_holders() { { find /proc/[0-9]*/fd -lname "$1" 2>/dev/null || true; } | cut -d/ -f3 | sort -u; }
bench_released() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    [[ -z "$(bench_holders "$1")" ]] && return 0
    sleep 0.1
  done
  return 1
}

bench_programs() {
  CREATEMANY=$BUILD/bin/createmany
  POOLFS=$BUILD/bin/poolfs
  if [[ ! -x "$CREATEMANY" || ! -x "$POOLFS" ]]; then
    log "building createmany and poolfs in $BUILD/"
    [[ -f "$BUILD/CMakeCache.txt" ]] || cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    nice -n 10 cmake --build "$BUILD" --target createmany poolfs -j"$(nproc)" >/dev/null
  fi
  CREATEMANY=$(realpath "$CREATEMANY")
  POOLFS=$(realpath "$POOLFS")
  command -v fusermount3 >/dev/null || die "fusermount3 (Debian package fuse3) is missing"
}
