FORCE_TORCHRUN=1 NNODES=2 RANK=0 MASTER_ADDR=MASTER_IP MASTER_PORT=29500 llamafactory-cli train examples/train_lora/llama3_lora_sft.yaml
FORCE_TORCHRUN=1 NNODES=2 RANK=1 MASTER_ADDR=MASTER_IP MASTER_PORT=29500 llamafactory-cli train examples/train_lora/llama3_lora_sft.yaml
