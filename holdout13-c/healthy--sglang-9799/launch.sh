python3 -m sglang.launch_server --model-path ./q14 --port 8080 --host 0.0.0.0 --tool-call-parser qwen25 --tp 2
