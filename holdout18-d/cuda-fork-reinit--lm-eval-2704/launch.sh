python -m lm_eval --model=vllm \
     --model_args=pretrained=meta-llama/Meta-Llama-3-8B,tensor_parallel_size=2,gpu_memory_utilization=0.75,enforce_eager=True,trust_remote_code=True,max_gen_toks=256 \
     --tasks=lambada_openai,hellaswag \
     --batch_size=4 \
     --output_path=./outputs
