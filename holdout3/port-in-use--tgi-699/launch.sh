text-generation-launcher --model-id mosaicml/mpt-30b-instruct --max-input-length 2048 --max-total-tokens 3072 --quantize bitsandbytes --num-shard 4 --port 8888
