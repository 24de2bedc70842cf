from langchain.llms import VLLM
llm = VLLM(
    model=GENERATE_MODEL_NAME,
    trust_remote_code=True,  # mandatory for hf models
    max_new_tokens=max_new_tokens,
    top_k=10,
    top_p=0.95,
    temperature=0.8,
    # dtype="half",
    vllm_kwargs={"quantization": "awq"}
)
