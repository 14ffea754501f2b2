#!/bin/bash
# The same run as deploy/kubernetes/ttl-job.yaml as a Slurm job array: task I is shard I of 8
# (lockbench reads SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT). Submit
# it, then the merge once every task succeeded:
#
#   RUN_ID=billing-$(date +%Y%m%d-%H%M) RESULTS=/shared/lockbench
#   job=$(sbatch --parsable --export=ALL,RUN_ID=$RUN_ID,RESULTS=$RESULTS deploy/slurm/ttl-array.sh)
#   sbatch --dependency=afterok:$job --export=ALL,RUN_ID=$RUN_ID,RESULTS=$RESULTS deploy/slurm/merge.sh
#
#SBATCH --job-name=lockbench-ttl
#SBATCH --array=0-7
#SBATCH --cpus-per-task=2
#SBATCH --mem=1G
#SBATCH --time=00:30:00
set -euo pipefail
: "${RUN_ID:?set RUN_ID, the same for every task of this run}"
: "${RESULTS:?set RESULTS, a directory every node can write}"
exec lockbench ttl workloads/specs/billing.toml --target-scale 10 --current-ttl 300s \
    --replays 1000000 --seed 2026 --run-id "$RUN_ID" \
    --out "$RESULTS/$RUN_ID/shard-$SLURM_ARRAY_TASK_ID"
