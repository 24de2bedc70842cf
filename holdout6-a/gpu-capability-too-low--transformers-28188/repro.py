import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

# Configs
device = "cuda:7"
model_name = "openchat/openchat_3.5"
model = AutoModelForCausalLM.from_pretrained(model_name, device_map=device, load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, 
                                             bnb_4bit_compute_dtype=torch.bfloat16, attn_implementation="flash_attention_2")
tokenizer = AutoTokenizer.from_pretrained(model_name, padding_side='left')

