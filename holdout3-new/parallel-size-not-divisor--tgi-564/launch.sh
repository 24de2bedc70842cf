docker run --gpus all -it -v /home/ubuntu/text-generation-inference/data:/data text-generation-inference --model-id bigscience/bloom-560m --num-shard 3
