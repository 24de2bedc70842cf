`from vllm import LLM

llm = LLM(model='baichuan-inc/Baichuan-13B-Chat', trust_remote_code=True)  # Name or path of your model
output = llm.generate("Hello, my name is")
print(output)`
