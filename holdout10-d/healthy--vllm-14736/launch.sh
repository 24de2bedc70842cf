vllm serve "DeepSeek-R1-Distill-Qwen-14B-Int8-W8A16" --max-model-len 8192 --host 0.0.0.0 --port 8015 --disable-log-requests  --max_num_seqs=12 --max_num_batched_tokens=256  -tp=2
