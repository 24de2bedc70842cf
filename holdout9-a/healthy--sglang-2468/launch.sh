python -m sglang.launch_server --model-path mistralai/Mistral-7B-Instruct-v0.1 \
--port 30000 --host 0.0.0.0
