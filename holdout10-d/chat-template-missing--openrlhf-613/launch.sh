read -r -d '' training_commands <<EOF
openrlhf.cli.train_sft \
   --max_len 8192 \
   --dataset json@/home/xxx/dataset/
   --input_key messages \
   --apply_chat_template \
   --pretrain /home/xxx/models/Meta-Llama-3.1-8B \
   --load_checkpoint \
   --gradient_checkpointing 
EOF

deepspeed --module $training_commands
