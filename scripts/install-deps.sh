#!/usr/bin/env bash
# Installs everything simloop needs from Debian 12 packages. Safe to rerun:
# apt-get skips what is already installed, and the package index is refreshed
# only when a package is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libsimgrid-dev libspdlog-dev libfmt-dev libyaml-cpp-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev libeigen3-dev
  libboost-math-dev            # report/stats.cc: Student's t quantiles
  zlib1g-dev                   # sim/layout/build.cc: gzip-compressed nm and link maps
  nlohmann-json3-dev python3-matplotlib python3-numpy valgrind iperf3
  slurm-wlm munge parallel     # the Slurm and GNU parallel recipes and their tests
  clang-14 libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer with ASan and UBSan
  ninja-build                  # scripts/fuzz.sh's build directory
  help2man                     # the man page, build/simloop.1, from --help
  man-db                       # man -l and man -w, with which its tests read it
  bash-completion              # completion of simloop's words (scripts/simloop-completion.bash)
  nftables                     # measure kernel --nft-rules: nft -f - in its own namespaces
  iproute2                     # measure kernel --path veth: ip -batch makes the veth pair
  lld                          # ld.lld: link-order advice on the harness and on a program of your own
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

SUDO=""
[[ $(id -u) -eq 0 ]] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
