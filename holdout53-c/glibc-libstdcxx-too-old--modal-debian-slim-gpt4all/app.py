import modal

def download_model():
    import gpt4all
    print("Initializing ORCA Minig....")
    #you can use any model from https://gpt4all.io/models/models2.json
    model = gpt4all.GPT4All("mistral-7b-openorca.Q4_0.gguf")
    return model

image=modal.Image.debian_slim().pip_install("gpt4all").run_function(download_model)
stub = modal.Stub("gpt4all", image=image)
@stub.cls(keep_warm=1)
class GPT4AllChat:
    def __enter__(self):
        print("Downloading model")
        self.gptj = download_model()
        print("Loaded model")

    @modal.method()
    def generate(self):
        messages = [{"role": "user", "content": "Name 3 colors"}]
        completion = self.gptj.chat_completion(messages)
        print(f"Completion: {completion}")

@stub.local_entrypoint()
def main_old():
    model = GPT4AllChat()
    for i in range(10):
        model.generate.remote()
