#!/usr/bin/env bash
# GPU discovery script for spark.{worker,executor,driver}.resource.gpu.discoveryScript.
# Prints the Spark resource JSON, e.g. {"name": "gpu", "addresses": ["0","1"]}; without a GPU
# (or without nvidia-smi) the address list is empty. Honours CUDA_VISIBLE_DEVICES when it holds
# ordinals, so an executor that was given a subset reports only those.
set -u

addresses=()
if command -v nvidia-smi >/dev/null 2>&1; then
  while IFS= read -r index; do
    index="${index//[[:space:]]/}"
    [[ "$index" =~ ^[0-9]+$ ]] && addresses+=("$index")
  done < <(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null)
fi

if [[ -n "${CUDA_VISIBLE_DEVICES:-}" && "${CUDA_VISIBLE_DEVICES}" =~ ^[0-9,]+$ ]]; then
  IFS=',' read -r -a visible <<< "${CUDA_VISIBLE_DEVICES}"
  kept=()
  for a in "${addresses[@]}"; do
    for v in "${visible[@]}"; do
      [[ "$a" == "$v" ]] && kept+=("$a")
    done
  done
  addresses=("${kept[@]}")
fi

json=""
for a in "${addresses[@]}"; do
  json+="${json:+,}\"$a\""
done
echo "{\"name\": \"gpu\", \"addresses\": [${json}]}"
