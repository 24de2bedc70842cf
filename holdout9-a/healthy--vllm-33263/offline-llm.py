from vllm import LLM, SamplingParams
llm = LLM(
    model="Qwen/Qwen3-1.7B",
    max_num_seqs=1,
    max_model_len=1024,
)
