from vllm import LLM, SamplingParams

llm = LLM(
    model="/Models/deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
    tensor_parallel_size=2,  # 2 张 GPU 处理张量并行
    pipeline_parallel_size=2,  # 2 张 GPU 处理管道并行
    dtype="bfloat16",
    disable_ray=True
)

# 采样参数
sampling_params = SamplingParams(temperature=0.7, top_p=0.9)

# 生成测试文本
prompts = ["你好，大语言模型是什么？"]
outputs = llm.generate(prompts, sampling_params)

# 输出结果
for output in outputs:
    print(f"Prompt: {output.prompt}\nGenerated text: {output.outputs[0].text}")
