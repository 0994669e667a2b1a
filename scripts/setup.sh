#!/usr/bin/env bash
# Installs every Debian package poolfs needs to build and test, and nothing
# when they are all there already (safe to run again and again).
#
# Usage: scripts/setup.sh
# Runs apt-get as root, or through sudo when not root. Quiet when there is
# nothing to do; apt's errors are shown.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake pkg-config git
  # clang: thread-safety analysis, libFuzzer (needs the compiler-rt runtimes)
  clang libclang-rt-14-dev
  # libraries
  libfuse3-dev fuse3 libboost-dev libspdlog-dev catch2 libcli11-dev
  libtomlplusplus-dev libxxhash-dev liblz4-dev libzstd-dev nlohmann-json3-dev
  # tcmalloc for the poolfs program (daemon/CMakeLists.txt says why)
  libgoogle-perftools-dev
  # benchmarks and stress (plots, baselines, load, the everyday workloads
  # of scripts/bench-peers.sh, which installs its peer zfs-fuse itself)
  gnuplot-nox fio stress-ng sqlite3 dbench
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "setup.sh: missing packages: ${missing[*]}" >&2
  echo "setup.sh: not root and no sudo; install them as root and run again" >&2
  exit 1
fi

echo "setup.sh: installing ${missing[*]}"
APT=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)
"${APT[@]}" update -qq >/dev/null
"${APT[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
