#!/usr/bin/env bash
# Installs the Debian 12 packages pflex needs to build, test and draw figures.
# Idempotent: packages already present are left alone and apt is not touched.
# Runs as root, or through sudo when it is available.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libgsl-dev libsqlite3-dev sqlite3 libcsv-dev libjansson-dev
  libmicrohttpd-dev libcurl4-openssl-dev
  libplplot-dev plplot-driver-cairo
  libcmocka-dev valgrind
  # used by the integration tests only: JSON checks, the restore-lock test
  jq python3 util-linux
  # libFuzzer harnesses (scripts/fuzz.sh); the sanitizer and fuzzer runtimes
  # are only a Recommends of clang, which --no-install-recommends leaves out
  clang libclang-rt-dev
  # pflexd and pflex-controller: config files (libinih), sd_notify (libsystemd); its tests: curl,
  # and Debian's prometheus (the server and promtool) for the scrape test
  libinih-dev libsystemd-dev curl prometheus
  # the Slurm test bed (scripts/slurm-testbed.sh) and the SPANK plugin
  munge slurmctld slurmd slurm-client libslurm-dev iproute2
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present" >&2
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "error: missing packages (${missing[*]}) and not root; run as root or install sudo" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
