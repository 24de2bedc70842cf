lmdeploy serve api_server Qwen/Qwen2.5-7B-Instruct --enable-metrics
