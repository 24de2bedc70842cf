https://raw.githubusercontent.com/sgl-project/sglang/refs/tags/v0.5.18/benchmark/mmlu/bench_sglang.py

# Ignore if you want to run triton kernels
export GDN_USE_MEGA_GDN=1

python -m sglang.launch_server --model-path Qwen/Qwen3.5-0.8B --port 30000

# TODO: add code that checks if the server is up

# Test meganGDN-pto kernel
python3 bench_sglang.py --nsub 10
