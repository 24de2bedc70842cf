#!/bin/bash
#sbatch --nodes=1
#SBATCH --ntasks-per-node=8
#SBATCH --ntasks=8
#SBATCH --mem=100G
#SBATCH --cpus-per-task=8
#SBATCH --time=48:00:00
#SBATCH --gpus-per-task=1
#SBATCH --job-name=mace_distr

export NUMEXPR_MAX_THREADS=$SLURM_CPUS_PER_TASK

srun mace_run_train --distributed \ #other parameters

