import mlx.core as mx
from mlx_vlm import load, generate

import os
from pathlib import Path


model_path = "mlx-community/Phi-3.5-vision-instruct-4bit"
model, processor = load(model_path)

prompt = processor.tokenizer.apply_chat_template(
    [{"role": "user", "content": f"<|image_1|>\nProvide a formal caption and keywords for this image"}],
    tokenize=False,
    add_generation_prompt=True,
    trust_remote_code=True
)

pic = "xxx.png"

output = generate(model, processor, pic, prompt, max_tokens=200, verbose=True)

print(output)
