#!/bin/bash
# Merges the shards of deploy/slurm/ttl-array.sh (see there for how to submit both).
#SBATCH --job-name=lockbench-merge
#SBATCH --time=00:10:00
set -euo pipefail
: "${RUN_ID:?set RUN_ID}"
: "${RESULTS:?set RESULTS}"
exec lockbench merge "$RESULTS/$RUN_ID"/shard-* --out "$RESULTS/$RUN_ID/merged"
