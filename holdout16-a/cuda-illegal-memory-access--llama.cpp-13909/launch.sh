./llama.cpp/llama-cli  \
    -hf unsloth/DeepSeek-R1-0528-GGUF:IQ1_S  \
    --threads -1  \
    --n-gpu-layers 99 \
     --prio 3 \
     --temp 0.6  \
    --top_p 0.95  \
    --min_p 0.01  \
    --ctx-size 16384  \
     --seed 3407
