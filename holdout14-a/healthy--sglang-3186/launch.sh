python3 -m sglang.launch_server --model-path unsloth/Meta-Llama-3.1-8B-Instruct --host 0.0.0.0 --port 8000
