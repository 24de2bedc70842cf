import litellm 

messages = [
    [{"role": "user", "content": "Who are you?"}],
]

print("Running")
response = litellm.completion(
            model="vllm/deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct", # add a vllm prefix so litellm knows the custom_llm_provider==vllm
            messages=messages,
            temperature=0.2,
            max_tokens=80
)

print("Output")
print(response)
