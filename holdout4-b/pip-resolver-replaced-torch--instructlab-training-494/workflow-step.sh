CMAKE_ARGS="-DLLAMA_CUDA=on" python3.11 -m pip install .
