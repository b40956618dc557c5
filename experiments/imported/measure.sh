#!/bin/sh
# Measures a table the way another tool prints it: iperf3's UDP sender over
# this machine's loopback at several message sizes (a server on 127.0.0.1,
# unlimited rate), three repeats interleaved, written as a netperf-style CSV
# with the tool's own column names (iperf3-loopback.csv). Needs iperf3
# (scripts/install-deps.sh installs it).
# Usage: experiments/imported/measure.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
port=5301
sizes="18 64 256 512 1024 1400 4000 8000 16000 32000"
iperf3 -s -B 127.0.0.1 -p "$port" >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
sleep 0.5
host="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), Linux $(uname -r), iperf3 $(iperf3 --version | head -1 | cut -d' ' -f2) -u -b 0, loopback"
out=$here/iperf3-loopback.csv
echo 'Message Size (bytes),Messages,Elapsed Time (sec),Throughput (Mbit/s),Lost (%),Path,Host,Load' >"$out"
for rep in 1 2 3; do
  for s in $sizes; do
    json=$(iperf3 -c 127.0.0.1 -p "$port" -u -b 0 -l "$s" -t 1 -J)
    echo "$json" | /usr/bin/python3 -c '
import json, sys
e = json.load(sys.stdin)["end"]["sum"]
s, host, load = int(sys.argv[1]), sys.argv[2], sys.argv[3]
mbps = e["packets"] * s * 8 / e["seconds"] / 1e6
print("%d,%d,%.3f,%.3f,%.1f,loopback,\"%s\",%s" % (s, e["packets"], e["seconds"], mbps, e["lost_percent"], host, load))
' "$s" "$host" "$(cut -d' ' -f1 /proc/loadavg)" >>"$out"
  done
done
echo "wrote $out"
