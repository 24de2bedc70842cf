from tensorrt_llm import LLM
m = LLM("Qwen/Qwen3-30B-A3B-Instruct-2507-FP8")
