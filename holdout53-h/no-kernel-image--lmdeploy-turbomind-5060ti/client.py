from openai import OpenAI

client = OpenAI(base_url="http://localhost:23333/v1/",api_key="REDACTED") # lmdeploy

chat_completion = client.chat.completions.create(
    messages=[{"role":"user","content":"你好，请介绍下你自己。"}],model="/home/REDACTED/model/Qwen/Qwen3-0.6B"
)
print(chat_completion.choices[0])
