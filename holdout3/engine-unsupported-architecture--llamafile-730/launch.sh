1. wget https://huggingface.co/ibm-research/granite-3.2-8b-instruct-GGUF/resolve/main/granite-3.2-8b-instruct-Q6_K.gguf
2. llamafile -convert granite-3.2-8b-instruct-Q6_K.gguf
3. chmod +x granite-3.2-8b-instruct-Q6_K.llamafile
4. ./granite-3.2-8b-instruct-Q6_K.llamafile
