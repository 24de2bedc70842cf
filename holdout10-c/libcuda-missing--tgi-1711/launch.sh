text-generation-launcher --model-id TheBloke/OpenHermes-2.5-Mistral-7B-GPTQ --quantize gptq
