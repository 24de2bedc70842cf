docker run --name Qwen2.5-VL-7B-Instruct \
    --runtime nvidia \
    --gpus '"device=0"' \
    -v /path/to/cache:/path/to/cache \
    -p 8082:8082 \
    vllm/vllm-openai:v0.7.1 \
    --model "Qwen/Qwen2.5-VL-7B-Instruct" \
    --port 8082 \
    --gpu_memory_utilization 0.9 \
    --max_model_len 6144 \
    --tensor_parallel_size 1 \
    --api-key token-placeholder \
    --download-dir /path/to/cache
