CUDA_LAUNCH_BLOCKING=1 \
python3 -m sglang.launch_server \
--host 127.0.0.1 --port 8000 \
--model openai/gpt-oss-120b \
--kv-cache-dtype fp8_e4m3 \
--tensor-parallel-size 2 \
--disable-radix-cache \
--mem-fraction-static 0.95 \
--max-running-requests 512
