VLLM_USE_MODELSCOPE=True python -m vllm.entrypoints.openai.api_server --model="baichuan-inc/Baichuan2-13B-Chat" --download-dir="/root/autodl-tmp/model/"  --revision='v1.0.3' --trust-remote-code 
