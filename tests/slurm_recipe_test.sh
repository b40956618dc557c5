#!/usr/bin/env bash
# The README's Slurm and GNU parallel recipes (scripts/slurm-local.sh) on an
# experiment that is not shipped: written here, in a temporary directory,
# with a name other than its file's, so that nothing can lean on the
# shipped sweep's file or result names. Skipped (77) as the script skips.
#
#   tests/slurm_recipe_test.sh SOURCE_DIR
set -uo pipefail
src=$1
d=$(mktemp -d /tmp/simloop-recipe-test.XXXXXX)
trap 'rm -rf "$d"' EXIT
cat > "$d/my-sweep.yaml" << 'YAML'
# Not a shipped experiment: 3 payloads x 2 alignment policies.
name: recipe-check
machine: athlon-xp-2700
stack: freebsd6
workload: {payload: 18, packets: 4000, dest: broadcast}
options: {align: none, copy: m_dup}
seed: 3
sweep:
  grid:
    options.align: [none, copy-down]
    workload.payload: [18, 200, 1000]
YAML
bash "$src/scripts/slurm-local.sh" --experiment "$d/my-sweep.yaml"
