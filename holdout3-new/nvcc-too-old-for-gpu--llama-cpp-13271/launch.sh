cmake -DGGML_CUDA=ON -DLLAMA_CURL=OFF .. 
cmake --build . --config Release -j 30
