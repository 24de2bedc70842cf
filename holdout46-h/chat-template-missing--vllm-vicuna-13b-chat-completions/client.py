import openai
openai.api_key = 'REDACTED'  # Your API key here
openai.api_type = 'REDACTED'
openai.api_base = 'http://localhost:8000/v1'  # Your API base here
openai.api_type = 'open_ai'  # Your API base here
completion = openai.ChatCompletion.create(
  model="model/vicuna-13b-v1.5",
  messages=[
    {"role": "user", "content": "Hello!"}
  ]
)

print(completion.choices[0].message)
