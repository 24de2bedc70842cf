import os
os.environ["CUDA_VISIBLE_DEVICES"] = "1,2"

from transformers.utils import (
    is_torch_bf16_gpu_available,
    is_torch_cuda_available,
    is_torch_mps_available,
    is_torch_npu_available,
    is_torch_xpu_available,
)
is_torch_cuda_available()

from vllm import LLM, SamplingParams

prompts = [
    "Hello, my name is",
    "Hello, my name is",
    "Hello, my name is"
]

sampling_params = SamplingParams(temperature=0.8, top_p=0.95)

llm = LLM(model="/localnvme/application/sc_new/USER/original_weight/llama-3-8b", tensor_parallel_size=2)

outputs = llm.generate(prompts, sampling_params)
for output in outputs:
    prompt = output.prompt
    generated_text = output.outputs[0].text
    print(f"Prompt: {prompt!r}, Generated text: {generated_text!r}")
