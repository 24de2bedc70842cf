model,tokenizer = load("mistralai/Mistral-7B-Instruct-v0.2")
