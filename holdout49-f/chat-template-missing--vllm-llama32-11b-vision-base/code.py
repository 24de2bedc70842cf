from vllm import LLM
from transformers import AutoProcessor

model = "meta-llama/Llama-3.2-11B-Vision"
llm = LLM(
    model=model,
    max_model_len=8192,
    gpu_memory_utilization=0.7,
    tensor_parallel_size=2,
)

processor = AutoProcessor.from_pretrained(model)

prompt = "what breed of dog is in this image?"

messages = (
    {
        "role": "user",
        "content": [
            {
                "type": "image",
                "path": "root/data/dog.png",
            },
            {"type": "text", "text": prompt},
        ],
    },
)

print("template ", llm.get_tokenizer().chat_template)
